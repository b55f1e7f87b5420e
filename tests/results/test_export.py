"""``rmbench export --format every-eval-ever``: real runs exported to Every Eval Ever logs,
validated against the shared schema, with RewardBench named as the project's own adapter."""

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest

from rmbench.errors import ConfigError
from rmbench.results.publishing.export import FORMATS, export_runs, to_every_eval_ever
from rmbench.results.storage.folder import find_runs, load_run
from rmbench.scoring.runner import EvalConfig, evaluate

SCHEMA = Path(__file__).resolve().parents[3] / "shared" / "schemas" / "every_eval_ever" / "eval.schema.json"

RB2_NAMES = ("Score", "Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
RB1_NAMES = ("Score", "Chat", "Chat Hard", "Safety", "Reasoning", "Prior Sets (0.5 weight)")


# --- data and runs ---------------------------------------------------------------------------

def _text(rng, n):
    return " ".join(rng.choice(["alpha", "beta", "gamma", "delta", "eps"]) for _ in range(n))


def write_rb2(path: Path) -> Path:
    """A small RewardBench 2 file: best-of-4 rows in five subsets, and tied:K / ref:K Ties pairs."""
    rng = random.Random(7)
    rows = []
    for subset in ("Factuality", "Precise IF", "Math", "Safety", "Focus"):
        for i in range(6):
            lengths = rng.sample(range(1, 30), 4)
            rows.append({"id": f"{subset}-{i}", "prompt": f"{subset} question {i}?",
                         "chosen": [_text(rng, lengths[0])], "rejected": [_text(rng, n) for n in lengths[1:]],
                         "subset": subset})
    for k in range(4):
        rows.append({"id": f"tied:{k}", "prompt": f"Name one of several right answers {k}.",
                     "chosen": [_text(rng, rng.randint(3, 12)) for _ in range(3)],
                     "rejected": [_text(rng, rng.randint(1, 15)) for _ in range(2)], "subset": "Ties"})
        rows.append({"id": f"ref:{k}", "prompt": f"Name the one right answer {k}.",
                     "chosen": [_text(rng, rng.randint(3, 12))],
                     "rejected": [_text(rng, rng.randint(1, 15)) for _ in range(2)], "subset": "Ties"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_rb1(path: Path) -> Path:
    """A small RewardBench v1 file with a subset in every section, prior sets included."""
    rng = random.Random(3)
    rows = []
    for subset in ("alpacaeval-easy", "mt-bench-hard", "donotanswer", "hep-python", "shp"):
        for i in range(5):
            a, b = rng.sample(range(1, 25), 2)
            rows.append({"id": f"{subset}-{i}", "prompt": f"{subset} prompt {i}", "chosen": _text(rng, a),
                         "rejected": _text(rng, b), "subset": subset})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Run folders: length and oracle on ties_sample, length on RewardBench 2 and on RewardBench v1."""
    root = tmp_path_factory.mktemp("runs")
    rb2 = write_rb2(root / "rb2.jsonl")
    rb1 = write_rb1(root / "rb1.jsonl")
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=20, use_cache=False), out_dir=root / "len")
    evaluate(EvalConfig(model="oracle", tasks=("ties_sample",), n_bootstrap=20, use_cache=False),
             out_dir=root / "oracle")
    evaluate(EvalConfig(model="length", tasks=("rewardbench2",), data=(("rewardbench2", str(rb2)),),
                        n_bootstrap=20, use_cache=False), out_dir=root / "len_rb2")
    evaluate(EvalConfig(model="length", tasks=("rewardbench",), data=(("rewardbench", str(rb1)),),
                        n_bootstrap=20, use_cache=False), out_dir=root / "len_rb1")
    return {name: load_run(root / name) for name in ("len", "oracle", "len_rb2", "len_rb1")}


# --- validation --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"{SCHEMA} not present (the Every Eval Ever schema lives outside the repo in ../shared/schemas)")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _bound(x):
    return {"Infinity": math.inf, "-Infinity": -math.inf}.get(x, x)


def check_log(validator, log: dict) -> None:
    """The JSON schema, plus the Every Eval Ever CLI's score rules (bounds hold the score,
    uncertainty is finite) and the uniqueness of result ids."""
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    ids = [r["evaluation_result_id"] for r in log["evaluation_results"]]
    assert len(ids) == len(set(ids))
    for r in log["evaluation_results"]:
        cfg, score = r["metric_config"], r["score_details"]["score"]
        assert cfg["score_type"] == "continuous"
        assert _bound(cfg["min_score"]) <= score <= _bound(cfg["max_score"]), r["evaluation_name"]
        ci = r["score_details"].get("uncertainty", {}).get("confidence_interval")
        if ci:
            assert math.isfinite(ci["lower"]) and math.isfinite(ci["upper"]) and ci["confidence_level"] == 0.95
    details = log["model_info"]["additional_details"]
    assert details["deployment_type"] in ("self_deployed", "externally_managed", "unknown")
    assert details["model_availability"] in ("open_weights", "closed_weights", "unknown")


def by_name(log: dict) -> dict:
    return {r["evaluation_name"]: r for r in log["evaluation_results"]}


# --- tests ---------------------------------------------------------------------------------------

def test_every_written_file_is_valid(runs, tmp_path, validator):
    folders = list(runs.values())
    paths = export_runs(folders, tmp_path / "out")
    assert sorted(p.name for p in paths) == ["length.json", "oracle.json"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["length.json", "oracle.json"]  # no temp files
    for p in paths:
        log = json.loads(p.read_text(encoding="utf-8"))
        check_log(validator, log)
        assert log["schema_version"] == json.loads(SCHEMA.read_text())["version"]
        assert log["source_metadata"]["source_type"] == "evaluation_run"
        assert log["eval_library"]["name"] == "rmbench"


def test_rewardbench2_results_carry_the_adapter_names_and_the_run_values(runs, validator):
    run = runs["len_rb2"].record
    log = to_every_eval_ever([run])
    check_log(validator, log)
    results = by_name(log)
    official = [r["evaluation_name"] for r in log["evaluation_results"]][:len(RB2_NAMES)]
    assert official == list(RB2_NAMES)  # as the adapter: the total first, then the six subsets
    for name in RB2_NAMES:
        r = results[name]
        rec = run.metric("rewardbench2", "rewardbench2_score", subset=None if name == "Score" else name)
        assert r["score_details"]["score"] == rec.value
        ci = r["score_details"]["uncertainty"]["confidence_interval"]
        assert (ci["lower"], ci["upper"]) == (rec.ci_low, rec.ci_high)
        assert r["score_details"]["uncertainty"]["num_samples"] == rec.n
        assert r["source_data"]["dataset_name"] == "RewardBench 2"
        assert r["metric_config"]["lower_is_better"] is False
    for name in RB2_NAMES[1:6]:  # the best-of-4 subsets keep the adapter's 0-1 range
        assert (results[name]["metric_config"]["min_score"], results[name]["metric_config"]["max_score"]) == (0.0, 1.0)
    # a local file is not the hub dataset: "other", with the file's name and fingerprint
    src = results["Factuality"]["source_data"]
    assert src["source_type"] == "other" and src["additional_details"]["data_file"] == "rb2.jsonl"
    assert src["additional_details"]["data_fingerprint"] == run.task("rewardbench2").data_fingerprint


def test_rewardbench_v1_results_carry_the_adapter_names(runs, validator):
    run = runs["len_rb1"].record
    log = to_every_eval_ever([run])
    check_log(validator, log)
    results = by_name(log)
    assert [r["evaluation_name"] for r in log["evaluation_results"]][:len(RB1_NAMES)] == list(RB1_NAMES)
    for name in RB1_NAMES:
        subset = {"Score": None, "Prior Sets (0.5 weight)": "Prior Sets"}.get(name, name)
        assert results[name]["score_details"]["score"] == run.value("rewardbench", "rewardbench_score", subset=subset)
        assert results[name]["source_data"]["dataset_name"] == "RewardBench"


def test_rmbench_metrics_carry_eps_and_confidence_intervals(runs, validator):
    run = runs["len"].record
    log = to_every_eval_ever([run])
    check_log(validator, log)
    results = by_name(log)
    task = run.task("ties_sample")
    pooled = [m for m in task.metrics if m.subset is None and m.shift is None and not math.isnan(m.value)]
    assert len(log["evaluation_results"]) == len(pooled)
    for eps in task.eps:
        for metric in ("discrimination", "specificity"):
            rec = run.metric("ties_sample", metric, eps=eps)
            r = results[f"rmbench.ties_sample.{metric}@eps={eps:g}sigma"]
            assert r["metric_config"]["metric_parameters"] == {"eps": eps, "eps_unit": "sigma"}
            assert f"eps = {eps:g}" in r["metric_config"]["evaluation_description"]
            assert r["score_details"]["score"] == rec.value
            ci = r["score_details"]["uncertainty"]["confidence_interval"]
            assert (ci["lower"], ci["upper"]) == (rec.ci_low, rec.ci_high)
            assert r["score_details"]["uncertainty"]["num_bootstrap_samples"] == 20
    for metric in ("pairwise_accuracy", "ds_auc", "ties_score"):
        rec = run.metric("ties_sample", metric)
        r = results[f"rmbench.ties_sample.{metric}"]
        assert r["score_details"]["score"] == rec.value
        ci = r["score_details"]["uncertainty"]["confidence_interval"]
        assert (ci["lower"], ci["upper"]) == (rec.ci_low, rec.ci_high)
    # the built-in ties_sample task is rmbench's own miniature, not RewardBench 2's Ties subset
    assert "Ties" not in results
    assert log["evaluation_timestamp"] == run.created
    assert log["eval_library"]["version"] == run.rmbench_version
    assert log["eval_library"]["additional_details"]["python"] == run.environment.python


def test_hub_ties_task_is_ties(runs, validator):
    run = runs["len"].record
    task = dataclasses.replace(run.task("ties_sample"), args={"dataset": "allenai/reward-bench-2", "revision": "main",
                                                         "split": "test"})
    log = to_every_eval_ever([dataclasses.replace(run, tasks=(task,))])
    check_log(validator, log)
    ties = by_name(log)["Ties"]
    assert ties["score_details"]["score"] == run.value("ties_sample", "ties_score")
    assert ties["source_data"] == {**ties["source_data"], "dataset_name": "RewardBench 2",
                                   "source_type": "hf_dataset", "hf_repo": "allenai/reward-bench-2", "hf_split": "test"}


def test_runs_of_one_model_merge_into_one_file(runs, tmp_path, validator):
    paths = export_runs([runs["len"], runs["len_rb2"], runs["oracle"], runs["len_rb1"]], tmp_path)
    assert [p.name for p in paths] == ["length.json", "oracle.json"]
    log = json.loads(paths[0].read_text(encoding="utf-8"))
    check_log(validator, log)
    names = set(by_name(log))
    assert set(RB2_NAMES) | set(RB1_NAMES) | {"rmbench.ties_sample.ties_score", "rmbench.rewardbench2.ds_auc"} <= names
    tasks = {r["score_details"]["details"]["rmbench_task"] for r in log["evaluation_results"]}
    assert tasks == {"ties_sample", "rewardbench2", "rewardbench"}
    assert len(json.loads(log["eval_library"]["additional_details"]["runs"])) == 3
    newest = max((runs[k].record for k in ("len", "len_rb2", "len_rb1")), key=lambda r: r.created)
    assert log["evaluation_timestamp"] == newest.created
    oracle = json.loads(paths[1].read_text(encoding="utf-8"))
    assert {r["score_details"]["details"]["rmbench_task"] for r in oracle["evaluation_results"]} == {"ties_sample"}


def test_output_is_deterministic(runs, tmp_path):
    a = export_runs([runs["len"], runs["len_rb2"]], tmp_path / "a")
    b = export_runs([runs["len_rb2"], runs["len"]], tmp_path / "b")
    c = export_runs(find_runs([runs["len"].path, runs["len_rb2"].path]), tmp_path / "c")
    assert a[0].read_bytes() == b[0].read_bytes() == c[0].read_bytes()
    log = json.loads(a[0].read_text(encoding="utf-8"))
    assert log["evaluation_id"] == f"rmbench/rmbench_length/{log['retrieved_timestamp']}"
    float(log["retrieved_timestamp"])  # Unix epoch


def test_a_rerun_replaces_its_own_results(runs):
    run = runs["len"].record
    rerun = dataclasses.replace(run, created="2099-01-01T00:00:00+00:00")
    log = to_every_eval_ever([rerun, run])
    assert len(log["evaluation_results"]) == len(to_every_eval_ever([run])["evaluation_results"])
    assert {r["evaluation_timestamp"] for r in log["evaluation_results"]} == {rerun.created}


def test_bad_requests(runs, tmp_path):
    assert FORMATS[0] == "every-eval-ever"
    with pytest.raises(ConfigError, match="every-eval-ever"):
        export_runs([runs["len"]], tmp_path, fmt="csv")
    with pytest.raises(ConfigError, match="one model"):
        to_every_eval_ever([runs["len"].record, runs["oracle"].record])
    with pytest.raises(ConfigError):
        to_every_eval_ever([])
    assert not any(tmp_path.iterdir())


def test_models_with_one_name_get_separate_files(runs, tmp_path):
    other = dataclasses.replace(runs["oracle"], record=dataclasses.replace(
        runs["oracle"].record, model=dataclasses.replace(runs["oracle"].record.model, name="length")))
    paths = export_runs([runs["len"], other], tmp_path)
    assert len(paths) == 2 and len(set(paths)) == 2
    assert all(p.name.startswith("length-") for p in paths)


def test_a_file_with_other_content_is_never_replaced_silently(runs, tmp_path):
    first = export_runs([runs["len"]], tmp_path)
    assert export_runs([runs["len"]], tmp_path) == first  # the same content: written again is no change
    first[0].write_text("{}")
    with pytest.raises(ConfigError, match="--force"):
        export_runs([runs["len"]], tmp_path)
    assert first[0].read_text() == "{}"
    export_runs([runs["len"]], tmp_path, overwrite=True)
    assert json.loads(first[0].read_text())["model_info"]["name"] == "length"
