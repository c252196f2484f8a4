"""A run's TensorBoard log without torch: the same events as torch's ``SummaryWriter``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto.event_pb2 import Event

from textagents.methods.core.tensorboard import ScalarWriter


def events(folder: Path) -> list[str]:
    """Every event of the folder's one event file as written, its wall time cleared."""
    (path,) = folder.glob("events.out.tfevents.*")
    loaded = [Event.FromString(record) for record in RawEventFileLoader(str(path)).Load()]
    for event in loaded:
        event.wall_time = 0
    return [str(event) for event in loaded]


def test_scalar_writer_writes_the_events_of_torchs_summary_writer(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    scalars = [("train/return", 1.5, 3), ("eval/success", np.float32(0.25), 3), ("train/frames", 64, 4)]
    for writer in (
        SummaryWriter(str(tmp_path / "torch"), purge_step=3),
        ScalarWriter(tmp_path / "ours", purge_step=3),
    ):
        for tag, value, step in scalars:
            writer.add_scalar(tag, value, step)
        writer.flush()
        writer.close()
    ours = events(tmp_path / "ours")
    assert ours == events(tmp_path / "torch")
    assert len(ours) == 1 + 2 + len(scalars)  # file version, the purge step's two events, one per scalar
    assert 'tag: "eval/success"' in ours[4] and "simple_value: 0.25" in ours[4]


def test_without_a_purge_step_only_the_scalars_follow_the_file_version(tmp_path):
    writer = ScalarWriter(tmp_path)
    writer.add_scalar("train/loss", 0.5, 1)
    writer.close()
    written = events(tmp_path)
    assert len(written) == 2 and 'file_version: "brain.Event:2"' in written[0] and "step: 1" in written[1]
