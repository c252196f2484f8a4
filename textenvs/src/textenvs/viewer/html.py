"""The viewer's pages as HTML text: an index of episodes with client-side filters (agent, env, outcome) and one
page per episode with every step. Pages are self-contained (inline CSS and JS, no server, no CDN); every text
from a recording is escaped, so an observation holding ``<script>`` shows as text."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any
from urllib.parse import quote

import numpy as np

from textenvs.viewer.trajectory import Step


@dataclass
class EpisodeView:
    """One episode as the viewer shows it: who played what, the steps (with the observation after the last
    one when known), the episode's outcome (None when unknown), facts shown on its page (``details``), a
    ``note`` (e.g. why it has no frames) and the frames kept, by state index (0: after ``reset``)."""

    agent: str
    env: str
    seed: int | None
    steps: list[Step]
    success: bool | None = None
    episode_return: float | None = None
    final_observation: str | dict[str, str] | None = None
    details: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    frames: dict[int, np.ndarray] = field(default_factory=dict)

    @property
    def total_return(self) -> float:
        if self.episode_return is not None:
            return self.episode_return
        return math.fsum(s.reward or 0.0 for s in self.steps)

    @property
    def outcome(self) -> bool | None:
        if self.success is not None:
            return self.success
        return self.steps[-1].success if self.steps else None

    @property
    def invalid_actions(self) -> int | None:
        flags = [s.invalid_action for s in self.steps]
        return None if any(f is None for f in flags) else sum(bool(f) for f in flags)


@dataclass(frozen=True)
class Image:
    """An image file of the site: its address relative to the page and the size to show it at."""

    src: str
    width: int
    height: int


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1f2328;background:#fff}
h1{font-size:1.4em;margin:.2em 0 .6em}h2{font-size:1.1em;margin:1.2em 0 .4em}
table{border-collapse:collapse}th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{margin:0;white-space:pre-wrap;max-width:60em;font:12px/1.35 ui-monospace,monospace}
.filters{background:#eef4ff;border:1px solid #b6cdf7;padding:8px 12px;margin:.6em 0;display:inline-block}
.filters label{margin-right:1.2em}
.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px;color:#fff;margin-right:4px}
.ok{background:#1a7f37}.bad{background:#cf222e}.unknown{background:#8c959f}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:6px 10px;display:inline-block}
img.frame,video{image-rendering:pixelated;border:1px solid #d0d7de;max-width:400px;height:auto}
tr.end td{background:#f6f8fa}.muted{color:#656d76}
.top{display:flex;gap:1.5em;align-items:flex-start;flex-wrap:wrap}
"""

INDEX_SCRIPT = """
const rows = Array.from(document.querySelectorAll('#episodes tbody tr'));
const selects = {agent: document.getElementById('f-agent'), env: document.getElementById('f-env'),
                 success: document.getElementById('f-success')};
const count = document.getElementById('count');
function apply() {
  let shown = 0;
  for (const row of rows) {
    const keep = Object.entries(selects).every(([key, s]) => s.value === '' || row.dataset[key] === s.value);
    row.hidden = !keep;
    if (keep) shown += 1;
  }
  count.textContent = shown + ' of ' + rows.length + ' episodes shown';
}
function fromHash() {
  const wanted = new URLSearchParams(location.hash.slice(1));
  for (const [key, s] of Object.entries(selects)) {
    const value = wanted.get(key) || '';
    s.value = Array.from(s.options).some(o => o.value === value) ? value : '';
  }
  apply();
}
function toHash() {
  const chosen = new URLSearchParams();
  for (const [key, s] of Object.entries(selects)) if (s.value) chosen.set(key, s.value);
  history.replaceState(null, '', '#' + chosen.toString());
  apply();
}
for (const s of Object.values(selects)) s.addEventListener('change', toHash);
window.addEventListener('hashchange', fromHash);
fromHash();
"""


def _page(title: str, body: str, script: str = "") -> str:
    tail = f"<script>{script}</script>\n" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta name="viewport" content="width=device-width">\n<title>{escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n{body}\n{tail}</body>\n</html>\n"
    )


def _text(value: Any) -> str:
    return escape(f"{value:.4g}" if isinstance(value, float) else str(value))


def _action_text(action: Any) -> str:
    return action if isinstance(action, str) else json.dumps(action)


def _outcome_badge(success: bool | None) -> str:
    if success is None:
        return '<span class="badge unknown">unknown</span>'
    return '<span class="badge ok">success</span>' if success else '<span class="badge bad">failure</span>'


def _success_key(success: bool | None) -> str:
    return "" if success is None else str(int(success))


def _select(key: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{escape(v)}">{escape(text)}</option>' for v, text in options)
    return f'<label>{label} <select id="f-{key}"><option value="">all</option>{items}</select></label>'


def index_page(title: str, episodes: Sequence[tuple[EpisodeView, str]], intro: str = "") -> str:
    """The index: ``episodes`` (each with the address of its page), per agent and env a count and success
    rate, and filters by agent, env and outcome (kept in the address's ``#agent=...&env=...&success=1``)."""
    agents = list(dict.fromkeys(view.agent for view, _ in episodes))
    envs = list(dict.fromkeys(view.env for view, _ in episodes))
    filters = (
        '<div class="filters">'
        + _select("agent", "Agent", [(a, a) for a in agents])
        + _select("env", "Env", [(e, e) for e in envs])
        + _select("success", "Outcome", [("1", "success"), ("0", "failure")])
        + '<span id="count" class="muted"></span></div>'
    )
    groups: dict[tuple[str, str], list[EpisodeView]] = {}
    for view, _ in episodes:
        groups.setdefault((view.agent, view.env), []).append(view)
    group_rows = []
    for (agent, env), views in groups.items():
        known = [v.outcome for v in views if v.outcome is not None]
        rate = f"{sum(known) / len(known):.2f}" if known else "—"
        mean_return = math.fsum(v.total_return for v in views) / len(views)
        query = escape(f"#agent={quote(agent, safe='')}&env={quote(env, safe='')}")
        group_rows.append(
            f"<tr><td>{_text(agent)}</td><td>{_text(env)}</td><td class=num>{len(views)}</td>"
            f'<td class=num>{rate}</td><td class=num>{mean_return:.3f}</td><td><a href="{query}">show</a></td></tr>'
        )
    rows = []
    for view, href in episodes:
        invalid = "—" if view.invalid_actions is None else view.invalid_actions
        rows.append(
            f'<tr data-agent="{escape(view.agent)}" data-env="{escape(view.env)}" '
            f'data-success="{_success_key(view.outcome)}"><td>{_text(view.agent)}</td><td>{_text(view.env)}</td>'
            f"<td class=num>{_text(view.seed)}</td><td class=num>{view.total_return:.3f}</td>"
            f"<td class=num>{len(view.steps)}</td><td>{_outcome_badge(view.outcome)}</td><td class=num>{invalid}</td>"
            f'<td><a href="{escape(href)}">steps</a></td></tr>'
        )
    body = (
        f"<h1>{_text(title)}</h1>\n{f'<p>{_text(intro)}</p>' if intro else ''}\n"
        "<h2>Agents × envs</h2>\n<table id=groups><thead><tr><th>agent</th><th>env</th><th>episodes</th>"
        "<th>success rate</th><th>mean return</th><th></th></tr></thead><tbody>\n"
        + "\n".join(group_rows)
        + "\n</tbody></table>\n<h2>Episodes</h2>\n"
        + filters
        + "\n<table id=episodes><thead><tr><th>agent</th><th>env</th><th>seed</th><th>return</th><th>steps</th>"
        "<th>outcome</th><th>invalid actions</th><th></th></tr></thead><tbody>\n"
        + "\n".join(rows)
        + "\n</tbody></table>"
    )
    return _page(title, body, INDEX_SCRIPT)


def _constant_parts(views: Sequence[str | dict[str, str] | None]) -> dict[str, str]:
    """The entries of dict observations that every step shows unchanged (e.g. the mission): shown once."""
    dicts = [v for v in views if v is not None]
    if not dicts or not all(isinstance(v, dict) for v in dicts):
        return {}
    first = dicts[0]
    return {k: v for k, v in first.items() if len(dicts) > 1 and all(d.get(k) == v for d in dicts)}


def _observation_html(observation: str | dict[str, str] | None, constant: dict[str, str]) -> str:
    if observation is None:
        return '<span class="muted">(no text recorded)</span>'
    if isinstance(observation, str):
        return f"<pre>{_text(observation)}</pre>"
    parts = {k: v for k, v in observation.items() if k not in constant}
    if not parts:
        return '<span class="muted">(no text)</span>' if not constant else ""
    if list(parts) == ["text"]:
        return f"<pre>{_text(parts['text'])}</pre>"
    return "".join(f"<pre><b>{_text(k)}:</b> {_text(v)}</pre>" for k, v in parts.items())


def _flags_html(step: Step) -> str:
    badges = []
    if step.invalid_action:
        badges.append('<span class="badge bad">invalid</span>')
    if step.success:
        badges.append('<span class="badge ok">success</span>')
    if step.invalid_action is None and step.success is None:
        badges.append('<span class="muted">not recorded</span>')
    feedback = f'<div class="muted">{_text(step.feedback)}</div>' if step.feedback else ""
    return "".join(badges) + feedback


def _image_html(image: Image | None, state: int) -> str:
    if image is None:
        return ""
    return (
        f'<img class="frame" src="{escape(image.src)}" width="{image.width}" height="{image.height}" '
        f'alt="state {state}" loading="lazy">'
    )


def episode_page(
    view: EpisodeView, frames: dict[int, Image], videos: Sequence[str] = (), index_href: str | None = None
) -> str:
    """One episode: its facts, its videos, then every step (the frame of the state the action answered when
    kept, the observation, the action, the reward, the flags and the feedback) and the state it ended in."""
    title = f"{view.agent} on {view.env}, seed {view.seed}"
    facts = {
        "return": f"{view.total_return:.4g}",
        "steps": len(view.steps),
        "invalid actions": "—" if view.invalid_actions is None else view.invalid_actions,
        **view.details,
    }
    constant = _constant_parts([s.observation for s in view.steps] + [view.final_observation])
    rows = "".join(f"<tr><th>{_text(k)}</th><td>{_text(v)}</td></tr>" for k, v in {**facts, **constant}.items())
    media = "".join(
        f'<video src="{escape(src)}" controls loop></video>'
        if src.endswith(".mp4")
        else f'<img class="frame" src="{escape(src)}" alt="the episode as a GIF">'
        for src in videos
    )
    header = [
        f'<p><a href="{escape(index_href)}">← all episodes</a></p>' if index_href else "",
        f"<h1>{_text(title)}</h1>",
        f"<p>{_outcome_badge(view.outcome)}</p>",
        f'<p class="note">{_text(view.note)}</p>' if view.note else "",
        f'<div class="top"><table id=facts>{rows}</table>{media}</div>',
    ]
    steps = []
    for i, step in enumerate(view.steps):
        reward = "" if step.reward is None else f"{step.reward:.4g}"
        steps.append(
            f'<tr id="step-{i}"><td class=num>{i}</td><td>{_image_html(frames.get(i), i)}</td>'
            f"<td>{_observation_html(step.observation, constant)}</td><td><pre>{_text(_action_text(step.action))}</pre>"
            f"</td><td class=num>{reward}</td><td>{_flags_html(step)}</td></tr>"
        )
    end = len(view.steps)
    if view.final_observation is not None or end in frames:
        steps.append(
            f'<tr class="end" id="step-{end}"><td class=num>end</td><td>{_image_html(frames.get(end), end)}</td>'
            f"<td>{_observation_html(view.final_observation, constant)}</td><td></td><td></td><td></td></tr>"
        )
    body = (
        "\n".join(h for h in header if h)
        + "\n<h2>Steps</h2>\n<table id=steps><thead><tr><th>step</th><th>frame</th><th>observation</th>"
        "<th>action</th><th>reward</th><th>flags</th></tr></thead><tbody>\n" + "\n".join(steps) + "\n</tbody></table>"
    )
    return _page(title, body)
