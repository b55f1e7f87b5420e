"""Reproduction 3 of arXiv 2507.07981 at small scale: token-level and domain shift on real pairs.

Train an EX-RM and an IM-RM from SmolLM2-135M-Instruct on original UltraFeedback pairs (the
``orig_chosen``/``orig_rejected`` columns of the paper's rewritten training files), then evaluate
both on held-out pairs in four forms (original, paraphrased, French, Spanish; the same held-out
pairs, so each shifted accuracy pairs with its original) and on the domain-shift sets
(RewardBench math-prm, RewardBench hep-* code, RewardMATH). Needs ../shared/data/exrm-vs-imrm.

Paper (UltraFeedback-trained, several 1B-8B models): EX 0.752 vs IM 0.646 in distribution,
0.665 vs 0.602 under token shift, 0.621 vs 0.720 under domain shift.

    python reproductions/token_shift_ultrafeedback.py --out reproductions/token_shift_ultrafeedback
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
from common import SHARED, cell, machine_line, metrics, score, tqdm_progress

from rmbench.core.types import ComparisonGroup, data_fingerprint
from rmbench.models import Runtime
from rmbench.tasks.base import units_by_source
from rmbench.tasks.jsonl import PreferenceTask
from rmbench.tasks.shift import PairedShiftTask
from rmbench.train.trainer import TrainConfig, train_one

DATA = SHARED / "exrm-vs-imrm"
LEADERBOARD = Path(__file__).resolve().parents[1] / "leaderboards" / "token_shift_ultrafeedback.md"
SHIFTS = {"paraphrase": "paraphrase_train.jsonl", "translation:fr": "translate_french_train.jsonl",
          "translation:es": "translate_spanish_train.jsonl"}
DOMAINS = {"math": "rewardbench_math_train.jsonl", "code": "rewardbench_code_train.jsonl",
           "rewardmath": "rewardmath_train.jsonl"}
SETTINGS = [("none", "original (in distribution)"), ("paraphrase", "paraphrased"), ("translation:fr", "French"),
            ("translation:es", "Spanish"), ("domain:math", "RewardBench math"), ("domain:code", "RewardBench code"),
            ("domain:rewardmath", "RewardMATH")]
PAPER = {"in distribution": (0.752, 0.646), "token shift": (0.665, 0.602), "domain shift": (0.621, 0.720)}


def load(n_train: int, n_test: int, n_domain: int, seed: int):
    """(train originals, test groups: originals + shifted copies, domain groups)."""
    groups = list(PairedShiftTask(paths={k: str(DATA / f) for k, f in SHIFTS.items()}).groups())
    originals = sorted(g.id for g in groups if g.shift is None)
    random.Random(seed).shuffle(originals)
    train_ids, test_ids = set(originals[:n_train]), set(originals[n_train:n_train + n_test])
    train = [g for g in groups if g.id in train_ids]
    test = [g for g in groups if (g.source_id or g.id) in test_ids]
    domain = []
    for name, f in DOMAINS.items():
        rows = list(PreferenceTask(path=str(DATA / f)).groups())
        if len(rows) > n_domain:
            rows = random.Random(seed).sample(rows, n_domain)
        domain += [ComparisonGroup(f"{name}:{g.id}", g.prompt, g.responses, g.utilities, subset=name,
                                   shift=f"domain:{name}") for g in rows]
    return train, test, domain


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="reproductions/token_shift_ultrafeedback")
    ap.add_argument("--n-train", type=int, default=120, help="original pairs to train on (of 200)")
    ap.add_argument("--n-test", type=int, default=80, help="held-out original pairs (each in four forms)")
    ap.add_argument("--n-domain", type=int, default=60, help="pairs per domain set at most")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--head-lr", type=float, default=1e-3, help="EX-RM head learning rate (it starts at zero)")
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--max-length", type=int, default=384)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not DATA.is_dir():
        sys.exit(f"this reproduction needs {DATA} (the paper's rewritten UltraFeedback pairs)")
    t0 = time.time()
    out = Path(args.out)
    train, test, domain = load(args.n_train, args.n_test, args.n_domain, args.seed)
    evaluation = test + domain
    config = TrainConfig(base="smollm2-135m-instruct", epochs=args.epochs, lr=args.lr, beta=args.beta,
                         batch_size=4, seed=args.seed, max_length=args.max_length, head_lr=args.head_lr)
    runtime = Runtime()  # scoring: bf16 where the CPU has bf16 units
    cards, results, timings = {}, {}, {}
    units = units_by_source(evaluation)
    for kind in ("ex", "im"):
        t = time.time()
        cards[kind] = train_one(kind, config, train, out / "models" / kind, tqdm_progress)
        timings[f"train {kind}"] = time.time() - t
        t = time.time()
        rewards = score(out / "models" / kind, evaluation, runtime)
        timings[f"eval {kind}"] = time.time() - t
        results[kind] = metrics("token_shift_ultrafeedback", evaluation, rewards, units)
    minutes = (time.time() - t0) / 60

    def acc(kind, shift):
        return results[kind].get((shift, "pairwise_accuracy", None))

    def gap(kind, shift):
        return results[kind].get((shift, "pairwise_accuracy_shift_gap", None))

    def mean_acc(kind, shifts):
        return float(np.mean([acc(kind, s).value for s in shifts]))

    n = {s: acc("ex", s).n for s, _ in SETTINGS}
    rows = ["| setting | pairs | EX-RM accuracy | IM-RM accuracy | EX gap vs original | IM gap vs original |",
            "|---|---|---|---|---|---|"]
    for shift, label in SETTINGS:
        rows.append(f"| {label} | {n[shift]} | {cell(acc('ex', shift))} | {cell(acc('im', shift))} | "
                    f"{cell(gap('ex', shift))} | {cell(gap('im', shift))} |")
    token = ["paraphrase", "translation:fr", "translation:es"]
    dom = ["domain:math", "domain:code", "domain:rewardmath"]
    ours = {"in distribution": (acc("ex", "none").value, acc("im", "none").value),
            "token shift": (mean_acc("ex", token), mean_acc("im", token)),
            "domain shift": (mean_acc("ex", dom), mean_acc("im", dom))}
    summary = ["| setting | EX-RM here | IM-RM here | EX-RM paper | IM-RM paper | same order? |",
               "|---|---|---|---|---|---|"]
    for k, (ex, im) in ours.items():
        pex, pim = PAPER[k]
        summary.append(f"| {k} | {ex:.3f} | {im:.3f} | {pex:.3f} | {pim:.3f} | "
                       f"{'yes' if (ex > im) == (pex > pim) else 'no'} |")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    x = np.arange(len(SETTINGS))
    for k, (kind, color) in enumerate((("ex", "tab:blue"), ("im", "tab:orange"))):
        recs = [acc(kind, s) for s, _ in SETTINGS]
        vals = np.array([r.value for r in recs])
        err = np.array([[r.value - r.ci_low, r.ci_high - r.value] for r in recs]).T
        ax.bar(x + (k - 0.5) * 0.38, vals, 0.38, yerr=err, capsize=2, label=f"{kind.upper()}-RM", color=color)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, [label.replace(" (in distribution)", "\n(in dist.)").replace("RewardBench ", "RB ")
                      for _, label in SETTINGS], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("pairwise accuracy (95% CI)")
    ax.set_title("SmolLM2-135M trained on UltraFeedback pairs: token and domain shift")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)

    command = (f"python reproductions/token_shift_ultrafeedback.py --out {args.out} --n-train {args.n_train} --n-test "
               f"{args.n_test} "
               f"--n-domain {args.n_domain} --epochs {args.epochs} --lr {args.lr} --head-lr {args.head_lr} --beta "
               f"{args.beta} "
               f"--max-length {args.max_length} --seed {args.seed}")
    n_test = sum(1 for g in test if g.shift is None)
    report = f"""# Token and domain shift on UltraFeedback pairs (arXiv 2507.07981, reproduction 3, small scale)

Command: `{command}`

- Data: `../shared/data/exrm-vs-imrm/` (the paper's rewritten UltraFeedback training files). Of the 200
  original pairs, {len(train)} (seeded shuffle, seed {args.seed}) train both RMs on their *original*
  `orig_chosen`/`orig_rejected`; the other {n_test} are the test set, each in four forms: original,
  paraphrased (gpt-4.1), French, Spanish. Domain shift: RewardBench math-prm ({n['domain:math']} pairs),
  RewardBench hep-* code ({n['domain:code']}), RewardMATH ({n['domain:rewardmath']} of 2000, seeded sample).
- Training data fingerprint: {data_fingerprint(train)}.
- Base: SmolLM2-135M-Instruct (embedded GGUF, de-quantised), full fine-tuning in float32, batch 4 pairs,
  lr {args.lr} (the EX-RM's zero-initialised head: {args.head_lr}), beta {args.beta} (IM), {args.epochs} epoch(s), max \
length {args.max_length} tokens
  (left truncation keeps the response), seed {args.seed}.
  Loss per epoch: EX {', '.join(f'{x:.4f}' for x in cards['ex']['loss_per_epoch'])};
  IM {', '.join(f'{x:.4f}' for x in cards['im']['loss_per_epoch'])}.
- Time: {minutes:.1f} minutes in all ({', '.join(f'{k} {v / 60:.1f}' for k, v in timings.items())} min) on
  {machine_line(runtime)}.

## Accuracy per evaluation setting

{chr(10).join(rows)}

Cells: value [95% bootstrap CI]. Test pairs and their shifted copies resample together, so the gaps
are paired.

## Against the paper

{chr(10).join(summary)}

"token shift" here is the mean of the paraphrased, French and Spanish accuracies; "domain shift" the
mean of the three domain sets.

![accuracy](accuracy.png)
"""
    (out / "REPORT.md").write_text(report)
    LEADERBOARD.write_text(f"# EX-RM vs IM-RM from SmolLM2-135M-Instruct, trained on {len(train)} UltraFeedback "
                           "pairs\n\n"
                           f"From `{command}` (report: `reproductions/{out.name}/REPORT.md`).\n\n"
                           + "\n".join(rows) + "\n\n" + "\n".join(summary) + "\n")
    (out / "results.json").write_text(json.dumps(
        {"command": command, "minutes": minutes, "timings_s": timings, "cards": cards,
         "metrics": {kind: [r.to_json() for r in res.values()] for kind, res in results.items()}}, indent=2))
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
