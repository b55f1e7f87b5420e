"""Metric-phase benchmark at the size of published benchmarks (issue 27): ``summarize`` with its
1000-resample group bootstrap, the weighted bootstrap against the reference that gathers every
resample's pairs, side by side in one run, seconds and peak traced memory.

Workloads (synthetic, seeded): RewardBench 2 Ties-sized (1,836 groups of 17-21 answers on three
utility levels, about 310,000 pairs, bootstrap units of two groups as tied:k / ref:k, and the
official Ties score as a task score of the drawn units) and M-RewardBench-sized (65,987
two-answer groups). ``python -m bench.bootstrap --reps 3 --write`` updates bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import resource
import statistics
import time
import tracemalloc
from functools import partial

import numpy as np

from bench.results import machine_line, write_section
from rmbench import __version__
from rmbench.core import metrics as M
from rmbench.core.types import ComparisonGroup
from rmbench.results.statistics.summary import summarize
from rmbench.tasks.base import TaskScores

EPS = (0.0, 0.1, 0.5)


def ties_sized(seed: int = 0, n_groups: int = 1836):
    """Groups of 17-21 answers, utilities 0-2 (every level an equivalence class), lengths
    50-2000 characters, rewards = utility + normal noise (continuous, as a model gives); units of two
    groups, and the Ties score of the drawn units as the task's own statistic."""
    rng = np.random.default_rng(seed)
    groups, rewards, rows = [], [], []
    for i in range(n_groups):
        n = int(rng.integers(17, 22))
        u = rng.integers(0, 3, n)
        groups.append(ComparisonGroup(f"g{i}", "q", ["x" * int(k) for k in rng.integers(50, 2000, n)],
                                      [int(v) for v in u]))
        r = u + rng.normal(0, 1.0, n)
        rewards.append(r)
        best = u == u.max()
        if best.all():
            best[0] = False
        rows.append((f"{('tied', 'ref')[i % 2]}:{i // 2}", r[best], r[~best]))
    terms = M.ties_terms(rows)
    position = {k: j for j, k in enumerate(terms.ids)}
    of_unit = np.array([position[str(k)] for k in range(math.ceil(n_groups / 2))])
    scores = TaskScores((("ties_score", None),),
                        lambda units: np.array([M.ties_score_from_terms(terms, of_unit[units])]),
                        (n_groups,))
    return groups, np.concatenate(rewards), np.arange(n_groups) // 2, scores


def pairs_sized(seed: int = 1, n_groups: int = 65_987):
    """Two-answer preference groups (2,869 rows x 23 languages), one unit each."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(20, 3000, (n_groups, 2))
    groups = [ComparisonGroup.preference_pair(f"p{i}", "q", "x" * int(a), "x" * int(b))
              for i, (a, b) in enumerate(lengths)]
    rewards = np.round(rng.normal(0, 1, 2 * n_groups) + np.tile([0.5, 0.0], n_groups), 3)
    return groups, rewards, None, None


def measure(fn, reps: int) -> tuple[float, float, object]:
    """Median seconds over ``reps`` untraced calls, then one more call under tracemalloc for its
    peak of traced allocations (MiB; tracing slows allocation, so it is timed apart); the result."""
    times, out = [], None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return statistics.median(times), peak, out


def differences(a, b) -> tuple[int, float, set[str]]:
    """Numbers (values and CI ends) that differ between two record lists, the largest relative
    difference among them, and the metrics they belong to."""
    n, worst, metrics = 0, 0.0, set()
    for x, y in zip(a, b, strict=True):
        for p, q in ((x.estimate.value, y.estimate.value), (x.estimate.ci_low, y.estimate.ci_low),
                     (x.estimate.ci_high, y.estimate.ci_high)):
            if p != q and not (p is None or q is None or (math.isnan(p) and math.isnan(q))):
                n, worst = n + 1, max(worst, abs(p - q) / max(abs(p), 1e-300))
                metrics.add(x.metric)
    return n, worst, metrics


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    rows = []
    for name, make in (("Ties-sized: 1,836 groups of 17-21 answers", ties_sized),
                       ("M-RewardBench-sized: 65,987 two-answer groups", pairs_sized)):
        groups, rewards, units, scores = make()
        n_pairs = sum(len(g.discrimination_pairs()) + len(g.specificity_pairs()) for g in groups)
        res = {}
        for method in ("resample", "weighted"):
            res[method] = measure(partial(summarize, "t", groups, rewards, EPS, group_units=units,
                                          extra_metrics=scores, method=method), args.reps)
            print(name, method, f"{res[method][0]:.2f} s, {res[method][1]:.0f} MiB", flush=True)
        n_diff, worst, which = differences(res["resample"][2], res["weighted"][2])
        n_numbers = 3 * len(res["weighted"][2])
        rows.append((f"{name}, {n_pairs:,} pairs", res["resample"], res["weighted"],
                     f"{n_diff} of {n_numbers}"
                     + (f" (max rel. {worst:.1e}; {', '.join(sorted(which))})" if n_diff else "")))
    lines = ["| workload | reference (s) | weighted (s) | speed-up | reference peak (MiB) | weighted peak (MiB) "
             "| numbers (values, CI ends) that differ |", "|---|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {name} | {old[0]:.2f} | {new[0]:.2f} | {old[0] / new[0]:.0f}x | {old[1]:.0f} | {new[1]:.0f} "
              f"| {diff} |" for name, old, new, diff in rows]
    table = "\n".join(lines)
    targets = ["| target | measured | met |", "|---|---:|---|"]
    for name, _, new, _ in rows:
        targets.append(f"| {name.split(':')[0]}: metric phase <= 5 s | {new[0]:.2f} s | "
                       f"{'yes' if new[0] <= 5 else '**no**'} |")
        targets.append(f"| {name.split(':')[0]}: peak memory <= 2 GB | {new[1]:.0f} MiB | "
                       f"{'yes' if new[1] <= 2048 else '**no**'} |")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(table + "\n\n" + "\n".join(targets))
    if args.write:
        write_section("bootstrap", "## Metric phase at benchmark size (issue 27)\n\n"
                      f"Command: `python -m bench.bootstrap --reps {args.reps} --write`\n\n"
                      f"Machine: {machine_line()}, numpy {np.__version__}, rmbench {__version__}. Medians of "
                      f"{args.reps} repetitions of `rmbench.results.statistics.summary.summarize` (1000 resamples, eps "
                      f"{', '.join(map(str, EPS))} sigma), `method=\"resample\"` (the reference: each resample's "
                      "pairs gathered, every metric function called on them) and `method=\"weighted\"` (the "
                      "default: resample weights over pairs sorted once), side by side in one run. Peak: "
                      "tracemalloc's peak of traced allocations (numpy arrays included) during one more call; the "
                      f"process's peak RSS over the whole benchmark was {rss:.0f} MiB. Whole benchmark: "
                      f"{(time.perf_counter() - t_start) / 60:.1f} min.\n\n{table}\n\n" + "\n".join(targets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
