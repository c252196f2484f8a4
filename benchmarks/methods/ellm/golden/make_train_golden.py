"""Golden training numbers of the ``ellm`` method as it was before its speed work (commit 77016ee), for
tests/textagents/methods/test_ellm_train_golden.py: the speed-ups must leave training unchanged.

``record`` trains a small ``ellm`` run (SimpleOracle goals, pixels + the caption's embedding as cpu.yaml, the
defaults' 84x84x4 frames, 139 actions, shared-encoder target and episode-first replay; ``SETTINGS`` shrinks the
rest) on one torch thread and returns every action it took, every update's loss, the online and target
networks' Q values on two stored observations, and the sum and sum of squares of every tensor of both
networks. The test runs ``record`` on the code of the checkout and compares. Made with the code of 77016ee:

    git worktree add --detach /tmp/ellm-base 77016ee
    PYTHONPATH=/tmp/ellm-base/textenvs/src:/tmp/ellm-base/textagents/src \\
        python benchmarks/methods/ellm/golden/make_train_golden.py
    git worktree remove /tmp/ellm-base
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

BASE_COMMIT = "77016ee"
OUT = Path(__file__).resolve().parents[4] / "tests" / "textagents" / "methods" / "golden" / "ellm_train.json"
#: Two iterations of 300 frames; learning from frame 100 once an episode has ended, a batch of 8 every 4 frames,
#: the target's heads synced every 60 frames, ε down to 0.01 by frame 200 so that most actions are greedy.
SETTINGS: dict[str, Any] = {
    "goal_source": "oracle",
    "language_state": True,
    "seed": 3,
    "frames_per_iteration": 300,
    "learning_starts": 100,
    "batch_size": 8,
    "buffer_size": 1000,
    "target_update_every": 60,
    "epsilon_frames": 200,
    "hidden": 32,
}
ITERATIONS = 2
PROBES = 2  # stored observations whose Q values are recorded


def record(settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Train ``SETTINGS`` (updated by ``settings``) for ``ITERATIONS`` and return what the test compares."""
    import torch

    from textagents.methods.core.config import config_from_dict
    from textagents.methods.core.method import RunContext
    from textagents.methods.ellm.config import EllmConfig
    from textagents.methods.ellm.method import EllmMethod

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the kernels' summation order depends on the thread count
    try:
        config = config_from_dict(EllmConfig, {**SETTINGS, **(settings or {})}, "golden")
        with tempfile.TemporaryDirectory() as run_dir:
            method = EllmMethod(config, RunContext(Path(run_dir), lambda: None))
            agent, actions = method.agent, []
            act = agent.act

            def recorded_act(*args: Any, **kwargs: Any) -> int:
                actions.append(act(*args, **kwargs))
                return actions[-1]

            agent.act = recorded_act
            for iteration in range(1, ITERATIONS + 1):
                method.train_iteration(iteration)
            method.close()
        frames = torch.as_tensor(agent.replay.frames[:PROBES])
        texts = torch.as_tensor(agent.replay.texts[:PROBES])
        with torch.no_grad():
            q = {"online": agent.online(frames, texts).tolist(), "target": agent.target(frames, texts).tolist()}
        tensors = {
            name: [float(value.double().sum()), float(value.double().square().sum())]
            for name, value in agent.tensors().items()
        }
        return {"actions": actions, "losses": agent.losses, "q": q, "tensors": tensors}
    finally:
        torch.set_num_threads(threads)


def main() -> None:
    from textagents.bench.store import write_json_atomic

    write_json_atomic(OUT, {"commit": BASE_COMMIT, "settings": SETTINGS, "iterations": ITERATIONS, **record()})
    print(OUT)


if __name__ == "__main__":
    main()
