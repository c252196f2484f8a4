"""LLM backends behind one interface (``generate``, ``chat``, ``score``), a response cache and token accounting.

The transformers backend and the server import torch/transformers; import them from their modules
(``textagents.llm.transformers_backend``, ``textagents.llm.server``) so that this package stays light.
"""

from textagents.llm.accounting import TokenUsage
from textagents.llm.base import LLMBackend, Sampling
from textagents.llm.cache import CachedBackend, ResponseCache
from textagents.llm.openai_backend import LLMRequestError, OpenAIBackend

__all__ = ["CachedBackend", "LLMBackend", "LLMRequestError", "OpenAIBackend", "ResponseCache", "Sampling", "TokenUsage"]
