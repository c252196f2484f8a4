"""Writing the viewer's static site, one episode at a time (its frames are not kept once written)::

index.html                              the episodes, with filters
episodes/<agent>/<env>/<seed>.html      one page per episode
frames/<agent>/<env>/<seed>/<state>.png the kept frames
videos/<agent>/<env>/<seed>.gif|.mp4    the episode as a video, when asked for
"""

from __future__ import annotations

import io
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import quote

import numpy as np
from PIL import Image as PILImage

from textenvs.core.files import write_bytes_atomic
from textenvs.viewer.html import EpisodeView, Image, episode_page, index_page
from textenvs.viewer.video import VIDEO_FORMATS, mp4_available, scale_factor, write_video

INDEX = "index.html"


def _folder_name(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name)
    return safe if safe.strip(".") else "_"


def _href(page: str, target: str) -> str:
    """The address of ``target`` from ``page`` (both relative to the site's root), each part URL-quoted."""
    relative = posixpath.relpath(target, posixpath.dirname(page) or ".")
    return "/".join(quote(part) for part in relative.split("/"))


def _png(frame: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    PILImage.fromarray(frame).save(buffer, format="PNG")
    return buffer.getvalue()


class SiteWriter:
    """Writes the site into ``out``: ``add`` each episode, then ``finish`` writes the index. ``videos`` names
    the video formats to export per episode with frames (``"gif"``, ``"mp4"``), at ``fps`` frames a second."""

    def __init__(self, out: str | Path, *, videos: Sequence[str] = (), fps: float = 4.0):
        unknown = sorted(set(videos) - set(VIDEO_FORMATS))
        if unknown:
            raise ValueError(f"unknown video format(s) {unknown}; valid: {', '.join(VIDEO_FORMATS)}")
        if "mp4" in videos and not mp4_available():
            raise ImportError('MP4 export needs imageio-ffmpeg: pip install "textenvs[video]" (GIF needs nothing more)')
        if fps <= 0:
            raise ValueError(f"fps must be > 0, got {fps}")
        self.out = Path(out)
        self.videos = tuple(dict.fromkeys(videos))
        self.fps = fps
        self.episodes: list[tuple[EpisodeView, str]] = []
        self._pages: set[str] = set()

    def _write(self, relative: str, data: bytes) -> None:
        path = self.out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)

    def add(self, view: EpisodeView) -> dict[str, Path]:
        """Write the episode's frames, videos and page; return the paths of the page (``"html"``) and of each
        video (by format)."""
        parts = f"{_folder_name(view.agent)}/{_folder_name(view.env)}"
        name = "episode" if view.seed is None else str(view.seed)
        page = f"episodes/{parts}/{name}.html"
        if page in self._pages:
            raise ValueError(f"two episodes of the site would share the page {page} ({view.agent}, {view.env})")
        images = {}
        for state, frame in sorted(view.frames.items()):
            target = f"frames/{parts}/{name}/{state:05d}.png"
            self._write(target, _png(frame))
            factor = scale_factor(frame.shape)
            images[state] = Image(_href(page, target), frame.shape[1] * factor, frame.shape[0] * factor)
        written = {}
        for suffix in self.videos if view.frames else ():
            target = self.out / f"videos/{parts}/{name}.{suffix}"
            target.parent.mkdir(parents=True, exist_ok=True)
            written[suffix] = write_video(target, [view.frames[s] for s in sorted(view.frames)], self.fps)
        videos = [_href(page, path.relative_to(self.out).as_posix()) for path in written.values()]
        self._write(page, episode_page(view, images, videos, _href(page, INDEX)).encode())
        view.frames = {}
        self.episodes.append((view, page))
        self._pages.add(page)
        return {"html": self.out / page, **written}

    def finish(self, title: str, intro: str = "") -> Path:
        """Write ``index.html`` over the episodes added; return its path."""
        rows = [(view, _href(INDEX, page)) for view, page in self.episodes]
        self._write(INDEX, index_page(title, rows, intro).encode())
        return self.out / INDEX
