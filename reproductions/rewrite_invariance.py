"""Rewrite invariance: specificity across meaning-preserving rewrites (beyond both papers).

Does an RM give the same reward to the same answer written differently? Razin et al. (arXiv
2507.07981) predict that an IM-RM, which leans on surface tokens, does so less than an EX-RM
trained alike; Viswanathan et al. (arXiv 2606.21795) that MC-dropout discretisation raises
specificity. This script measures both on three rewrite sets with the ``rewrite_invariance``
task kind:

* ``paraphrase_invariance``: the built-in 64 pairs and their paraphrases;
* ``ties_style``: the built-in Ties answers (each row's first correct vs first incorrect answer)
  with offline style rewrites (``rmbench shift --rewriter style:...``);
* ``paper_paraphrase``: the paper's ``paraphrase_train.jsonl`` as it is (``--paper-limit`` pairs),
  when ``../shared/data/exrm-vs-imrm/`` is present.

Models: the embedded presets (implicit sum, implicit mean, generative, discretised) and an EX-RM
and an IM-RM trained as ``persona_paraphrase.py`` trains them (shorter: ``--epochs``), plus the
IM-RM discretised. Writes REPORT.md (table, plot, command, time), results.json and a PNG.

    python reproductions/rewrite_invariance.py --out reproductions/rewrite_invariance
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import yaml
from common import SHARED
from persona_paraphrase import SHARED as PERSONA
from persona_paraphrase import diagonal_pairs

from rmbench.catalog import builtin_tasks_dir
from rmbench.core.metric_registry import metric_def
from rmbench.files import safe_file_name
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.storage.folder import load_run
from rmbench.rewrite.shift import write_shifted
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.persona import PersonaTask
from rmbench.train.trainer import TrainConfig, train_one

PRESETS = ("smollm2-135m", "smollm2-135m-avg", "smollm2-135m-gen", "smollm2-135m-discrete")
STYLES = ("style:polite", "style:plain-to-markdown")
COLUMNS = ("ds_auc", "rewrite_specificity", "within_form_discrimination", "cross_form_discrimination",
           "cross_form_gap", "preference_flip_rate", "length_correlation")


def ties_pairs(path: Path) -> Path:
    """One preference pair per built-in Ties row: its first correct against its first incorrect answer."""
    rows = [json.loads(line) for line in (builtin_tasks_dir() / "data" / "ties_builtin.jsonl").open()]
    pairs = [{"id": r["id"], "prompt": r["prompt"], "chosen": r["chosen"][0], "rejected": r["rejected"][0]}
             for r in rows]
    path.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    return path


def write_tasks(out: Path, paper_limit: int) -> list[str]:
    """The style-rewritten Ties set and the include entries of the three tasks; their names."""
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    pairs = ties_pairs(data / "ties_pairs.jsonl")
    paths = {}
    for style in STYLES:
        paths[style] = str(write_shifted(str(pairs), data / f"ties_{style.split(':')[1]}.jsonl", style,
                                         style).resolve())
    entries = {"ties_style": {"kind": "rewrite_invariance", "args": {"paths": paths},
                              "description": "built-in Ties answers vs their offline style rewrites"}}
    paper = SHARED / "exrm-vs-imrm" / "paraphrase_train.jsonl"
    if paper.is_file():
        rows = paper.read_text().splitlines()[:paper_limit]
        (data / "paper_paraphrase.jsonl").write_text("\n".join(rows) + "\n")
        entries["paper_paraphrase"] = {"kind": "rewrite_invariance",
                                       "args": {"path": str((data / "paper_paraphrase.jsonl").resolve()),
                                                "shift": "paraphrase"},
                                       "description": f"first {paper_limit} pairs of the paper's paraphrase_train"}
    include = out / "entries"
    include.mkdir(exist_ok=True)
    for name, entry in entries.items():
        (include / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, "version": 1, **entry}))
    return ["paraphrase_invariance", *entries]


def train_models(out: Path, epochs: int, seed: int) -> dict[str, Path]:
    """EX-RM and IM-RM from SmolLM2-135M-Instruct on the persona pairs, as persona_paraphrase.py trains them
    (trained once: a folder with its card is reused)."""
    path = PERSONA if PERSONA.is_file() else builtin_tasks_dir() / "data" / "persona" / "agreeableness_builtin.jsonl"
    n_train, n_test = (80, 40) if PERSONA.is_file() else (26, 14)
    train = list(PersonaTask(path=str(path), split="train", n_train=n_train, n_test=n_test, seed=seed).groups())
    pairs = diagonal_pairs([g for g in train if g.shift is None])
    config = TrainConfig(base="smollm2-135m-instruct", epochs=epochs, lr=2e-5, beta=0.1, batch_size=8, seed=seed,
                         max_length=256)
    folders = {}
    for kind in ("ex", "im"):
        folders[kind] = out / "models" / kind
        if not (folders[kind] / "card.json").is_file():  # trained by an earlier run: kept
            train_one(kind, config, pairs, folders[kind])
    return folders


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="reproductions/rewrite_invariance")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--paper-limit", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    out = Path(args.out)
    tasks = write_tasks(out, args.paper_limit)
    trained = train_models(out, args.epochs, args.seed)
    t_train = time.time() - t0
    models = [*PRESETS, str(trained["ex"]), str(trained["im"]), f"discretize:{trained['im']}"]
    records = []
    for model in models:
        folder = out / "runs" / safe_file_name(model.replace(str(out) + "/", ""))
        records.append(evaluate(EvalConfig(model=model, tasks=tuple(tasks), include=(str(out / "entries"),),
                                           seed=args.seed), out_dir=folder, overwrite=True))
        print(f"{model}: done at {time.time() - t0:.0f} s", flush=True)
    minutes = (time.time() - t0) / 60
    board = render(build_leaderboard([load_run(out / "runs" / safe_file_name(m.replace(str(out) + "/", "")))
                                      for m in models]), "md")
    (out / "leaderboard.md").write_text(board)
    results = {short(rec.model.name): {f"{m.task}/{m.metric}" + ("" if m.eps is None else f"@{m.eps:g}"): m.value
                                       for m in rec.records() if m.subset is None and m.shift is None
                                       and m.metric in COLUMNS}
               for rec in records}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    plot(out, records, tasks)
    write_report(out, args, table(records, tasks), minutes, t_train)
    return 0


def table(records, tasks) -> str:
    """Rows (task, model), columns the invariance metrics at eps 0.1 sigma, value [95% CI]."""
    labels = [metric_def(m).label + ("@0.1σ" if metric_def(m).eps_dependent else "") for m in COLUMNS]
    rows = ["| task | model | " + " | ".join(labels) + " |", "|---|---|" + "---|" * len(COLUMNS)]
    for task in tasks:
        for rec in records:
            cells = []
            for m in COLUMNS:
                r = rec.metric(task, m, eps=0.1 if metric_def(m).eps_dependent else None)
                cells.append("-" if r is None else r.estimate.format(3))
            rows.append(f"| {task} | {short(rec.model.name)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(out: Path, records, tasks) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.8), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, task in zip(axes, tasks):
        for k, metric in enumerate(("rewrite_specificity", "cross_form_discrimination")):
            vals, lows, highs = [], [], []
            for rec in records:
                m = rec.metric(task, metric, eps=0.1)
                vals.append(m.value)
                lows.append(m.value - (m.ci_low if m.ci_low is not None else m.value))
                highs.append((m.ci_high if m.ci_high is not None else m.value) - m.value)
            x = np.arange(len(records)) + (k - 0.5) * 0.38
            ax.bar(x, vals, 0.38, yerr=[lows, highs], capsize=2,
                   label="Spec across rewrites @0.1σ" if k == 0 else "D across forms @0.1σ")
        ax.set_xticks(np.arange(len(records)), [short(r.model.name) for r in records], rotation=45, ha="right",
                      fontsize=8)
        ax.set_title(task, fontsize=10)
        ax.set_ylim(0, 1.05)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "invariance.png", dpi=120)


def short(model: str) -> str:
    if model.startswith("discretize:"):
        return "IM-RM discretised"
    name = Path(model).name
    return {"ex": "EX-RM (trained)", "im": "IM-RM (trained)"}.get(name, name.replace("smollm2-135m", "smol"))


def write_report(out: Path, args, table: str, minutes: float, t_train: float) -> None:
    import torch
    import transformers

    report = f"""# Rewrite invariance: specificity across meaning-preserving rewrites

Command: `python reproductions/rewrite_invariance.py --out {args.out} --epochs {args.epochs} --paper-limit \
{args.paper_limit}`
Time: {minutes:.1f} minutes in all ({t_train / 60:.1f} of them training) on {platform.machine()} \
({torch.get_num_threads()}
threads), torch {torch.__version__}, transformers {transformers.__version__}; seed {args.seed}.

{table}

![invariance](invariance.png)
"""
    (out / "REPORT.md").write_text(report)
    print(report)


if __name__ == "__main__":
    raise SystemExit(main())
