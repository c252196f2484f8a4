"""LLM-Personalize (Han et al. 2024) on Housekeep-Text: the planner (``planner.py``, ``plan_parser.py``), the
paper's demonstrations (``demonstrations.py``), fine-tuning with trl (``finetune.py``) and the method that
chains zero-shot evaluation, imitation and reinforced self-training (``method.py``, ``config.py``)."""
