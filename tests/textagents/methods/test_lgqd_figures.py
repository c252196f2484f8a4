"""The lgqd report's figures keep every title and legend inside the image."""

from __future__ import annotations

from matplotlib.image import imread

from textagents.methods.lgqd.deploy_stage import POLICIES
from textagents.methods.lgqd.report import EXAMPLES, _plot_examples
from textenvs.envs.fastsim.simulator import load_world


def test_trajectories_png_has_blank_margins_so_no_title_or_legend_is_clipped(data_dir, tmp_path):
    """Four policies make a two-row legend under each map: tight_layout alone cut the titles off the top."""
    world = load_world("household")
    line = [[10.0, 10.0], [40.0, 60.0], [80.0, 90.0]]
    record = {"trajectory": line, "target_bd": [80.0, 90.0]}
    cases = [[{**record, "policy": policy, "item": item} for policy in POLICIES] for item in range(EXAMPLES)]
    path = tmp_path / "trajectories.png"
    _plot_examples(world, cases, path)
    rgb = imread(path)[:, :, :3]
    edges = {"top": rgb[0], "bottom": rgb[-1], "left": rgb[:, 0], "right": rgb[:, -1]}
    drawn = {side: int((pixels < 0.99).any(axis=-1).sum()) for side, pixels in edges.items()}
    assert drawn == dict.fromkeys(edges, 0), drawn
