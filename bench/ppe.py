"""PPE correctness at full size (issue 36): a cached re-run of ``ppe_correctness`` and its metric
phase, on synthetic files in the hub schema at the published size (2,555 rows of 32 answers,
1.27M pairs) and at five times it (the issue's assumption of 5 x 2.5k prompts), with a length
reward (integer gaps: few distinct candidates) and a continuous one (every gap distinct, as a
model gives).

Every timed run is ``rmbench eval`` in a fresh process (a process that has already run the
metric phase once reuses freed memory and runs it faster, so in-process repeats flatter the
later side). With ``--baseline CHECKOUT`` (an older rmbench's source tree, e.g. ``git worktree
add /tmp/base fc520eb``), that checkout and this one run in turn on the same score cache, and
their records are checked equal.

``python -m bench.ppe --baseline /tmp/base --write`` updates bench/RESULTS.md (``--scales 1``
for a quick run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SETS = {"MMLU-Pro": 512, "MATH": 512, "GPQA": 512, "IFEval": 512, "MBPP-Plus": 507}
"""PPE's five correctness sets and their rows (2,555 in all)."""

TIMED = """
import sys, time
from rmbench.scoring import runner
inner, spent = runner._task_result, []
def timed(*args, **kwargs):
    start = time.perf_counter()
    try:
        return inner(*args, **kwargs)
    finally:
        spent.append(time.perf_counter() - start)
runner._task_result = timed
from rmbench.cli.app import main
sys.argv = ["rmbench"] + sys.argv[1:]
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
print("METRIC_PHASE", sum(spent))
"""
"""``rmbench eval`` with every task's metric phase (``runner._task_result``: pairs, bootstrap,
official scores) timed, run as ``python -c TIMED eval ...`` on whichever rmbench is first on the path."""


def noisy(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """A continuous reward (``python:bench/ppe.py:noisy``): a sha256-uniform term plus 0.001 x length."""
    return [int(hashlib.sha256(r.encode()).hexdigest()[:12], 16) / 16**12 + 0.001 * len(r) for _, r in pairs]


def write_files(folder: Path, scale: int, seed: int = 0) -> int:
    """PPE-{SET}-Best-of-K.jsonl at ``scale`` x the published rows: 32 answers of 10-400 characters,
    each correct with probability 1/2, and 4 sampled conflict pairs. Returns the rows."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = 0
    for name, n in SETS.items():
        with open(folder / f"PPE-{name}-Best-of-K.jsonl", "w") as f:
            for q in range(n * scale):
                scores = [rng.random() < 0.5 for _ in range(32)]
                row: dict[str, object] = {"question_id": f"q{q}", "model_name": "m", "scores": scores,
                                          "prompt": f"Question {q} of the {name} set?"}
                for k in range(32):
                    row[f"response_{k + 1}"] = f"answer {k}: " + "x" * rng.randint(1, 390)
                good = [i for i in range(32) if scores[i]]
                bad = [i for i in range(32) if not scores[i]]
                row["sampled_conflict_pairs"] = ([[rng.choice(good), rng.choice(bad)] for _ in range(4)]
                                                 if good and bad else [])
                f.write(json.dumps(row) + "\n")
                rows += 1
    return rows


def eval_run(source: Path, data: Path, model: str, cache: Path, out: Path) -> tuple[float, float]:
    """``rmbench eval`` of ppe_correctness in a fresh process on ``source``'s rmbench: wall seconds
    and the metric phase's seconds."""
    env = {**os.environ, "RMBENCH_CACHE": str(cache), "PYTHONPATH": str(source)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", TIMED, "eval", "--model", model, "--tasks", "ppe_correctness",
                           "--data", f"ppe_correctness={data}", "--out", str(out), "--overwrite"],
                          env=env, cwd=source, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"rmbench eval failed in {source}:\n{done.stderr[-2000:]}")
    metric = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("METRIC_PHASE")]
    return wall, float(metric[-1])


def metrics_of(out: Path) -> list:
    """The metric records of a run folder's results.json."""
    return [t["metrics"] for t in json.loads((out / "results.json").read_text())["tasks"]]


def main() -> None:
    from bench.results import machine_line, write_section  # here: the noisy model loads this file by path

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scales", default="1,5", help="sizes, as multiples of the published rows")
    parser.add_argument("--baseline", type=Path, help="an older rmbench checkout to time beside this one")
    parser.add_argument("--reps", type=int, default=3, help="cached re-runs of each side, in turn (medians)")
    parser.add_argument("--section", default="PPE correctness at full size (issue 36)",
                        help="the bench/RESULTS.md section --write replaces")
    parser.add_argument("--write", action="store_true", help="replace this section of bench/RESULTS.md")
    args = parser.parse_args()
    here = Path(__file__).resolve().parents[1]
    sides = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("this checkout", here)]
    head = "| rows x answers | pairs | reward | first run (s) |"
    for name, _ in sides:
        head += f" cached re-run, {name} (s) | metric phase, {name} (s) |"
    lines = [head + (" re-run speed-up | metric speed-up | records equal |" if args.baseline else ""),
             "|" + "---|" * (4 + 2 * len(sides) + (3 if args.baseline else 0))]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for scale in (int(s) for s in args.scales.split(",")):
            data = root / f"x{scale}"
            rows = write_files(data, scale)
            for label, model in (("length", "length"), ("continuous", f"python:{Path(__file__).resolve()}:noisy")):
                cache = root / f"cache-{scale}-{label}"
                first, _ = eval_run(here, data, model, cache, root / "first")
                times: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in sides}
                for _ in range(args.reps):
                    for name, source in sides:
                        times[name].append(eval_run(source, data, model, cache, root / name))
                pairs = rows * (32 * 31 // 2)
                line = f"| {rows:,} x 32 | {pairs:,} | {label} | {first:.1f} |"
                medians = {}
                for name, _ in sides:
                    medians[name] = (statistics.median(t[0] for t in times[name]),
                                     statistics.median(t[1] for t in times[name]))
                    line += f" {medians[name][0]:.1f} | {medians[name][1]:.1f} |"
                if args.baseline:
                    (bw, bm), (nw, nm) = medians["baseline"], medians["this checkout"]
                    same = metrics_of(root / "baseline") == metrics_of(root / "this checkout")
                    line += f" {bw / nw:.2f}x | {bm / nm:.2f}x | {'yes' if same else 'NO'} |"
                print(line, flush=True)
                lines.append(line)
    body = "\n".join([
        "Command: `python -m bench.ppe" + (f" --baseline {args.baseline}" if args.baseline else "")
        + f" --reps {args.reps} --write`. " + machine_line(),
        "",
        "`rmbench eval --tasks ppe_correctness` on synthetic files in the hub schema (bench/ppe.py), 1,000 "
        "resamples, eps 0.1 sigma, each run in a fresh process: the first run (rewards computed), then cached "
        f"re-runs (medians of {args.reps}, the sides in turn on the same score cache); the metric phase is every "
        "task's pairs, bootstrap and official scores (`runner._task_result`)."
        + (f" Baseline: the rmbench checkout `{args.baseline}`." if args.baseline else ""),
        "",
        *lines,
    ])
    print(body)
    if args.write:
        write_section(args.section, body)


if __name__ == "__main__":
    main()
