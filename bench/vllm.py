"""vLLM's CPU build beside the transformers engine (issue 23): the implicit reward of the real
SmolLM2-135M-Instruct weights in float32 on bench/load.py's texts, in one process: vLLM's
engine start-up (model load, warm-up and compile), its scoring time, and the transformers
adapter's model load and scoring time, with the largest relative difference of the rewards.

Runs in the virtualenv that ``.ci/vllm_env`` builds (vLLM's CPU build pins its own torch and
transformers), from the repository root:

    .venv-vllm/bin/python -m bench.vllm --write
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.results import machine_line, write_section


def causal_folder(root: Path) -> str:
    """The converted SmolLM2 folder with ``architectures`` in its config (the conversion writes
    none, and vLLM then resolves the bare backbone)."""
    from rmbench.models.embedded import resolve

    out = root / "smollm2"
    shutil.copytree(resolve("smollm2-135m-instruct"), out)
    config = json.loads((out / "config.json").read_text())
    config["architectures"] = ["LlamaForCausalLM"]
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return str(out)


def timed(spec, groups, runtime) -> tuple[float, float, object]:
    """(seconds to build and load, seconds to score, rewards) of one adapter."""
    from rmbench.models import build_model
    from rmbench.models.base import close_parts
    from rmbench.scoring.engine import requests_for, score_groups

    t0 = time.perf_counter()
    rm = build_model(spec, runtime)
    rm.score(requests_for(groups[:1])[:1])  # loads the weights (vLLM: starts its engine)
    load = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        rewards, _ = score_groups(rm, groups, runtime)
        scoring = time.perf_counter() - t0
    finally:
        close_parts(rm)  # vLLM: its engine (and a reference's) stops now, not at interpreter exit
    return load, scoring, rewards


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--every", type=int, default=9, help="every Nth group of the workload (bench/load.py's default 9)")
    ap.add_argument("--write", action="store_true", help="write the table into bench/RESULTS.md")
    args = ap.parse_args(argv)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import numpy as np
    import torch
    import vllm

    from bench.load import bench_groups
    from rmbench.core.specs import Spec
    from rmbench.models import Runtime

    groups = bench_groups(args.every)
    n_texts = sum(len(g.responses) for g in groups)
    runtime = Runtime(dtype="float32", device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = causal_folder(Path(tmp))
        hf_load, hf_s, hf = timed(Spec.make("i", "implicit", {"model": folder}), groups, runtime)
        vl_load, vl_s, vl = timed(Spec.make("v", "vllm_implicit", {"model": folder}), groups, runtime)
    diff = float(np.max(np.abs(np.asarray(hf) - np.asarray(vl)) / np.maximum(np.abs(np.asarray(hf)), 1.0)))
    text = "\n".join([
        "## vLLM CPU build beside the transformers engine (issue 23)", "",
        "Command: `.ci/vllm_env && .venv-vllm/bin/python -m bench.vllm --write`", "",
        f"Machine: {machine_line()}, torch {torch.__version__}, vLLM {vllm.__version__}. Implicit reward of "
        f"SmolLM2-135M-Instruct in float32, {n_texts} texts (bench/load.py's), one process, one repetition.", "",
        "| engine | load / start-up s | scoring s | vs transformers (scoring) |", "|---|---:|---:|---:|",
        f"| transformers (`implicit`, rmbench's engine) | {hf_load:.1f} | {hf_s:.1f} | 1.00x |",
        f"| vLLM (`vllm_implicit`) | {vl_load:.1f} | {vl_s:.1f} | {hf_s / vl_s:.2f}x |", "",
        f"Rewards: max relative difference {diff:.1e}. vLLM's start-up includes its warm-up and compile; on a CPU "
        "it is not a fast path (use it on GPUs, where it batches and schedules itself).",
    ])
    print(text)
    if args.write:
        write_section("vllm", text)
    return 0


if __name__ == "__main__":  # vLLM starts its engine in a new process: the guard is required
    raise SystemExit(main())
