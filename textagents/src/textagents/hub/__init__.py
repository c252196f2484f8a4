"""textenvs on RL-for-LLM hubs and trainers.

- ``chat``: an episode as a chat (the first user message, one user message per observation) and the token
  segments a chat template puts between turns, so a multi-turn episode is one prompt + one completion.
- ``rollout``: plays batches of episodes turn by turn with any token generator; the model's turns are
  parsed defensively into commands (an unparsable turn reaches the env as an invalid no-op).
- ``grpo``: the ``trl`` glue: a dataset of episodes, ``TextEnvRolloutFunc`` (``GRPOTrainer``'s
  ``rollout_func``) and the reward functions that read an episode's outcome.
- ``openenv_env``: any textenvs id as an OpenEnv environment (server app, typed client); extra
  ``textagents[openenv]``.
"""
