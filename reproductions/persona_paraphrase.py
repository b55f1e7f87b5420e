"""Reproduction 1 of arXiv 2507.07981 at small scale: the persona paraphrase experiment.

Train an EX-RM and an IM-RM from SmolLM2-135M-Instruct on the persona task's original answer
forms (the paper: IM-RM 1.0 on original answers but ~0.02 on paraphrased ones; EX-RM 1.0 on
both), then report train/test accuracy on original and paraphrased (held-out) forms and the
reward margins. Data: ../shared/data/persona/agreeableness.jsonl (80 train / 40 test Yes
statements) when present, else the built-in set (split the same way, fewer statements).

    python reproductions/persona_paraphrase.py --out reproductions/persona_paraphrase
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from rmbench.catalog import builtin_tasks_dir
from rmbench.core.types import ComparisonGroup
from rmbench.models import Runtime, build_model, parse_model_spec
from rmbench.results.statistics.summary import summarize
from rmbench.scoring.engine import score_groups
from rmbench.tasks.persona import PersonaTask
from rmbench.train.trainer import TrainConfig, train_one

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "persona" / "agreeableness.jsonl"


def diagonal_pairs(groups):
    """4 training pairs per statement: yes form i against no form i (the paper pairs forms)."""
    out = []
    for g in groups:
        yes = [r for r, u in zip(g.responses, g.utilities) if u == 1]
        no = [r for r, u in zip(g.responses, g.utilities) if u == 0]
        for i, (y, n) in enumerate(zip(yes, no)):
            out.append(ComparisonGroup(f"{g.id}#{i}", g.prompt, [y, n], [1, 0]))
    return out


def evaluate(model_dir: Path, groups, runtime) -> dict:
    rm = build_model(parse_model_spec(str(model_dir)), runtime)
    rewards, _ = score_groups(rm, groups, runtime)
    recs = summarize("persona", groups, rewards, (0.0,), group_units=PersonaTask().bootstrap_units(groups),
                     n_bootstrap=500)
    out = {}
    for r in recs:
        if r.subset is None and r.shift in ("none", "paraphrase") and r.metric in ("pairwise_accuracy",
                                                                                   "reward_margin"):
            out[(r.shift, r.metric)] = (r.value, r.ci_low, r.ci_high)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="reproductions/persona_paraphrase")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    out = Path(args.out)
    path = SHARED if SHARED.is_file() else builtin_tasks_dir() / "data" / "persona" / "agreeableness_builtin.jsonl"
    n_train, n_test = (80, 40) if SHARED.is_file() else (26, 14)
    train = list(PersonaTask(path=str(path), split="train", n_train=n_train, n_test=n_test, seed=args.seed).groups())
    test = list(PersonaTask(path=str(path), split="test", n_train=n_train, n_test=n_test, seed=args.seed).groups())
    train_pairs = diagonal_pairs([g for g in train if g.shift is None])
    config = TrainConfig(base="smollm2-135m-instruct", epochs=args.epochs, lr=args.lr, beta=args.beta,
                         batch_size=8, seed=args.seed, max_length=256)
    runtime = Runtime(dtype="float32", device="cpu")
    results, cards = {}, {}
    for kind in ("ex", "im"):
        cards[kind] = train_one(kind, config, train_pairs, out / "models" / kind)
        for split, groups in (("train", train), ("test", test)):
            results[(kind, split)] = evaluate(out / "models" / kind, groups, runtime)
    minutes = (time.time() - t0) / 60

    rows = ["| RM | split | accuracy, original forms | accuracy, paraphrased forms | margin original | margin "
            "paraphrased |",
            "|---|---|---|---|---|---|"]
    for (kind, split), res in results.items():
        def cell(shift, metric, res=res):
            v, lo, hi = res[(shift, metric)]
            return f"{v:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None else f"{v:.3f}"
        rows.append(f"| {kind.upper()}-RM | {split} | {cell('none', 'pairwise_accuracy')} | "
                    f"{cell('paraphrase', 'pairwise_accuracy')} | {cell('none', 'reward_margin')} | "
                    f"{cell('paraphrase', 'reward_margin')} |")
    table = "\n".join(rows)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = ["train\noriginal", "train\nparaphrased", "test\noriginal", "test\nparaphrased"]
    for k, (kind, color) in enumerate((("ex", "tab:blue"), ("im", "tab:orange"))):
        vals = [results[(kind, s)][(sh, "pairwise_accuracy")][0] for s in ("train", "test") for sh in ("none",
                                                                                                       "paraphrase")]
        ax.bar(np.arange(4) + (k - 0.5) * 0.38, vals, 0.38, label=f"{kind.upper()}-RM", color=color)
    ax.set_xticks(np.arange(4), labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pairwise accuracy")
    ax.set_title("Persona: original vs paraphrased answer forms")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)

    import torch
    import transformers

    report = f"""# Persona paraphrase (arXiv 2507.07981, reproduction 1, small scale)

Command: `python reproductions/persona_paraphrase.py --out {args.out} --epochs {args.epochs} --lr {args.lr} --beta \
{args.beta}`
Data: `{path.name}` ({len([g for g in train if g.shift is None])} train / {len([g for g in test if g.shift is None])} \
test Yes statements,
{len(train_pairs)} training pairs: each of the 4 yes forms against one no form). Base: SmolLM2-135M-Instruct
(embedded), full fine-tuning in float32, seed {args.seed}, batch 8 pairs. Time: {minutes:.1f} minutes on
{platform.machine()} ({torch.get_num_threads()} threads), torch {torch.__version__}, transformers \
{transformers.__version__}.
Loss per epoch: EX {cards['ex']['loss_per_epoch']}, IM {cards['im']['loss_per_epoch']}.

{table}

Cells: value [95% bootstrap CI over statements]; margins in units of the reward sd (arXiv 2507.07981).
Paper (Pythia/Qwen/Llama, full training): IM-RM 1.0 on original forms and about 0.02 on paraphrased
ones, EX-RM 1.0 on both.

![accuracy](accuracy.png)
"""
    (out / "REPORT.md").write_text(report)
    (out / "results.json").write_text(json.dumps({f"{k}/{s}": {f"{sh}/{m}": v for (sh, m), v in r.items()}
                                                  for (k, s), r in results.items()}, indent=2))
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
