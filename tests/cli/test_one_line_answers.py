"""One clear line for each answer a new user met on real data (issue 32, item 6): a file of
another benchmark given to ``ties``, a misspelt task beside its ``--data``, a RewardBench 2 run
on a file with one subset (RMBENCH_MIRROR as a path: tests/tasks/test_downloads.py)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from rmbench.cli.app import app

runner = CliRunner()


def _eval(tmp_path, *args):
    return runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "0", "--out", str(tmp_path / "run"), *args])


def _error_line(result) -> str:
    """The one line of a user mistake: exit 2, ``error: ...``, no traceback."""
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_an_rm_bench_file_given_to_ties_names_the_task_that_reads_it(tmp_path):
    rows = [{"id": i, "prompt": f"q{i}", "chosen": ["a", "b", "c"], "rejected": ["d", "e", "f"], "domain": "chat"}
            for i in range(3)]
    (tmp_path / "chat.json").write_text(json.dumps(rows))
    line = _error_line(_eval(tmp_path, "--tasks", "ties", "--data", f"ties={tmp_path / 'chat.json'}"))
    assert "chat.json, line 1, field 'id'" in line and "no RewardBench 2 Ties row" in line
    assert "--tasks rm_bench" in line
    assert not (tmp_path / "run").exists()


def test_a_file_without_ties_rows_says_which_subsets_it_has(tmp_path):
    rows = [{"id": f"c{i}", "prompt": "q", "chosen": ["a"], "rejected": ["b"], "subset": s}
            for i, s in enumerate(["Math", "Math", "Focus"])]
    (tmp_path / "rb2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = _error_line(_eval(tmp_path, "--tasks", "ties", "--data", f"ties={tmp_path / 'rb2.jsonl'}"))
    assert "none of its 3 rows is a Ties row" in line and "Math (2), Focus (1)" in line and "rewardbench2" in line


def test_a_misspelt_task_beside_its_data_gets_a_did_you_mean(tmp_path):
    (tmp_path / "x.json").write_text("[]")
    line = _error_line(_eval(tmp_path, "--tasks", "rm_bnech", "--data", f"rm_bench={tmp_path / 'x.json'}"))
    assert line.startswith("error: unknown task 'rm_bnech'; did you mean 'rm_bench'")  # the closest first


def test_rewardbench2_on_one_subset_says_its_score_is_not_the_benchmarks(tmp_path):
    rows = [{"id": f"{kind}:{k}", "prompt": f"q{k}", "chosen": ["a", "bb"], "rejected": ["c"], "subset": "Ties"}
            for k in range(3) for kind in ("tied", "ref")]
    (tmp_path / "ties.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = _eval(tmp_path, "--tasks", "rewardbench2", "--data", f"rewardbench2={tmp_path / 'ties.jsonl'}")
    assert result.exit_code == 0, result.output
    assert ("5 of its 6 subset columns have no rows in this data (Factuality, Precise IF, Math, Safety, Focus), so its "
            "Score averages only the subsets present and is not RewardBench 2's score"
            ) in " ".join(result.output.split())
