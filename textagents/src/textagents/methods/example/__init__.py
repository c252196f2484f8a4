"""The template method: the smallest thing with every part a paper's method has (see ``method.py``)."""
