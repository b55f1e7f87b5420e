"""Golden runs: fixed evaluations whose metrics and rewards must stay bit-equal across refactors.

Each case writes its own data (seeded, in the task's schema) and evaluates python RMs through
:func:`rmbench.evaluate_models`, as ``rmbench eval`` does. ``python -m tests.support.golden_runs`` (from the
repository root) records them under ``tests/golden/cases/CASE/`` (``metrics.json``: every metric
record of results.json; ``rewards.jsonl``: every reward); ``tests/project/test_golden_runs.py`` reruns
each case and compares, float for float.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

GOLDEN = Path(__file__).parents[1] / "golden" / "cases"
HERE = Path(__file__).resolve()
N_BOOTSTRAP = 200
KEPT = ("name", "version", "data_fingerprint", "comparability_key", "counts", "sigma", "metrics")
"""What is compared of each task of results.json."""


def hashed(pairs):
    """A python RM with ties and spread: a digit of each response's sha256, halved, plus a length term."""
    return [int(hashlib.sha256(r.encode()).hexdigest()[0], 16) % 5 / 2 + 0.01 * min(len(r), 40) for _, r in pairs]


MODELS = ("length", f"python:{HERE}:hashed")


def _words(rng: random.Random, n: int) -> str:
    vocab = ["alpha", "beta", "gamma", "delta", "answer", "the", "is", "yes", "no", "because", "x", "42"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def _write_lines(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rb2_rows(rng: random.Random, subsets: tuple[str, ...]) -> list[dict]:
    rows = []
    for i in range(60):
        subset = subsets[i % len(subsets)]
        if subset == "Ties":
            kind = "tied" if i % 2 else "ref"
            n_ok = rng.randint(1, 3) if kind == "tied" else 1
            rows.append({"id": f"{kind}:{i}", "prompt": _words(rng, 6), "subset": "Ties",
                         "chosen": [_words(rng, rng.randint(1, 12)) for _ in range(n_ok)],
                         "rejected": [_words(rng, rng.randint(1, 12)) for _ in range(rng.randint(1, 4))]})
        else:
            rows.append({"id": str(i), "prompt": _words(rng, 6), "subset": subset,
                         "chosen": [_words(rng, rng.randint(1, 12))],
                         "rejected": [_words(rng, rng.randint(1, 12)) for _ in range(3)]})
    return rows


def _rm_bench_rows(rng: random.Random) -> list[dict]:
    domains = ("chat", "math", "code", "safety-refuse")
    return [{"id": i, "prompt": _words(rng, 5), "domain": domains[i % 4],
             "chosen": [_words(rng, rng.randint(2, 14)) for _ in range(3)],
             "rejected": [_words(rng, rng.randint(2, 14)) for _ in range(3)]} for i in range(24)]


def cases(data_dir: Path) -> dict[str, dict]:
    """Each case: ``tasks`` and ``data`` (task, path) pairs written under ``data_dir``."""
    rng = random.Random(20261205)
    rb2 = _write_lines(data_dir / "rb2.jsonl",
                       _rb2_rows(rng, ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")))
    ties = _write_lines(data_dir / "ties.jsonl", _rb2_rows(rng, ("Ties",)))
    rm_bench = _write_lines(data_dir / "rm_bench.jsonl", _rm_bench_rows(rng))
    return {
        "main_job": {"tasks": ("ties_sample",), "data": ()},
        "ties": {"tasks": ("ties",), "data": (("ties", ties),)},
        "rewardbench2": {"tasks": ("rewardbench2",), "data": (("rewardbench2", rb2),)},
        "rm_bench": {"tasks": ("rm_bench",), "data": (("rm_bench", rm_bench),)},
        "token_shift": {"tasks": ("token_shift_sample",), "data": ()},
        "paraphrase_invariance": {"tasks": ("paraphrase_invariance_sample",), "data": ()},
    }


def run_case(case: dict, out: Path) -> dict[str, tuple[list, list]]:
    """Evaluate the case's models into ``out``: per model, (metric records, reward rows) as written."""
    from rmbench.scoring.runner import EvalConfig
    from rmbench.scoring.suite import evaluate_models

    configs = [EvalConfig(model=m, tasks=case["tasks"], data=case["data"], n_bootstrap=N_BOOTSTRAP, use_cache=False)
               for m in MODELS]
    suite = evaluate_models(configs, out=out)
    found = {}
    for model, run_dir in zip(("length", "hashed"), suite.plan.run_dirs):
        results = json.loads((Path(run_dir) / "results.json").read_text())
        metrics = [{k: t[k] for k in KEPT} for t in results["tasks"]]
        rewards = [json.loads(line) for line in (Path(run_dir) / "rewards.jsonl").read_text().splitlines()]
        found[model] = (metrics, rewards)
    return found


def record(names: list[str] | None = None) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        all_cases = cases(Path(tmp))
        for name in names or list(all_cases):
            found = run_case(all_cases[name], Path(tmp) / "out" / name)
            folder = GOLDEN / name
            folder.mkdir(parents=True, exist_ok=True)
            for model, (metrics, rewards) in found.items():
                (folder / f"{model}.metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
                (folder / f"{model}.rewards.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rewards))
            print(f"recorded {name}")


if __name__ == "__main__":
    record(sys.argv[1:] or None)
