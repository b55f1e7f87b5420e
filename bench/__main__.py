"""Metric-engine benchmark: rmbench's exact O(n log n) metrics and its group bootstrap, measured
side by side with the straightforward implementations on the same synthetic rewards.

Prints a table of medians over repetitions and the ratios; ``--write`` also updates
bench/RESULTS.md. Scoring-speed benchmarks with real models come with the model families.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from bench.results import machine_line, write_section
from rmbench import __version__
from rmbench.core import metrics as M
from rmbench.core.types import ComparisonGroup
from rmbench.results.statistics.summary import summarize


def median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def naive_ds_auc(d, e):
    """The definition read literally: every (discrimination, specificity) pair compared."""
    x, y = np.asarray(d)[:, None], np.abs(np.asarray(e))[None, :]
    return float(((x > y) + 0.5 * ((x == y) & (x > 0))).mean())


def naive_bootstrap(groups, rewards, n_resamples, seed):
    """Per resample: rebuild the resampled groups and recompute accuracy from Python pair lists."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum([len(g.responses) for g in groups])])
    out = []
    for _ in range(n_resamples):
        gaps = []
        for gi in rng.integers(0, len(groups), len(groups)):
            r = rewards[offsets[gi]:offsets[gi + 1]]
            gaps += [r[a] - r[b] for a, b in groups[gi].discrimination_pairs()]
        out.append(M.pairwise_accuracy(gaps))
    return np.quantile(out, [0.025, 0.975])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)

    rows = []
    d, e = rng.normal(1, 1, 20_000), rng.normal(0, 1, 5_000)
    assert abs(M.ds_auc(d, e) - naive_ds_auc(d, e)) < 1e-12
    fast = median_time(lambda: M.ds_auc(d, e), args.reps)
    slow = median_time(lambda: naive_ds_auc(d, e), args.reps)
    rows.append(("ds_auc, 20,000 x 5,000 pairs", slow, fast))

    groups = [ComparisonGroup(f"g{i}", "q", [f"r{j}" for j in range(4)], [1, 1, 0, 0]) for i in range(500)]
    rewards = rng.normal(size=2000)
    fast = median_time(lambda: summarize("t", groups, rewards, (0.0, 0.1), n_bootstrap=200), args.reps)
    slow = median_time(lambda: naive_bootstrap(groups, rewards, 200, 0), args.reps)
    rows.append(("200-resample bootstrap, 500 groups (rmbench: all 10 metrics; naive: accuracy only)", slow, fast))

    lines = ["| workload | straightforward (s) | rmbench (s) | speed-up |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {s:.4f} | {f:.4f} | {s / f:.1f}x |" for name, s, f in rows]
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("metrics", f"## Metric engine\n\nCommand: `python -m bench --reps {args.reps} --write`\n\n"
                      f"Machine: {machine_line()}, numpy {np.__version__}, rmbench {__version__}. Medians of "
                      f"{args.reps} repetitions, both sides measured in the same run.\n\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
