"""An episode's frames as an animated GIF (always available: imageio with Pillow) or an MP4 (needs
imageio-ffmpeg: ``pip install "textenvs[video]"``)."""

from __future__ import annotations

import importlib.util
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from textenvs.core.files import write_bytes_atomic

VIDEO_FORMATS = ("gif", "mp4")
#: Frames are enlarged (nearest neighbour, by a whole factor) until their shorter side reaches this.
MIN_SIDE = 160


def mp4_available() -> bool:
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def scale_factor(shape: Sequence[int], min_side: int = MIN_SIDE) -> int:
    """The whole factor that brings an image of ``shape`` (height, width, ...) to at least ``min_side``."""
    return max(1, math.ceil(min_side / max(1, min(shape[0], shape[1]))))


def enlarge(frames: np.ndarray, factor: int) -> np.ndarray:
    """``frames`` (one HxWx3 image or a stack of them) with every pixel repeated ``factor`` times across and down."""
    return frames if factor == 1 else np.repeat(np.repeat(frames, factor, axis=-3), factor, axis=-2)


def _checked(frames: Sequence[np.ndarray]) -> np.ndarray:
    if not frames:
        raise ValueError("no frames to write (was the env made with render_mode='rgb_array'?)")
    shapes = {np.shape(f) for f in frames}
    if len(shapes) != 1:
        raise ValueError(f"frames of different shapes {sorted(shapes)}: a video needs one size")
    stack = np.stack(frames)
    if stack.dtype != np.uint8 or stack.ndim != 4 or stack.shape[-1] != 3:
        raise ValueError(f"frames must be HxWx3 uint8 images, got {stack.dtype} of shape {stack.shape[1:]}")
    return enlarge(stack, scale_factor(stack.shape[1:]))


def write_gif(path: str | Path, frames: Sequence[np.ndarray], fps: float = 4.0) -> Path:
    """An animated GIF of ``frames`` (looping, ``fps`` frames a second). GIF encoders merge a frame identical
    to the one before it into that one (showing it twice as long), so a GIF may hold fewer images than frames
    while lasting ``len(frames) / fps`` seconds."""
    import imageio.v3 as iio

    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path = Path(path)
    data = iio.imwrite("<bytes>", _checked(frames), extension=".gif", duration=1000.0 / fps, loop=0)
    write_bytes_atomic(path, data)
    return path


def write_mp4(path: str | Path, frames: Sequence[np.ndarray], fps: float = 4.0) -> Path:
    """An H.264 MP4 of ``frames``; ``ImportError`` with the install line when imageio-ffmpeg is missing."""
    if not mp4_available():
        raise ImportError('MP4 export needs imageio-ffmpeg: pip install "textenvs[video]" (GIF needs nothing more)')
    import imageio.v3 as iio

    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path = Path(path)
    stack = _checked(frames)
    # ffmpeg writes to a named file (not to bytes): a temporary one beside the target, renamed into place
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".mp4")
    os.close(fd)
    try:
        iio.imwrite(tmp, stack, fps=fps, plugin="FFMPEG", macro_block_size=2)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_video(path: str | Path, frames: Sequence[np.ndarray], fps: float = 4.0) -> Path:
    """A GIF or an MP4 of ``frames``, by the suffix of ``path``."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in VIDEO_FORMATS:
        raise ValueError(f"unknown video format {suffix!r} of {path}; valid: {', '.join(VIDEO_FORMATS)}")
    return (write_gif if suffix == "gif" else write_mp4)(path, frames, fps)
