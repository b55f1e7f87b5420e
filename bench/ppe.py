"""PPE correctness at full size (issue 36): a cached re-run of ``ppe_correctness`` and its metric
phase, on synthetic files in the hub schema at the published size (2,555 rows of 32 answers)
and at five times it (the issue's assumption of 5 x 2.5k prompts), with a length reward
(integer gaps: few distinct candidates) and a continuous one (every gap distinct, as a model
gives). Side by side in one run: the order statistics' prefix sums on the integers (now) and
on float64 (before); the records of the two are checked equal.

``python -m bench.ppe --write`` updates bench/RESULTS.md (``--scales 1`` for a quick run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from bench.results import machine_line, write_section
from rmbench.core import weighted_order
from rmbench.scoring import runner
from rmbench.scoring.config import EvalConfig
from rmbench.tasks.loading import DataOverride

SETS = {"MMLU-Pro": 512, "MATH": 512, "GPQA": 512, "IFEval": 512, "MBPP-Plus": 507}
"""PPE's five correctness sets and their rows (2,555 in all)."""


def noisy(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """A continuous reward (``python:bench.ppe:noisy``): a sha256-uniform term plus 0.001 x length."""
    return [int(hashlib.sha256(r.encode()).hexdigest()[:12], 16) / 16**12 + 0.001 * len(r) for _, r in pairs]


def write_files(folder: Path, scale: int, seed: int = 0) -> int:
    """PPE-{SET}-Best-of-K.jsonl at ``scale`` x the published rows: 32 answers of 8-400 characters,
    each correct with probability 1/2, and up to 4 sampled conflict pairs. Returns the rows."""
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


@contextmanager
def metric_timer(seconds: list[float]) -> Iterator[None]:
    """Times every task's metric phase (``runner._task_result``: pairs, bootstrap, official scores)."""
    inner = runner._task_result

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    runner._task_result = timed
    try:
        yield
    finally:
        runner._task_result = inner


@contextmanager
def float_prefix() -> Iterator[None]:
    """The order statistics' prefix sums on float64, as before this change."""
    inner = weighted_order.integer_weights
    weighted_order.integer_weights = lambda W, n_items: np.asarray(W, dtype=np.float64)
    try:
        yield
    finally:
        weighted_order.integer_weights = inner


def run(data: Path, model: str, cache: Path, out: Path) -> tuple[float, float, list]:
    """One ``rmbench eval`` of ppe_correctness: wall seconds, metric-phase seconds, the records."""
    import os
    os.environ["RMBENCH_CACHE"] = str(cache)
    seconds: list[float] = []
    config = EvalConfig(model=model, tasks=["ppe_correctness"], data=[DataOverride("ppe_correctness", str(data))])
    start = time.perf_counter()
    with metric_timer(seconds):
        record = runner.evaluate(config, out, overwrite=True)
    wall = time.perf_counter() - start
    return wall, sum(seconds), [r for t in record.tasks for r in t.metrics]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scales", default="1,5", help="sizes, as multiples of the published rows")
    parser.add_argument("--write", action="store_true", help="replace this section of bench/RESULTS.md")
    args = parser.parse_args()
    lines = ["| rows x answers | pairs | reward | cold run (s) | cached re-run (s) | metric phase, "
             "float prefix (before) (s) | metric phase, integer prefix (now) (s) | speed-up | records equal |",
             "|---|---|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for scale in (int(s) for s in args.scales.split(",")):
            data = root / f"x{scale}"
            rows = write_files(data, scale)
            for label, model in (("length", "length"), ("continuous", "python:bench.ppe:noisy")):
                cache = root / f"cache-{scale}-{label}"
                cold, _, _ = run(data, model, cache, root / "cold")
                with float_prefix():
                    _, before, old = run(data, model, cache, root / "before")
                wall, now, new = run(data, model, cache, root / "now")
                pairs = rows * (32 * 31 // 2)
                line = (f"| {rows:,} x 32 | {pairs:,} | {label} | {cold:.1f} | {wall:.1f} | {before:.1f} | {now:.1f} "
                        f"| {before / now:.2f}x | {'yes' if old == new else 'NO'} |")
                print(line, flush=True)
                lines.append(line)
    body = "\n".join([
        "Command: `python -m bench.ppe --write`. " + machine_line(),
        "",
        "`rmbench eval --tasks ppe_correctness` on synthetic files in the hub schema (bench/ppe.py), "
        "1,000 resamples, eps 0.1 sigma: the first run (rewards computed), then cached re-runs; the metric phase "
        "is every task's pairs, bootstrap and official scores (`runner._task_result`). Side by side: the order "
        "statistics' prefix sums on float64 (before) and on the integers (now).",
        "",
        *lines,
    ])
    print(body)
    if args.write:
        write_section("PPE correctness at full size (issue 36)", body)


if __name__ == "__main__":
    main()
