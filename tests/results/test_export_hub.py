"""``rmbench export --format hf-eval-results``: the Hugging Face Hub's ``.eval_results/*.yaml``.

Validated two ways: every written file goes through ``huggingface_hub``'s own parser
(``parse_eval_result_entries``) and back through its own writer (``eval_result_entries_to_yaml``),
which must give the file's data unchanged (so every key is one the library knows, in its place);
and rmbench's entry type writes the specification's documented example as the docs show it.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from rmbench.errors import ConfigError
from rmbench.results.publishing.export import FORMATS, export_runs
from rmbench.results.publishing.export_formats import ExportOptions
from rmbench.results.publishing.hf_eval_results import HubEvalResult
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.golden_runs import HERE, _rb2_rows, _rm_bench_rows, _write_lines

RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
RB2_TASK_IDS = ("factuality", "precise_if", "math", "safety", "focus", "ties", "default")
HASHED = f"python:{HERE}:hashed"

# The documented example, https://huggingface.co/docs/hub/eval-results ("Adding Evaluation
# Results"; huggingface/hub-docs docs/hub/eval-results.md), with the fields rmbench never writes
# (verifyToken, source.user, evaluation_framework) left out, and its comments:
DOCS_EXAMPLE = """\
- dataset:
    id: cais/hle                  # Required. Hub dataset ID (must be a Benchmark)
    task_id: default              # Required. ID of the Task, as defined in the dataset's eval.yaml
    revision: <hash>              # Optional. Dataset revision hash
  value: 20.90                    # Required. Metric value
  date: "2025-01-15"              # Optional. ISO-8601 date or datetime (defaults to git commit time)
  source:                         # Optional. Attribution for this result, for instance a repo containing output traces or a Paper
    url: https://huggingface.co/spaces/SaylorTwift/smollm3-mmlu-pro  # Required if source provided
    name: Eval traces             # Optional. Display name
  notes: "no-tools"               # Optional. Details about the evaluation setup (e.g., "tools", "no-tools", etc.)
"""  # noqa: E501 - quoted as published
# ... and its minimal form ("Or, with only the required attributes"):
DOCS_MINIMAL = """\
- dataset:
    id: Idavidrein/gpqa
    task_id: gpqa_diamond
  value: 0.412
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("hubruns")
    rng = random.Random(45)
    rb2 = _write_lines(root / "rb2.jsonl", _rb2_rows(rng, RB2_SUBSETS))
    ties = _write_lines(root / "ties.jsonl", _rb2_rows(rng, ("Ties",)))
    rm_bench = _write_lines(root / "rm_bench.jsonl", _rm_bench_rows(rng))
    runs = {"len_ties": (("ties",), (("ties", ties),), "length"),
            "len": (("rewardbench2", "rm_bench", "ties_sample"), (("rewardbench2", rb2), ("rm_bench", rm_bench)),
                    "length"),
            "hashed": (("rewardbench2",), (("rewardbench2", rb2),), HASHED)}
    for name, (tasks, data, model) in runs.items():  # in this order: len_ties is the older run of length
        evaluate(EvalConfig(model=model, tasks=tasks, data=data, n_bootstrap=20, use_cache=False),
                 out_dir=root / name)
    return {name: load_run(root / name) for name in runs}


def _hub():
    hub = pytest.importorskip("huggingface_hub")
    if not hasattr(hub, "parse_eval_result_entries"):
        pytest.skip(f"huggingface_hub {hub.__version__} predates the .eval_results format (EvalResultEntry)")
    return hub


def check_with_huggingface_hub(data: list) -> None:
    hub = _hub()
    entries = hub.parse_eval_result_entries(data)
    assert len(entries) == len(data)
    assert hub.eval_result_entries_to_yaml(entries) == data


def test_formats_are_registered():
    assert FORMATS == ("every-eval-ever", "hf-eval-results", "rewardbench2-results")


def test_entry_writes_the_documented_example():
    documented = yaml.safe_load(DOCS_EXAMPLE)
    entry = HubEvalResult(dataset_id="cais/hle", task_id="default", value=20.90, dataset_revision="<hash>",
                          date="2025-01-15", source_url="https://huggingface.co/spaces/SaylorTwift/smollm3-mmlu-pro",
                          source_name="Eval traces", notes="no-tools")
    assert [entry.to_yaml_data()] == documented
    assert list(entry.to_yaml_data()) == list(documented[0])  # the documented order
    minimal = HubEvalResult(dataset_id="Idavidrein/gpqa", task_id="gpqa_diamond", value=0.412)
    assert [minimal.to_yaml_data()] == yaml.safe_load(DOCS_MINIMAL)
    check_with_huggingface_hub(documented)
    with pytest.raises(ValueError, match="url"):
        HubEvalResult(dataset_id="a/b", task_id="default", value=1.0, source_name="x")


def _read(path: Path) -> list:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_every_file_parses_with_huggingface_hub(runs, tmp_path):
    notes: list[str] = []
    paths = export_runs(list(runs.values()), tmp_path, "hf-eval-results", warn=notes.append,
                        options=ExportOptions(source_url="https://example.org/rmbench-runs"))
    hashed = "local/python_golden_runs.py_hashed"  # the model's path cut to its file (never a machine's folders)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in paths) == sorted([
        "rmbench/length/.eval_results/reward-bench-2.yaml", "rmbench/length/.eval_results/RM-Bench.yaml",
        f"{hashed}/.eval_results/reward-bench-2.yaml"])
    for p in paths:
        data = _read(p)
        check_with_huggingface_hub(data)
        for e in data:
            assert isinstance(e["date"], str)  # the spec: "Format this as a string"
            assert e["source"] == {"url": "https://example.org/rmbench-runs", "name": e["source"]["name"]}
            assert e["source"]["name"].startswith("rmbench run ")
            assert isinstance(e["value"], float)
    # ties_sample has no Hub dataset: left out, with one line saying so
    left_out = [n for n in notes if "ties_sample" in n]
    assert len(left_out) == 1 and "no Hub dataset" in left_out[0], notes
    replaced = [n for n in notes if n not in left_out]  # length's two runs both have a Ties score
    assert len(replaced) == 1 and "entry ties replaced by the newer run" in replaced[0], notes


def test_values_are_the_official_scores(runs, tmp_path):
    paths = export_runs([runs["hashed"]], tmp_path, "hf-eval-results")
    data = _read(paths[0])
    assert [e["dataset"]["task_id"] for e in data] == list(RB2_TASK_IDS)
    assert {e["dataset"]["id"] for e in data} == {"allenai/reward-bench-2"}
    task = runs["hashed"].record.task("rewardbench2")
    official = {m.subset: m for m in task.metrics if m.metric == "rewardbench2_score" and m.shift is None}
    for e, subset in zip(data, RB2_SUBSETS + (None,)):
        m = official[subset]
        assert e["value"] == m.value
        assert "revision" not in e["dataset"]  # the task reads branch "main": no commit to name
        assert e["date"] == runs["hashed"].record.created
        assert "source" not in e  # no --source-url: the spec wants a url with any source
        assert f"95% CI [{m.estimate.ci_low:.4g}, {m.estimate.ci_high:.4g}]" in e["notes"]
        assert f"n = {m.n}" in e["notes"]
        assert "scored on a local copy (rb2.jsonl)" in e["notes"]
        for metric, label in (("discrimination", "D"), ("specificity", "Spec")):
            for r in task.metrics:
                if r.metric == metric and r.subset == subset and r.shift is None and r.value == r.value:
                    assert f"{label}(eps={r.eps:g}σ) = {r.value:.4g} [{r.estimate.ci_low:.4g}, " \
                           f"{r.estimate.ci_high:.4g}]" in e["notes"]
    total = data[-1]["notes"]
    assert "D(eps=0.1σ)" in total and "Spec(eps=0.1σ)" in total  # pooled D and Spec on the total


def test_runs_of_one_model_merge_newest_first(runs, tmp_path):
    old = runs["len_ties"]  # written first, maybe within the same second: made older for certain
    old = dataclasses.replace(old, record=dataclasses.replace(old.record, created="2026-01-01T00:00:00+00:00"))
    runs = {**runs, "len_ties": old}
    paths = export_runs([runs["len"], runs["len_ties"]], tmp_path, "hf-eval-results")
    older_last = export_runs([runs["len_ties"], runs["len"]], tmp_path / "b", "hf-eval-results")
    assert [p.read_bytes() for p in paths] == [p.read_bytes() for p in older_last]  # by time, not argument order
    rb2 = next(p for p in paths if p.name == "reward-bench-2.yaml")
    data = _read(rb2)
    assert [e["dataset"]["task_id"] for e in data] == list(RB2_TASK_IDS)  # one entry per task id
    ties = next(e for e in data if e["dataset"]["task_id"] == "ties")
    newer = runs["len"].record.task("rewardbench2")
    assert ties["value"] == next(m.value for m in newer.metrics if m.metric == "rewardbench2_score"
                                 and m.subset == "Ties" and m.shift is None)
    only_ties = _read(export_runs([runs["len_ties"]], tmp_path / "t", "hf-eval-results")[0])
    task = runs["len_ties"].record.task("ties")
    # the ties task's score is RewardBench 2's Ties column, never its total ("default")
    assert [(e["dataset"]["id"], e["dataset"]["task_id"]) for e in only_ties] == [("allenai/reward-bench-2", "ties")]
    assert only_ties[0]["value"] == next(m.value for m in task.metrics if m.metric == "ties_score" and m.subset is None)


def test_rm_bench_columns(runs, tmp_path):
    paths = export_runs([runs["len"]], tmp_path, "hf-eval-results")
    data = _read(next(p for p in paths if p.name == "RM-Bench.yaml"))
    assert [e["dataset"]["task_id"] for e in data] == ["chat", "math", "code", "safety", "easy", "normal", "hard",
                                                        "default"]
    assert {e["dataset"]["id"] for e in data} == {"THU-KEG/RM-Bench"}


def test_nothing_to_write_is_one_error(runs, tmp_path):
    sample = tmp_path / "sample"
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=20, use_cache=False), out_dir=sample)
    with pytest.raises(ConfigError, match="no Hub dataset"):
        export_runs([load_run(sample)], tmp_path / "out", "hf-eval-results")
    assert not (tmp_path / "out").exists()


def test_cli(runs, tmp_path):
    from rmbench.cli import app

    out = tmp_path / "out"
    args = ["export", str(runs["len"].path), "--format", "hf-eval-results", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert result.output.count("Wrote") == 2 and "note:" in result.output and "ties_sample" in result.output
    target = out / "rmbench" / "length" / ".eval_results" / "reward-bench-2.yaml"
    target.write_text("[]\n")
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "error:" in refused.output and "Traceback" not in refused.output
    assert target.read_text() == "[]\n"
    assert CliRunner().invoke(app, args + ["--force"]).exit_code == 0
    check_with_huggingface_hub(_read(target))
    unknown = CliRunner().invoke(app, ["export", str(runs["len"].path), "--format", "hf-eval-result", "--out",
                                       str(tmp_path / "x")])
    assert unknown.exit_code == 2 and "hf-eval-results" in unknown.output


def test_model_ids_pass_the_hubs_check_and_name_sets_them(runs, tmp_path):
    """A model named by a local path gets ``local/{last part}`` (never the path; valid for
    ``huggingface_hub.utils.validate_repo_id``); ``--name`` sets the id, checked the same way;
    ``--name`` for runs of two models, or one the Hub refuses, is one error; ``source.name``
    never holds a path."""
    from huggingface_hub.utils import validate_repo_id

    from rmbench.results.publishing.export_names import model_id, repo_name

    record = runs["hashed"].record
    assert str(HERE) in record.model.name
    hub_id = model_id(record)
    validate_repo_id(hub_id)
    assert hub_id == "local/python_golden_runs.py_hashed" and str(HERE.parent) not in hub_id
    paths = export_runs([runs["hashed"]], tmp_path / "a", "hf-eval-results",
                        options=ExportOptions(source_url="https://example.org/runs"))
    assert paths[0].relative_to(tmp_path / "a").parts[:2] == ("local", "python_golden_runs.py_hashed")
    assert all(str(HERE.parent) not in p.read_text() for p in paths)
    assert {e["source"]["name"] for e in _read(paths[0])} == {f"rmbench run of {hub_id}"}
    named = export_runs([runs["hashed"]], tmp_path / "b", "hf-eval-results", options=ExportOptions(name="me/my-rm"))
    assert named[0].relative_to(tmp_path / "b").parts[:2] == ("me", "my-rm")
    with pytest.raises(ConfigError, match="not a Hub repo id"):
        export_runs([runs["hashed"]], tmp_path / "c", "hf-eval-results", options=ExportOptions(name="me/my rm"))
    with pytest.raises(ConfigError, match="names one model; these runs are of 2 models"):
        export_runs([runs["hashed"], runs["len"]], tmp_path / "c", "hf-eval-results",
                    options=ExportOptions(name="me/my-rm"))
    assert repo_name("/srv/" + "a" * 200 + "/x") == "x" and len(repo_name("b" * 200)) == 96
    assert repo_name("--a..b++c--") == "a.b_c"
    for text in ("--a..b++c--", "x" * 300, "seqcls:/srv/models/my rm", "org--x"):
        validate_repo_id(f"local/{repo_name(text)}")


def test_a_split_is_its_own_task_id(runs):
    """JudgeBench's Claude response set (``split: claude``) is written under task ids of its own,
    never the GPT set's."""
    from rmbench.results.publishing.hf_eval_results import split_prefix

    task = runs["len"].record.task("rewardbench2")
    gpt = dataclasses.replace(task, name="judgebench", kind="judgebench", args={"split": "gpt"})
    claude = dataclasses.replace(gpt, args={"split": "claude"})
    assert split_prefix(gpt) == "" and split_prefix(claude) == "claude_"
    assert split_prefix(task) == ""


def test_a_replaced_entry_is_a_note_and_a_repeat_says_unchanged(runs, tmp_path):
    from rmbench.cli import app

    old = runs["len_ties"]
    old = dataclasses.replace(old, record=dataclasses.replace(old.record, created="2026-01-01T00:00:00+00:00"))
    notes: list[str] = []
    export_runs([runs["len"], old], tmp_path, "hf-eval-results", warn=notes.append)
    assert [n for n in notes if "replaced" in n] == [
        f"{old.path}: its allenai/reward-bench-2 entry ties replaced by the newer run {runs['len'].path}"]
    out = tmp_path / "cli"
    args = ["export", str(runs["len"].path), "--format", "hf-eval-results", "--out", str(out)]
    assert CliRunner().invoke(app, args).output.count("Wrote") == 2
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "Wrote" not in again.output
    assert again.output.count("Unchanged (already this content)") == 2
