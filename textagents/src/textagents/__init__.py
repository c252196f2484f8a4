"""textagents: agents, LLM backends and training methods for textenvs environments."""

__version__ = "0.1.0"
