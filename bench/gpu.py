"""GPU benchmark (issue 37): rmbench's engine on real-sized reward models against a plain
transformers loop, the chip's bf16 limit, and vLLM where it imports, in one run, no download.

Models: random weights of real shapes built on the device from configs: Llama-3.2-1B-shaped and
Llama-3.1-8B-shaped, each as a sequence classifier (one output, like Skywork-Reward-Llama-3.1-8B)
and as a causal LM for the implicit reward (reference-free: a reference is the same pass again).
Tokenizer: a byte-level BPE trained here on the shipped tasks' texts (tasks/data), with a ChatML
template. Workload: groups of 4 answers sharing a prompt (RewardBench 2's shape), prompt and
answer lengths in tokens drawn from the shipped tasks' prompts and answers, texts made of their
words. Contenders, on the same texts and weights:

* rmbench's engine (:func:`rmbench.scoring.engine.score_groups`, the batch limits it picks for
  the device: :mod:`rmbench.models.batching`), with and without prompt KV reuse;
* a plain loop: batches of 8 in input order, padded to the batch's longest text, the model's own
  forward (for the implicit reward the full LM head over every position), as RewardBench's
  pipelines run;
* vLLM (dummy weights of the same shapes) when it imports.

Reported: text tokens/s, the FLOPs run per second as a fraction of the chip's dense bf16 peak
(datasheet) and of a matmul probe measured in the same run, FLOPs as in bench/limits.py (2 x
non-embedding parameters x tokens run, + causal attention, + the LM head over the positions it
runs on), peak GPU memory, padding, and the rewards' agreement with the plain loop. ``--tiny``:
tiny shapes on the CPU, the benchmark's own test (tests/bench/test_bench_gpu.py).

    python -m bench.gpu --write                 # on a GPU: about 4 minutes on one H200
    python -m bench.gpu --tiny --groups 6       # anywhere: seconds
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.gpu_models import adapter, build_model, build_tokenizer, folder_for, shipped_texts, workload
from bench.results import machine_line, write_section
from rmbench.models import batching
from rmbench.models.base import Runtime
from rmbench.scoring.engine import requests_for, score_groups

PEAK_BF16 = {"H200": 989e12, "H100 PCIe": 756e12, "H100": 989e12, "GH200": 989e12, "A100": 312e12,
             "L40S": 362e12, "L4": 121e12, "A10G": 70e12, "A10": 125e12}
"""Dense bf16 tensor-core peaks from the vendors' datasheets (SXM parts), by name fragment, in order."""

# --- contenders ------------------------------------------------------------------------------
def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, fn):
    """(result, seconds, peak device memory in bytes or None) of ``fn()``."""
    import torch

    _sync(device)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    out = fn()
    _sync(device)
    seconds = time.perf_counter() - t0
    return out, seconds, torch.cuda.max_memory_allocated() if device.startswith("cuda") else None


def plain_loop(family: str, rm, groups, device: str, batch_size: int = 8):
    """Batches of 8 in input order, padded to the longest, the model's own forward: (rewards,
    padded tokens, real tokens)."""
    import torch

    tok, model = rm.tokenizer, rm.model
    tok.padding_side = "right"
    reqs = requests_for(groups)
    texts = rm.front.full_texts(reqs)
    bounds = []
    if family == "implicit":
        for r in reqs:
            context, _ = rm.formatter.context_and_full(r.prompt, r.response)
            bounds.append(len(tok(context.rstrip(), add_special_tokens=False)["input_ids"]))
    out, padded, real = [], 0, 0
    for s in range(0, len(texts), batch_size):
        enc = tok(texts[s:s + batch_size], add_special_tokens=False, padding=True, return_tensors="pt").to(device)
        padded += enc["input_ids"].numel()
        real += int(enc["attention_mask"].sum())
        with torch.inference_mode():
            if family == "seqcls":
                out += model(**enc).logits[:, 0].float().cpu().tolist()
                continue
            logp = model(**enc).logits.float().log_softmax(-1)
            for i in range(enc["input_ids"].shape[0]):
                n, b = int(enc["attention_mask"][i].sum()), bounds[s + i]
                ids = enc["input_ids"][i]
                out.append(float(logp[i, b - 1:n - 1].gather(1, ids[b:n].unsqueeze(1)).sum()))
    return np.array(out), padded, real


def vllm_contender(family: str, folder: Path, rm, groups, dtype_name: str):
    """vLLM on the same shapes with dummy weights (its own random init): (seconds, note); the
    rewards are not compared (other weights)."""
    try:
        import vllm
    except ImportError:
        return None, "vLLM is not importable on this machine"
    try:
        reqs = requests_for(groups)
        prompts = [{"prompt_token_ids": ids} for ids in rm.front.tokenize(rm.front.full_texts(reqs))["input_ids"]]
        if family == "seqcls":
            llm = vllm.LLM(model=str(folder), load_format="dummy", dtype=dtype_name, runner="pooling",
                           gpu_memory_utilization=0.8)
            t0 = time.perf_counter()
            llm.encode(prompts, pooling_task="classify", use_tqdm=False)
        else:
            llm = vllm.LLM(model=str(folder), load_format="dummy", dtype=dtype_name, gpu_memory_utilization=0.8)
            params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0)
            t0 = time.perf_counter()
            llm.generate(prompts, params, use_tqdm=False)
        return time.perf_counter() - t0, f"vLLM {vllm.__version__}, dummy weights"
    except Exception as exc:  # noqa: BLE001 - a peer's failure is a row of the table, not the benchmark's end
        return None, f"vLLM failed: {type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"


# --- FLOPs and the chip ------------------------------------------------------------------------
def flops(model, family: str, tokens_run: int, lengths: list[int], head_positions: int) -> float:
    """2 x non-embedding parameters x tokens run + causal attention (2 L d n^2 per text, as
    bench/limits.py) + the LM head (2 V d) over ``head_positions``."""
    cfg = model.config
    body = sum(p.numel() for n, p in model.named_parameters() if "embed_tokens" not in n and "lm_head" not in n)
    attention = sum(2 * cfg.num_hidden_layers * cfg.hidden_size * n * n for n in lengths)
    head = 2 * cfg.vocab_size * cfg.hidden_size * head_positions if family == "implicit" else 0
    return float(2 * body * tokens_run + attention + head)


def chip(device: str) -> tuple[str, float | None, float | None]:
    """(name, datasheet dense bf16 peak, bf16 matmul probe FLOP/s: 8192^3, best of 5)."""
    import torch

    if not device.startswith("cuda"):
        return "CPU", None, None
    name = torch.cuda.get_device_name()
    peak = next((v for k, v in PEAK_BF16.items() if k in name), None)
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(5):
        _, s, _ = timed(device, lambda: a @ b)
        best = min(best, s)
    return name, peak, 2 * 8192**3 / best


# --- the run -------------------------------------------------------------------------------------
def agreement(ours: np.ndarray, theirs: np.ndarray, groups) -> str:
    """Max |difference| in units of the rewards' spread, and the share of within-group pairs
    both order alike."""
    spread = float(np.std(theirs)) or 1.0
    same = total = 0
    start = 0
    for g in groups:
        k = len(g.responses)
        a, b = ours[start:start + k], theirs[start:start + k]
        for i in range(k):
            for j in range(i + 1, k):
                total += 1
                same += (a[i] > a[j]) == (b[i] > b[j])
        start += k
    return f"max diff {np.max(np.abs(ours - theirs)) / spread:.1e} sd, pairs ordered alike {same / max(total, 1):.1%}"


def measure(shape: str, family: str, groups, tok, root: Path, device: str, dtype_name: str, probe, peak,
            report, label: str | None = None, with_plain: bool = True, force_reuse: bool = True) -> dict:
    """Every contender on one (shape, family); ``report(row)`` as each finishes. Without
    ``with_plain``: the engine's three plans only, agreement against the plan without reuse."""
    import gc

    import torch

    dtype = getattr(torch, dtype_name)
    runtime = Runtime(dtype=dtype_name, device=device)
    t0 = time.perf_counter()
    weights = build_model(shape, family, tok, device, dtype)
    _sync(device)
    build_s = time.perf_counter() - t0
    folder = folder_for(root, weights.config, tok)
    engine, whole = adapter(family, folder, weights, runtime, True), adapter(family, folder, weights, runtime, False)
    reqs = requests_for(groups)
    lengths = engine.lengths(reqs)
    prefix = engine.prefix_lengths(reqs) or [0] * len(reqs)
    responses = sum(n - q - 1 for n, q in zip(lengths, prefix))  # the implicit RM's LM-head positions
    score_groups(engine, groups, runtime)  # warm-up: kernels, and the allocator's blocks for the widest batches
    score_groups(whole, groups[:8], runtime)
    plain_loop(family, engine, groups[:8], device)
    results = {}
    label = label or f"{shape} {family}"

    def row(name, seconds, tokens_run, head_positions, mem, padded, batches, rewards=None, note=""):
        f = flops(weights, family, tokens_run, lengths, head_positions)
        out = {"model": label, "contender": name, "seconds": seconds, "text_tokens": sum(lengths),
               "tokens_per_s": sum(lengths) / seconds, "tflops": f / seconds / 1e12,
               "of_peak": f / seconds / peak if peak else None, "of_probe": f / seconds / probe if probe else None,
               "peak_mem_gib": mem / 2**30 if mem is not None else None, "padding": padded / tokens_run - 1,
               "batches": batches, "note": note}
        results[name] = (out, rewards)
        report(out)
        return out

    (r, stats), s, mem = timed(device, lambda: score_groups(engine, groups, runtime))
    row("rmbench engine", s, stats.work_tokens, responses, mem, stats.padded_tokens, stats.batches_computed, r,
        f"plan: {stats.plan}; budget {stats.token_budget} tokens, {stats.max_batch} rows ({stats.batch_limits})")
    (r2, st2), s, mem = timed(device, lambda: score_groups(whole, groups, runtime))
    row("rmbench engine, no prompt KV reuse", s, st2.work_tokens, responses, mem, st2.padded_tokens,
        st2.batches_computed, r2, f"plan: {st2.plan}")
    if family == "implicit" and force_reuse:  # what the prompt KV reuse itself gains or costs
        overhead = batching.CUDA_BATCH_OVERHEAD
        batching.CUDA_BATCH_OVERHEAD = 0  # the CPU's plan: prompt KV reuse with at most 10% padding
        try:
            (r3, st3), s, mem = timed(device, lambda: score_groups(engine, groups, runtime))
        finally:
            batching.CUDA_BATCH_OVERHEAD = overhead
        row("rmbench engine, prompt KV reuse forced", s, st3.work_tokens, responses, mem, st3.padded_tokens,
            st3.batches_computed, r3, f"plan: {st3.plan}")
    if with_plain:
        (rp, padded, real), s, mem = timed(device, lambda: plain_loop(family, engine, groups, device))
        row("plain loop, batch 8, input order", s, real, real, mem, padded, -(-len(reqs) // 8), rp)
        plain = results["plain loop, batch 8, input order"][0]["seconds"]
    else:
        rp, plain = r2, None
    for name, (out, rewards) in results.items():
        out["vs_plain"] = plain / out["seconds"] if plain else None
        compared = name.startswith("rmbench") and (with_plain or name != "rmbench engine, no prompt KV reuse")
        out["agreement"] = agreement(rewards, rp, groups) if compared else ""
    ran = engine.ran_with()
    engine = whole = weights = None  # the GPU memory goes back before the next model
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    rows = [o for o, _ in results.values()]
    if with_plain:
        seconds, note = vllm_contender(family, folder, adapter(family, folder, None, runtime, True), groups, dtype_name)
        rows.append({"model": label, "contender": "vLLM", "seconds": seconds, "note": note,
                     "tokens_per_s": sum(lengths) / seconds if seconds else None,
                     "vs_plain": plain / seconds if seconds else None})
        report(rows[-1])
    return {"rows": rows, "build_s": build_s, "ran_with": ran}


def fmt(v, spec: str) -> str:
    return "" if v is None or v == "" else format(v, spec)


def table(rows) -> str:
    lines = ["| model | contender | s | text tokens/s | TFLOP/s run | of bf16 peak | of matmul probe | peak GiB | "
             "padding | batches | vs plain loop | rewards vs plain loop | note |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['contender']} | {fmt(r.get('seconds'), '.2f')} | "
                     f"{fmt(r.get('tokens_per_s'), ',.0f')} | {fmt(r.get('tflops'), '.1f')} | "
                     f"{fmt(r.get('of_peak'), '.1%')} | {fmt(r.get('of_probe'), '.1%')} | "
                     f"{fmt(r.get('peak_mem_gib'), '.1f')} | {fmt(r.get('padding'), '.1%')} | "
                     f"{r.get('batches', '')} | {fmt(r.get('vs_plain'), '.2f')}{'x' if r.get('vs_plain') else ''} | "
                     f"{r.get('agreement', '')} | {r.get('note', '')} |")
    return "\n".join(lines)


def targets(rows) -> str:
    def get(model, contender):
        return next((r for r in rows if r["model"] == model and r["contender"] == contender), None)

    lines = ["| goal (issue 37) | measured | target | met |", "|---|---:|---|---|"]
    seq = get("8b seqcls", "rmbench engine")
    if seq is not None:
        lines.append(f"| 8B seqcls: engine / plain loop, tokens/s | {seq['vs_plain']:.2f}x | >= 2x | "
                     f"{'yes' if seq['vs_plain'] >= 2 else '**no**'} |")
        if seq.get("of_peak") is not None:
            lines.append(f"| 8B seqcls: engine, FLOPs run / dense bf16 peak | {seq['of_peak']:.1%} | >= 40% | "
                         f"{'yes' if seq['of_peak'] >= 0.4 else '**no**'} |")
    for model in ("8b implicit", "8b implicit, long prompts"):
        forced, whole = get(model, "rmbench engine, prompt KV reuse forced"), get(model,
                                                                                  "rmbench engine, no prompt KV reuse")
        auto = get(model, "rmbench engine")
        if forced is not None and whole is not None:
            lines.append(f"| {model.replace('8b', '8B')}: prompt KV reuse speed-up (no reuse / reuse forced; the "
                         f"engine's own plan: {whole['seconds'] / auto['seconds']:.2f}x) | "
                         f"{whole['seconds'] / forced['seconds']:.2f}x | measured | - |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="tiny shapes on the CPU (the benchmark's own test)")
    ap.add_argument("--shapes", default=None, help="comma-separated: 1b,8b (default) or tiny (--tiny)")
    ap.add_argument("--families", default="seqcls,implicit")
    ap.add_argument("--groups", type=int, default=None, help="groups of 4 answers (default 512; --tiny: 6)")
    ap.add_argument("--json", type=Path, default=None, help="also write every row as JSON here")
    ap.add_argument("--write", action="store_true", help="write the GPU section of bench/RESULTS.md")
    args = ap.parse_args(argv)
    import torch
    import transformers

    device = "cpu" if args.tiny or not torch.cuda.is_available() else "cuda"
    if device == "cpu" and not args.tiny:
        ap.error("no CUDA device: run with --tiny (tiny shapes on the CPU)")
    shapes = (args.shapes or ("tiny" if args.tiny else "1b,8b")).split(",")
    n_groups = args.groups or (6 if args.tiny else 512)
    dtype_name = "bfloat16" if device == "cuda" else "float32"
    t_start = time.perf_counter()
    prompts, answers = shipped_texts()
    tok = build_tokenizer(prompts + answers, 512 if args.tiny else 8192)
    groups = workload(tok, n_groups)
    name, peak, probe = chip(device)
    print(f"{name}: datasheet bf16 peak {fmt(peak and peak / 1e12, '.0f')} TFLOP/s, matmul probe "
          f"{fmt(probe and probe / 1e12, '.0f')} TFLOP/s; {n_groups} groups", flush=True)
    rows, extra = [], []

    def report(row):
        print(json.dumps(row), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        for shape in shapes:
            for family in args.families.split(","):
                out = measure(shape, family, groups, tok, Path(tmp), device, dtype_name, probe, peak, report,
                              force_reuse=shape == shapes[-1])
                rows += out["rows"]
                extra.append(f"{shape} {family}: weights built in {out['build_s']:.1f} s, ran with {out['ran_with']}")
        if "implicit" in args.families.split(","):  # where the prompt KV reuse has most to save
            shape = shapes[-1]
            long = workload(tok, max(n_groups // 4, 2), seed=1, prompt_draws=8)
            out = measure(shape, "implicit", long, tok, Path(tmp), device, dtype_name, probe, peak, report,
                          label=f"{shape} implicit, long prompts", with_plain=False)
            rows += out["rows"]
    minutes = (time.perf_counter() - t_start) / 60
    tbl, tgt = table(rows), targets(rows)
    n_texts = sum(len(g.responses) for g in groups)
    lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for g in groups for t in [g.prompt, *g.responses]]
    facts = (f"Workload: {n_groups} groups x 4 answers ({n_texts} texts, {sum(lengths):,} content tokens before the "
             f"chat template; prompt and answer lengths drawn from the shipped tasks'); 'long prompts': "
             f"{max(n_groups // 4, 2)} groups whose prompts are as long as 8 drawn prompts together, the engine's "
             f"plans only (rewards compared with the plan without reuse). " + "; ".join(extra)
             + f". Whole run: {minutes:.1f} min.")
    print(tbl, tgt, facts, sep="\n\n")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "facts": facts}, indent=1))
    if args.write:
        cuda = torch.version.cuda or "none"
        write_section("gpu", f"## On a GPU (issue 37)\n\nCommand: `python -m bench.gpu --write`\n\n"
                      f"Machine: {name} (torch {torch.__version__}, CUDA {cuda}, transformers "
                      f"{transformers.__version__}), {machine_line()}. Random weights of real shapes, {dtype_name}, no "
                      "score cache, each contender once after a warm-up (the engine on the whole workload, the others "
                      "on 8 groups), all in one run. FLOPs run: "
                      f"2 x non-embedding parameters x tokens run (padding excluded; prompts once per batch where the "
                      f"engine reuses their KV cache) + causal attention + the LM head where it runs; peak: the "
                      f"datasheet's dense bf16 figure, probe: an 8192^3 bf16 matmul measured in this run. "
                      f"Rewards vs plain loop: bf16 rounds differently per batch shape.\n\n{tbl}\n\n{tgt}\n\n{facts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
