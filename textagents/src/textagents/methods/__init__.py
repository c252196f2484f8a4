"""The papers' training methods (``textagents method list|run|eval``), on a shared base (``core``): configs
read from YAML and checked, run directories that survive kills and resume exactly, LLM calls recorded for
replay, checkpoints, TensorBoard and a report with plots. One folder per method."""

from textagents.methods.registry import METHOD_TABLE, METHODS, method_class

__all__ = ["METHODS", "METHOD_TABLE", "method_class"]
