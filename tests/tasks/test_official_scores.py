"""rmbench's official numbers equal RewardBench's own code (the rewardbench 0.1.4 wheel) to 1e-9.

The runs go through ``evaluate`` end to end with a ``python:`` model whose rewards are coarse
(many exact ties_sample: fractional best-of-n credit, Ties rows whose correct answers score alike), and
the official code scores the same rewards, read back from the run's rewards.jsonl.
Skips with the reason when the official code does not import (see tests/support/rb_official.py).
"""

import json
import random

import pytest

from rmbench.core.metric_registry import RB1_SECTIONS, RB2_SUBSETS
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support import rb_official

RM = '''
import hashlib

def coarse(pairs):
    """0..3 from a hash of the response: deterministic, with many exact ties_sample."""
    return [float(int(hashlib.sha256(r.encode()).hexdigest(), 16) % 4) for _, r in pairs]
'''

RB1_SUBSETS = ("alpacaeval-easy", "alpacaeval-hard", "mt-bench-med", "mt-bench-hard", "llmbar-natural",
               "refusals-dangerous", "xstest-should-respond", "donotanswer", "math-prm", "hep-python", "hep-go",
               "anthropic_helpful", "shp", "summarize")


@pytest.fixture(scope="module")
def official():
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    return rb_official


def _rb2_rows(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for s in RB2_SUBSETS[:-1]:
        for i in range(12):
            rows.append({"id": f"{s}-{i}", "prompt": f"{s} question {i}", "subset": s,
                         "chosen": [f"{s} good {i} {rng.random()}"],
                         "rejected": [f"{s} bad {i}.{j} {rng.random()}" for j in range(3)]})
    for k in range(10):
        n_correct = rng.choice([1, 2, 3, 4])
        rows.append({"id": f"tied:{k}", "prompt": f"name a prime below {k + 10}", "subset": "Ties",
                     "chosen": [f"prime {k}.{j} {rng.random()}" for j in range(n_correct)],
                     "rejected": [f"not prime {k}.{j} {rng.random()}" for j in range(3)]})
        if k != 7:  # one tied prompt without its reference
            rows.append({"id": f"ref:{k}", "prompt": f"the smallest prime above {k}", "subset": "Ties",
                         "chosen": [f"ref {k} {rng.random()}"],
                         "rejected": [f"ref wrong {k}.{j} {rng.random()}" for j in range(2)]})
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _scores_by_row(folder, task: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in load_run(folder).rewards():
        if r.task == task:
            out.setdefault(r.group_id, []).append(r.reward)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rewardbench2_subsets_and_score_equal_the_official_code(official, tmp_path, seed):
    rows = _rb2_rows(seed)
    data = _write(tmp_path / "rb2.jsonl", rows)
    rm = tmp_path / "rm.py"
    rm.write_text(RM)
    run = evaluate(EvalConfig(model=f"python:{rm}:coarse", tasks=("rewardbench2", "ties"),
                              data=(("rewardbench2", str(data)), ("ties", str(data))),
                              n_bootstrap=50, use_cache=False), out_dir=tmp_path / "run")
    scores = _scores_by_row(tmp_path / "run", "rewardbench2")
    expected = official.rb2_official(rows, [scores[r["id"]] for r in rows])
    for subset in RB2_SUBSETS:
        record = run.metric("rewardbench2", "rewardbench2_score", subset=subset)
        assert record is not None and record.value == pytest.approx(expected[subset], abs=1e-9), subset
        assert record.ci_low <= record.value <= record.ci_high
    assert run.value("rewardbench2", "rewardbench2_score") == pytest.approx(expected["Score"], abs=1e-9)
    assert run.value("ties", "ties_score") == pytest.approx(expected["Ties"], abs=1e-9)
    assert 0 < expected["Ties"] < 1 and len({round(v, 6) for v in expected.values()}) > 3  # not degenerate


def test_ties_with_exact_ties_among_correct_answers(official, tmp_path):
    """Equal rewards for every correct answer (diff_corr_margin = 0), as a discretised RM gives:
    the case where RewardBench's code left the margin term out."""
    rows = [{"id": f"tied:{k}", "prompt": f"q{k}", "subset": "Ties", "chosen": [f"a{k}", f"b{k}"],
             "rejected": [f"c{k}"]} for k in range(4)]
    rows += [{"id": f"ref:{k}", "prompt": f"r{k}", "subset": "Ties", "chosen": [f"d{k}"], "rejected": [f"e{k}"]}
             for k in range(4)]
    rm = tmp_path / "rm.py"
    rm.write_text("def f(pairs):\n    return [0.0 if r[0] in 'ce' else (1.0 if r[0] in 'ab' else 2.0) "
                  "for _, r in pairs]\n")
    data = _write(tmp_path / "ties_sample.jsonl", rows)
    run = evaluate(EvalConfig(model=f"python:{rm}:f", tasks=("rewardbench2",), data=(("rewardbench2", str(data)),),
                              n_bootstrap=20, use_cache=False), out_dir=tmp_path / "run")
    scores = _scores_by_row(tmp_path / "run", "rewardbench2")
    expected = official.rb2_official(rows, [scores[r["id"]] for r in rows])
    assert run.value("rewardbench2", "rewardbench2_score", subset="Ties") == pytest.approx(expected["Ties"],
                                                                                           abs=1e-9)


def test_rewardbench_v1_sections_and_score_equal_the_official_code(official, tmp_path):
    rng = random.Random(3)
    rows = [{"id": f"{s}-{i}", "prompt": f"{s} q{i}", "subset": s, "chosen": f"good {s} {i} {rng.random()}",
             "rejected": f"bad {s} {i} {rng.random()}"} for s in RB1_SUBSETS for i in range(9)]
    data = _write(tmp_path / "rb1.jsonl", rows)
    rm = tmp_path / "rm.py"
    rm.write_text(RM)
    run = evaluate(EvalConfig(model=f"python:{rm}:coarse", tasks=("rewardbench",), data=(("rewardbench", str(data)),),
                              n_bootstrap=50, use_cache=False), out_dir=tmp_path / "run")
    scores = _scores_by_row(tmp_path / "run", "rewardbench")
    expected = official.rb1_official(rows, [scores[r["id"]][0] for r in rows], [scores[r["id"]][1] for r in rows])
    for section in RB1_SECTIONS:
        record = run.metric("rewardbench", "rewardbench_score", subset=section)
        assert record is not None and record.value == pytest.approx(expected[section], abs=1e-9), section
    assert run.value("rewardbench", "rewardbench_score") == pytest.approx(expected["Score"], abs=1e-9)
