"""One Table 1 from two cpu.yaml runs with the same evaluation settings: the baselines (SayCan, SayPlan)
of one, zero-shot, IL and the self-training rounds of the other. Writes ``table1.md`` and
``table1.png`` next to the runs.

Run: ``python benchmarks/methods/llm_personalize/combine.py results/cpu_attempt1 results/cpu --out results``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from textagents.methods.llm_personalize.report import plot_table1, render_diagnostics, render_table1, table1_rows


def rows_of(run: Path) -> list:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return table1_rows(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("baselines", type=Path, help="the run whose SayCan and SayPlan rows are taken")
    parser.add_argument("run", type=Path, help="the run whose zero-shot, IL and ST rows are taken")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    baselines = [row for row in rows_of(args.baselines) if row.label in ("SayCan", "SayPlan")]
    main_rows = rows_of(args.run)
    rows = main_rows[:1] + baselines + main_rows[1:]
    plot = plot_table1(rows, args.out / "table1.png")
    text = [
        "# LLM-Personalize on CPU: Table 1 from two runs",
        "",
        f"SayCan and SayPlan from `{args.baselines.name}`; zero-shot, IL and self-training from `{args.run.name}`"
        " (the same evaluation settings and seeds: both runs' zero-shot rows are identical).",
        "",
        render_table1(rows),
        "",
        f"![Table 1]({plot.name})",
        "",
        render_diagnostics(rows),
    ]
    (args.out / "table1.md").write_text("\n".join(text) + "\n")
    print(args.out / "table1.md")


if __name__ == "__main__":
    main()
