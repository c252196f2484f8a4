"""Looking at recorded episodes: the trajectory file format, replaying it for frames (checking that it
reproduces), GIF/MP4 export and a static HTML site (``textenvs replay``, ``textagents bench view``)."""

from textenvs.viewer.html import EpisodeView
from textenvs.viewer.replay import Replay, ReplayMismatchError, frame_indices, replay
from textenvs.viewer.site import SiteWriter
from textenvs.viewer.trajectory import FORMAT, Step, Trajectory, load_trajectory, parse_trajectory, text_of
from textenvs.viewer.video import mp4_available, write_gif, write_mp4, write_video

__all__ = [
    "FORMAT",
    "EpisodeView",
    "Replay",
    "ReplayMismatchError",
    "SiteWriter",
    "Step",
    "Trajectory",
    "frame_indices",
    "load_trajectory",
    "mp4_available",
    "parse_trajectory",
    "replay",
    "text_of",
    "write_gif",
    "write_mp4",
    "write_video",
]
