"""Binary PBM (``P4``) map loading with validation, and libfastsim's view of the pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

_WHITESPACE = b" \t\r\n\v\f"


class MapFormatError(ValueError):
    """A map file that is not a square binary PBM whose width is a multiple of 8."""


def _header_tokens(raw: bytes, path: str | Path) -> tuple[list[bytes], int]:
    """The magic, width and height tokens of a PBM header and the offset of the pixel data."""
    tokens: list[bytes] = []
    pos = 0
    while len(tokens) < 3:
        while pos < len(raw) and raw[pos] in _WHITESPACE:
            pos += 1
        if pos < len(raw) and raw[pos : pos + 1] == b"#":
            end = raw.find(b"\n", pos)
            pos = len(raw) if end < 0 else end + 1
            continue
        start = pos
        while pos < len(raw) and raw[pos] not in _WHITESPACE and raw[pos : pos + 1] != b"#":
            pos += 1
        if start == pos:
            raise MapFormatError(f"{path}: truncated PBM header (found {len(tokens)} of magic, width, height)")
        tokens.append(raw[start:pos])
        if tokens[0] != b"P4":
            raise MapFormatError(f"{path}: bad magic {tokens[0][:8]!r}; a fastsim map must be a binary PBM ('P4')")
    # exactly one whitespace character separates the header from the pixel data
    return tokens, pos + 1


def load_pbm(path: str | Path) -> np.ndarray:
    """The obstacle mask (``bool[height, width]``, True = black = obstacle) of a binary PBM file.

    Raises ``MapFormatError`` for a bad magic number, a non-square map, a width that is not a multiple
    of 8 (libfastsim's reader needs whole bytes per row) or a truncated file; ``FileNotFoundError`` when
    the file is missing.
    """
    return parse_pbm(Path(path).read_bytes(), path)


def parse_pbm(raw: bytes, path: str | Path) -> np.ndarray:
    """``load_pbm`` of a file's bytes; ``path`` names the file in errors."""
    tokens, offset = _header_tokens(raw, path)
    try:
        width, height = int(tokens[1]), int(tokens[2])
    except ValueError:
        raise MapFormatError(f"{path}: width/height {tokens[1]!r} x {tokens[2]!r} are not integers") from None
    if width <= 0 or height <= 0:
        raise MapFormatError(f"{path}: map size {width}x{height} must be positive")
    if width != height:
        raise MapFormatError(f"{path}: map is {width}x{height}; fastsim maps must be square")
    if width % 8:
        raise MapFormatError(f"{path}: width {width} is not a multiple of 8, as libfastsim's reader requires")
    expected = width * height // 8
    data = raw[offset : offset + expected]
    if len(data) < expected:
        raise MapFormatError(f"{path}: truncated pixel data: {len(data)} of {expected} bytes")
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    return bits.reshape(height, width).astype(bool)


def physics_pixels(obstacles: np.ndarray) -> np.ndarray:
    """The flat ``uint8`` pixel array libfastsim's physics sees (1 = obstacle, row-major).

    libfastsim's reader skips the file's last byte, so the last 8 pixels of the bottom row are free
    whatever the file says; the golden traces were recorded with that.
    """
    flat = obstacles.astype(np.uint8).ravel().copy()
    flat[-8:] = 0
    return flat
