"""Housekeep-Text: a symbolic simulator of Housekeep (Kant et al. 2022) over its real scenes and annotations,
with LLM-Personalize's (Han et al. 2024) command vocabulary and planner context."""
