"""Safe loaders for files that need more than ``open``: YAML (suites, configs, dataset cards, Housekeep scenes),
bounded in size, and object-array ``.npy``."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np
import yaml

from textenvs.data.assets import ASSETS
from textenvs.data.locate import normalised_name, read_asset

_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: The largest YAML document read, far above any real suite, config, card or scene file (66 KB at most).
MAX_YAML_BYTES = 1 << 20
#: The largest a YAML document may grow once its aliases are expanded, in about characters (a scalar counts
#: its length + 1, a collection 1 + its items): a few hundred bytes of nested aliases ("billion laughs") would
#: otherwise expand to billions of values that type checks, messages and dumps walk.
MAX_YAML_EXPANDED = 2 * MAX_YAML_BYTES
_TOO_LARGE = f"larger than {MAX_YAML_BYTES:,} bytes, the most a YAML document may hold here"

T = TypeVar("T")


class YAMLInputError(ValueError):
    """YAML that is not read: not valid YAML, larger than ``MAX_YAML_BYTES``, or whose aliases expand past
    ``MAX_YAML_EXPANDED``; the message names the document."""


class SceneLoader(_SafeBase):
    """``yaml.SafeLoader`` plus the one Python tag Housekeep scene files use: ``!!python/tuple``."""


def _construct_tuple(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> tuple[Any, ...]:
    return tuple(loader.construct_sequence(node, deep=True))


SceneLoader.add_constructor("tag:yaml.org,2002:python/tuple", _construct_tuple)


def read_yaml_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a YAML file; a ``YAMLInputError`` past ``MAX_YAML_BYTES``, without reading further."""
    with open(path, "rb") as stream:
        data = stream.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise YAMLInputError(f"{os.fspath(path)}: {_TOO_LARGE}")
    return data


def parse_yaml(data: str | bytes, where: str, loader: type = _SafeBase) -> Any:
    """One YAML document read with ``loader``, a safe loader (the C one where there is one): no Python object
    is built. A ``YAMLInputError`` naming ``where`` when the document is not valid YAML, is larger than
    ``MAX_YAML_BYTES`` or its aliases expand it past ``MAX_YAML_EXPANDED``."""
    document = _as_input_error(lambda: data.encode() if isinstance(data, str) else data, where)
    if len(document) > MAX_YAML_BYTES:
        raise YAMLInputError(f"{where}: {_TOO_LARGE}")
    parser = loader(document)
    try:
        root = _as_input_error(parser.get_single_node, where)
        if root is None:
            return None
        _check_expansion(root, where)
        return _as_input_error(lambda: parser.construct_document(root), where)
    finally:
        parser.dispose()


def read_yaml(path: str | os.PathLike[str], loader: type = _SafeBase) -> Any:
    """``parse_yaml`` of a file, named by its path in errors."""
    return parse_yaml(read_yaml_bytes(path), os.fspath(path), loader)


def _as_input_error(step: Callable[[], T], where: str) -> T:
    """``step()``, a step of reading YAML, its errors raised as a ``YAMLInputError``. A ``ValueError`` is text
    that is not UTF-8 (a lone surrogate) or a value Python cannot hold: an int of more than 4,300 digits, a date
    such as 2024-13-01."""
    try:
        return step()
    except (yaml.YAMLError, ValueError) as error:
        raise YAMLInputError(f"{where}: not valid YAML: {error}") from error


def _children(node: yaml.Node) -> Iterable[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return node.value
    return ()


def _check_expansion(root: yaml.Node, where: str) -> None:
    """Refuse a node graph whose expanded size passes ``MAX_YAML_EXPANDED``, or that contains itself.

    Each node's size is computed once however many aliases name it (a depth-first walk without recursion),
    so the check costs as much as the document is long.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the path from the root: an alias to one of these is inside what it names
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, items_sized = stack.pop()
        if items_sized:
            open_nodes.discard(id(node))
            own = len(node.value) + 1 if isinstance(node, yaml.ScalarNode) else 1
            sizes[id(node)] = own + sum(sizes[id(item)] for item in _children(node))
            if sizes[id(node)] > MAX_YAML_EXPANDED:
                raise YAMLInputError(
                    f"{where}: refusing YAML whose aliases expand it past {MAX_YAML_EXPANDED:,} characters"
                )
        elif id(node) in open_nodes:
            raise YAMLInputError(f"{where}: refusing YAML with an alias inside the value it names (endless)")
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((item, False) for item in _children(node))


def load_yaml(source: str | os.PathLike[str] | bytes) -> Any:
    """Parse a YAML file, or its bytes (``read_asset``'s), with ``parse_yaml``'s limits; ``!!python/tuple``
    becomes a tuple, every other Python tag is refused (``YAMLInputError``)."""
    if isinstance(source, bytes):
        return parse_yaml(source, "YAML data", SceneLoader)  # trusted: SceneLoader is a SafeLoader (tuples only)
    return read_yaml(source, SceneLoader)  # trusted: SceneLoader is a SafeLoader (tuples only)


def load_npy(
    name: str,
    *,
    allow_pickle: bool = False,  # trusted: honoured only for files pinned in ASSETS, after their sha256 check
    data_dir: str | os.PathLike[str] | None = None,
) -> Any:
    """A ``.npy`` data file by asset name; object arrays only from files pinned in ``ASSETS``.

    The bytes parsed are the bytes ``read_asset`` checked against the table's sha256 (the file is opened
    once), so an object array is only ever read after its bytes matched.
    """
    if allow_pickle and normalised_name(name) not in ASSETS:  # trusted: the check that refuses unpinned files
        pinned = ", ".join(n for n in ASSETS if n.endswith(".npy"))
        raise ValueError(
            f"refusing to unpickle {name!r}: object arrays are only read from files whose sha256 "  # trusted: a refusal
            f"is pinned in textenvs.data.ASSETS ({pinned})"
        )
    array_bytes = io.BytesIO(read_asset(name, data_dir))
    return np.load(array_bytes, allow_pickle=allow_pickle)  # trusted: sha256-checked bytes, pinned files only
