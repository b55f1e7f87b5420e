"""Step-level metric phase (issue 52): ``summarize`` of a step-level task with one long solution,
from the listed pairs (the pair loop, ``count_steps_from=None``: today's path below
:data:`~rmbench.results.statistics.step_statistic.COUNT_STEPS_FROM`) and from counted pairs
(the default above it), side by side in one run: seconds, peak traced memory, and how many
numbers (values, CI ends) differ besides length_correlation (nan from counts).

Workloads (synthetic, seeded): 200 ProcessBench-shaped solutions of 3-14 steps (first error
anywhere or none, rewards uniform in [0, 1)) and one long solution of 1,000 or 10,000 steps
whose first error is its last step (the worst case: k(k-1)/2 specificity pairs and k x values)
or with no wrong step; 1000 resamples, eps 0, 0.1, 0.5 sigma. The pair loop on 10,000 steps
takes about 9 minutes and 8 GB (issue 52): ``--pairs-at 10000`` runs it too.
``python -m bench.steps --reps 3 --write`` updates bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np

from bench.bootstrap import differences, measure
from bench.results import machine_line, write_section
from rmbench import __version__
from rmbench.core.step_groups import StepGroup
from rmbench.results.statistics.summary import summarize

EPS = (0.0, 0.1, 0.5)


def task(long: int, wrong_last: bool, seed: int = 0) -> tuple[list[StepGroup], np.ndarray]:
    """200 short solutions and one of ``long`` steps (its last step its first error, or none wrong)."""
    rng = np.random.default_rng(seed)
    groups, rewards = [], []
    for i in range(200):
        n = int(rng.integers(3, 15))
        k = int(rng.integers(-1, n))
        groups.append(StepGroup(f"s{i}", "q", tuple(f"step {j}" * int(rng.integers(1, 6)) for j in range(n)),
                                tuple([1] * n if k < 0 else [1] * k + [0] * (n - k))))
        rewards.append(rng.random(n))
    groups.append(StepGroup("long", "q", tuple(f"step {j}" for j in range(long)),
                            tuple([1] * (long - 1) + [0 if wrong_last else 1])))
    rewards.append(rng.random(long))
    return groups, np.concatenate(rewards)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pairs-at", type=int, nargs="*", default=[1000],
                    help="long-solution sizes at which the pair loop runs too (default 1000)")
    ap.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    rows = []
    for long, wrong_last in ((1000, True), (10_000, True), (10_000, False)):
        groups, rewards = task(long, wrong_last)
        n_diff, n_eq = (sum(c) for c in zip(*(g.pair_counts() for g in groups)))
        run = partial(summarize, "t", groups, rewards, EPS)
        counted = measure(partial(run, count_steps_from=0), args.reps)
        pairs = measure(partial(run, count_steps_from=None), 1) if long in args.pairs_at else None
        name = (f"{long:,} steps, {'first error last' if wrong_last else 'none wrong'} "
                f"(+200 short; {n_diff:,} + {n_eq:,} pairs)")
        diff = "-"
        if pairs is not None:
            a = [r for r in pairs[2] if r.metric != "length_correlation"]
            b = [r for r in counted[2] if r.metric != "length_correlation"]
            n, worst, which = differences(a, b)
            diff = f"{n} of {3 * len(a)}" + (f" (max rel. {worst:.1e}; {', '.join(sorted(which))})" if n else "")
        rows.append((name, pairs, counted, diff))
        print(name, "pairs", pairs[:2] if pairs else "-", "counted", counted[:2], diff, flush=True)
    lines = ["| workload | pair loop (s) | counted (s) | speed-up | pair loop peak (MiB) | counted peak (MiB) "
             "| numbers that differ (but length_correlation) |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, old, new, diff in rows:
        lines.append(f"| {name} | {f'{old[0]:.2f}' if old else 'not run'} | {new[0]:.2f} | "
                     f"{f'{old[0] / new[0]:.0f}x' if old else '-'} | {f'{old[1]:.0f}' if old else '-'} | "
                     f"{new[1]:.0f} | {diff} |")
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("steps", "## Step-level metric phase (issue 52)\n\n"
                      f"Command: `python -m bench.steps --reps {args.reps} --write`\n\n"
                      f"Machine: {machine_line()}, numpy {np.__version__}, rmbench {__version__}. "
                      "`rmbench.results.statistics.summary.summarize` of a step-level task (1000 resamples, eps "
                      f"{', '.join(map(str, EPS))} sigma): 200 ProcessBench-shaped solutions and one long one, "
                      "`count_steps_from=None` (the pair loop: every specificity pair listed) and "
                      "`count_steps_from=0` (counted: `rmbench/core/step_counts.py`), side by side in one run; "
                      f"counted: median of {args.reps}, the pair loop: one call. Peak: tracemalloc's peak of "
                      "traced allocations during one more call. The pair loop on 10,000 steps (first error "
                      "last) took 9 min 15 s and 8.1 GB when issue 52 was filed; `--pairs-at 1000 10000` runs it. "
                      f"Whole benchmark: {(time.perf_counter() - t_start) / 60:.1f} min.\n\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
