"""LLM-Personalize (Han et al. 2024) on Housekeep-Text: the planner's parser and the imitation-learning
demonstrations so far; the training loop (imitation, reinforced self-training) is being built on
``textagents.methods.core``."""
