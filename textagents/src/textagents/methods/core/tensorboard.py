"""A run's TensorBoard scalars, written with tensorboard's own event writer: the events
``torch.utils.tensorboard.SummaryWriter`` writes for ``add_scalar`` (``purge_step`` included), without
importing torch, which a method that trains no network never needs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


class ScalarWriter:
    """``add_scalar``, ``flush`` and ``close`` of torch's ``SummaryWriter(log_dir, purge_step=...)``: on
    opening, a file-version event and a session-start event at ``purge_step`` (TensorBoard then drops the
    events of an earlier, interrupted run from that step on); then one ``simple_value`` event per scalar."""

    def __init__(self, log_dir: str | Path, purge_step: int | None = None):
        from tensorboard.compat.proto.event_pb2 import Event, SessionLog
        from tensorboard.compat.proto.summary_pb2 import Summary
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._event, self._summary = Event, Summary
        self._writer = EventFileWriter(str(log_dir))
        if purge_step is not None:
            self._add(Event(step=purge_step, file_version="brain.Event:2"))
            self._add(Event(step=purge_step, session_log=SessionLog(status=SessionLog.START)))

    def _add(self, event: Any) -> None:
        event.wall_time = time.time()
        self._writer.add_event(event)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        summary = self._summary(value=[self._summary.Value(tag=tag, simple_value=float(value))])
        self._add(self._event(summary=summary, step=int(step)))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
