"""The D/Spec leaderboard of a whole RewardBench 2 results dataset, replayed (``published:``).

Builds, in a work folder, what the recipe of docs/how-to/published.md works on, at the real
sizes: a RewardBench 2 data file of 1,865 rows (the official subset sizes: Factuality 475,
Precise IF 160, Math 183, Safety 450, Focus 495, Ties 102 as 51 ref:K / tied:K prompt pairs;
best-of-4 rows, Ties rows with 4 or 1 correct answers among 12 or 9) and, for each of ``--models``
synthetic models, its ``eval-set-scores/{org}/{model}.json`` laid out as RewardBench 2's
``run_v2.py`` writes it (``Dataset.to_dict()`` of the scored rows with the chat-template ``text``
of every completion, ``json.dumps(..., indent=4, sort_keys=True)``), in a hub cache
(``HF_HUB_CACHE``) as ``hf download`` leaves it. Then it times the one command, offline:

    rmbench eval --model-list models.txt --tasks rewardbench2 --data rewardbench2=rb2.jsonl --out runs

(bootstrap 1000, a fresh score cache), and prints the wall time and per model.

    python -m bench.published --models 120 --write
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.results import machine_line, write_section

SIZES = {"Factuality": 475, "Precise IF": 160, "Math": 183, "Safety": 450, "Focus": 495}
TIES_PROMPTS = 51  # 102 rows: ref:K and tied:K
COMMIT = "0" * 40
WORDS = ("the answer is", "because", "we compute", "so that", "therefore", "in summary", "note that", "step")


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS) + f" {rng.randint(0, 999)}")
    return " ".join(words)


def rb2_rows(chars: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for subset, n in SIZES.items():
        for i in range(n):
            rows.append({"id": f"{subset}-{i}", "prompt": _text(rng, chars // 3), "subset": subset,
                         "chosen": [_text(rng, chars)], "rejected": [_text(rng, chars) for _ in range(3)]})
    for k in range(TIES_PROMPTS):
        rows.append({"id": f"tied:{k}", "prompt": _text(rng, 80), "subset": "Ties",
                     "chosen": [_text(rng, 40) for _ in range(4)], "rejected": [_text(rng, 40) for _ in range(8)]})
        rows.append({"id": f"ref:{k}", "prompt": _text(rng, 80), "subset": "Ties",
                     "chosen": [_text(rng, 40)], "rejected": [_text(rng, 40) for _ in range(8)]})
    return rows


def scores_file(rows: list[dict], texts: list[list[str]], model: str, rng: random.Random) -> str:
    """One model's eval-set-scores file, in run_v2.py's layout (columns of the rerolled dataset)."""
    skill = rng.uniform(0.0, 1.5)
    scores = [[rng.gauss(skill if j < len(r["chosen"]) else 0.0, 1.0) for j in range(len(t))]
              for r, t in zip(rows, texts)]
    results = [(1 / sum(x == max(s) for x in s)) if s[0] == max(s) else 0 for s in scores]
    doc = {"id": [r["id"] for r in rows], "subset": [r["subset"] for r in rows], "text": texts, "scores": scores,
           "results": results, "num_correct": [len(r["chosen"]) for r in rows], "model": model,
           "model_type": "Seq. Classifier", "chat_template": "tokenizer"}
    return json.dumps(doc, indent=4, sort_keys=True)


def build(work: Path, n_models: int, chars: int) -> Path:
    rows = rb2_rows(chars)
    (work / "rb2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    texts = [[f"<|user|>\n{r['prompt']}\n<|assistant|>\n{c}<|end|>" for c in r["chosen"] + r["rejected"]] for r in rows]
    snapshot = work / "hub" / "datasets--allenai--reward-bench-2-results" / "snapshots" / COMMIT
    rng = random.Random(1)
    names = []
    for i in range(n_models):
        model = f"org{i % 17}/reward-model-{i}"
        path = snapshot / "eval-set-scores" / f"{model}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scores_file(rows, texts, model, rng), encoding="utf-8")
        names.append(model)
    refs = snapshot.parents[1] / "refs"
    refs.mkdir(parents=True, exist_ok=True)
    (refs / "main").write_text(COMMIT)
    models = work / "models.txt"
    models.write_text("# every model of the results dataset\n"
                      + "".join(f"published:rewardbench2:{m}\n" for m in names), encoding="utf-8")
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=120)
    parser.add_argument("--chars", type=int, default=1200, help="characters per completion (the prompt: a third)")
    parser.add_argument("--work", type=Path, default=None, help="work folder (default: a temporary one)")
    parser.add_argument("--write", action="store_true", help="record the result in bench/RESULTS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rmbench_published_") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        models = build(work, args.models, args.chars)
        built = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in (work / "hub").rglob("*.json")) / args.models / 1e6
        env = {**os.environ, "HF_HUB_CACHE": str(work / "hub"), "HF_HUB_OFFLINE": "1"}
        command = ["eval", "--model-list", str(models), "--tasks", "rewardbench2", "--data",
                   f"rewardbench2={work / 'rb2.jsonl'}", "--out", str(work / "runs"), "--cache-dir",
                   str(work / "cache")]
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "rmbench", *command], env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        if done.returncode:
            sys.exit(done.stderr[-2000:])
        n_runs = len(list((work / "runs").glob("*/results.json")))
    body = (f"## Whole RewardBench 2 results dataset, replayed (`published:`, issue 45)\n\n"
            f"`python -m bench.published --models {args.models} --write`: {args.models} synthetic models' "
            f"eval-set-scores files ({size:.1f} MB each, run_v2.py's layout with its chat-template texts) over a "
            f"1,865-row RewardBench 2 file, in a hub cache, offline; built in {built:.0f} s.\n\n"
            f"| command | models | wall time | per model |\n|---|---:|---:|---:|\n"
            f"| `rmbench eval --model-list models.txt --tasks rewardbench2` (bootstrap 1000) | {n_runs} | "
            f"{seconds:.0f} s | {seconds / max(n_runs, 1):.2f} s |\n\n"
            f"Machine: {machine_line()}.")
    print(body)
    if args.write:
        write_section("published", body)


if __name__ == "__main__":
    main()
