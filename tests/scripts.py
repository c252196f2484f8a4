"""Load a repository script (a benchmark or golden-file generator, not a package module) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(relative_path: str, name: str) -> ModuleType:
    """The script at ``REPO / relative_path``, imported as module ``name`` and registered in ``sys.modules``
    (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, REPO / relative_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
