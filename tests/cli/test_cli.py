import json

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app

runner = CliRunner()


def test_eval_writes_run_and_prints_leaderboard(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "oracle", "--tasks", "ties_sample", "--eps", "0,0.1",
                                 "--bootstrap", "50", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "rmbench leaderboard" in result.output and "oracle" in result.output
    assert {p.name for p in out.iterdir()} == {"results.json", "rewards.jsonl", "leaderboard.md"}
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["eps"] == [0.0, 0.1] and doc["model"]["name"] == "oracle"
    assert "| oracle" in (out / "leaderboard.md").read_text()


def test_user_errors_are_one_line_without_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "tied:0", "prompt": "q", "chosen": ["a"], "rejected": "b"}\n')
    result = runner.invoke(app, ["eval", "--data", f"ties_sample={bad}", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "bad.jsonl, line 1, field 'rejected'" in result.output
    assert "Traceback" not in result.output
    for args, message in ([["eval", "--model", "orcale"], "did you mean 'oracle'"],
                          [["eval", "--eps", "a,b"], "comma-separated numbers"],
                          [["eval", "--data", "ties_sample"], "expected TASK=PATH"],
                          [["leaderboard", "build", str(tmp_path)], "no run folders under it"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, args


def test_lists():
    tasks = runner.invoke(app, ["tasks", "list"])
    assert tasks.exit_code == 0 and "ties_sample" in tasks.output and "rb2_ties" in tasks.output
    models = runner.invoke(app, ["models", "list"])
    assert models.exit_code == 0
    for name in ("oracle", "constant", "length", "python"):
        assert name in models.output


def test_leaderboard_build_all_formats(tmp_path):
    for model in ("oracle", "constant"):
        assert runner.invoke(app,
                             ["eval", "--model", model, "--bootstrap", "20", "--out",
                              str(tmp_path / model)]).exit_code == 0
    for fmt in ("md", "csv", "json", "html"):
        target = tmp_path / f"board.{fmt}"
        result = runner.invoke(app, ["leaderboard", "build", str(tmp_path / "oracle"), str(tmp_path / "constant"),
                                     "--format", fmt, "--out", str(target)])
        assert result.exit_code == 0, result.output
        assert "oracle" in target.read_text() and "constant" in target.read_text()
    bad = runner.invoke(app, ["leaderboard", "build", str(tmp_path / "oracle"), "--format", "pdf"])
    assert bad.exit_code == 2 and "use one of md, csv, json, html" in bad.output


def test_model_args_are_typed():
    from rmbench.cli.app import _parse_model_args

    assert _parse_model_args(["beta=0.1", "ref=path/x", "T=8", "flag=true"]) == (
        ("beta", 0.1), ("ref", "path/x"), ("T", 8), ("flag", True))
    result = runner.invoke(app, ["eval", "--model", "length", "--model-arg", "nokey"])
    assert result.exit_code == 2 and "expected KEY=VALUE" in result.output


def test_several_models_share_one_leaderboard(tmp_path):
    result = runner.invoke(app, ["eval", "--model", "oracle,length", "--bootstrap", "20", "--out", str(tmp_path)],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "oracle__ties_sample" / "results.json").is_file()
    assert (tmp_path / "length__ties_sample" / "results.json").is_file()
    board = (tmp_path / "leaderboard__ties_sample__oracle+length.md").read_text()
    assert "| oracle" in board and "| length" in board


def test_run_folders_never_replace_another_run(tmp_path, monkeypatch):
    """The default folder names model and tasks; a folder holding another run is refused
    (before any scoring) unless --overwrite; the same command replaces its own run."""
    monkeypatch.chdir(tmp_path)
    first = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "10"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, ["eval", "--model", "length", "--tasks", "persona", "--bootstrap", "10"])
    assert second.exit_code == 0, second.output
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["length__persona", "length__ties_sample"]
    again = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "10"])  # its own run: replaced
    assert again.exit_code == 0, again.output
    before = (tmp_path / "runs" / "length__ties_sample" / "results.json").read_text()
    for args, words in ((["--eps", "0,0.5"], "task ties_sample: eps 0,0.1 vs 0,0.5"),
                        (["--model", "oracle"], "model 'length', not 'oracle'"),
                        (["--tasks", "persona"], "tasks ties_sample, not persona")):
        argv = ["eval", "--model", "length", "--bootstrap", "10", "--out", "runs/length__ties_sample", *args]
        if "--model" in args:
            argv = ["eval", *args, "--bootstrap", "10", "--out", "runs/length__ties_sample"]
        result = runner.invoke(app, argv)
        assert result.exit_code == 2 and words in result.output and "--overwrite" in result.output, result.output
        assert "Traceback" not in result.output
    assert (tmp_path / "runs" / "length__ties_sample" / "results.json").read_text() == before  # nothing lost
    # several models: every folder is checked before any model is scored
    other = runner.invoke(app, ["eval", "--model", "oracle,length", "--eps", "0,0.5", "--bootstrap", "10"])
    assert other.exit_code == 2
    assert "runs/length__ties_sample holds another run (task ties_sample: eps 0,0.1 vs 0,0.5" in other.output
    assert not (tmp_path / "runs" / "oracle__ties_sample").exists()
    forced = runner.invoke(app, ["eval", "--model", "oracle", "--bootstrap", "10", "--out", "runs/length__ties_sample",
                                 "--overwrite"])
    assert forced.exit_code == 0, forced.output
    assert '"name": "oracle"' in (tmp_path / "runs" / "length__ties_sample" / "results.json").read_text()


@pytest.mark.slow
def test_new_task_scaffold_passes_its_own_test(tmp_path):
    import subprocess
    import sys

    result = runner.invoke(app, ["new-task", "my_pairs", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    folder = tmp_path / "my_pairs"
    assert {p.name for p in folder.iterdir()} >= {"my_pairs.yaml", "my_pairs_task.py", "my_pairs.jsonl",
                                                  "test_my_pairs.py"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    listed = runner.invoke(app, ["tasks", "list", "--include", str(folder)], env={"COLUMNS": "250"})
    assert "my_pairs" in listed.output
    again = runner.invoke(app, ["new-task", "my_pairs", "--dir", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
    bad = runner.invoke(app, ["new-task", "My-Task", "--dir", str(tmp_path)])
    assert bad.exit_code == 2 and "lower-case" in bad.output


def test_a_negative_bootstrap_is_refused_before_any_run(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "-1", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "error: --bootstrap must be a whole number >= 0" in result.output and "Traceback" not in result.output
    assert not out.exists()


def test_a_repeated_eps_counts_once_and_eps_are_sorted(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--eps", "0.1,0,0.1", "--bootstrap", "0",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["eps"] == [0.0, 0.1]
    task = doc["tasks"][0] if isinstance(doc["tasks"], list) else next(iter(doc["tasks"].values()))
    keys = [(m["metric"], m.get("eps"), m.get("subset"), m.get("shift")) for m in task["metrics"]]
    assert len(keys) == len(set(keys)), "a metric record appears twice"


def test_tables_of_runs_without_bootstrap_say_there_is_no_ci(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "no CIs: the runs used --bootstrap 0" in result.output and "95% CI" not in result.output
    assert "95% bootstrap CI" not in (out / "leaderboard.md").read_text()


def test_version_prints_the_package_version():
    from rmbench import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"rmbench {__version__}", result.output


RAISING_RM = ("def helper(text):\n"
              "    raise ValueError(f'cannot score {text[:5]!r}')\n"
              "\n"
              "def score(pairs):\n"
              "    return [helper(r) for _, r in pairs]\n")


@pytest.mark.parametrize("how", ["option", "env", "neither"])
def test_traceback_shows_the_users_own_frames_before_the_error_line(tmp_path, monkeypatch, how):
    (tmp_path / "my_rm.py").write_text(RAISING_RM)
    monkeypatch.delenv("RMBENCH_DEBUG", raising=False)
    if how == "env":
        monkeypatch.setenv("RMBENCH_DEBUG", "1")
    args = ["--traceback"] * (how == "option") + ["eval", "--model", f"python:{tmp_path / 'my_rm.py'}:score",
                                                  "--limit", "2", "--no-cache", "--out", str(tmp_path / "run")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: ") and "ValueError: cannot score" in lines[-1], result.stderr
    if how == "neither":
        assert "Traceback" not in result.stderr and "my_rm.py\", line" not in result.stderr
        assert "rmbench --traceback" in lines[-1] and "RMBENCH_DEBUG=1" in lines[-1]
        return
    text = result.stderr
    assert "Traceback (your code" in text and "ValueError: cannot score" in text
    assert f'{tmp_path / "my_rm.py"}", line 2, in helper' in text and 'line 5, in score' in text
    assert "python_fn.py" in text  # the rmbench frame that called the function
    for noise in ("engine.py", "backends.py", "runner.py", "click", "typer"):  # nothing between the CLI and the call
        assert noise not in text, noise
    assert not (tmp_path / "run").exists()


def test_traceback_without_user_code_keeps_the_error_one_line():
    result = runner.invoke(app, ["eval", "--model", "orcale"])
    assert result.exit_code == 2 and "rmbench --traceback" not in result.output and "Traceback" not in result.output
