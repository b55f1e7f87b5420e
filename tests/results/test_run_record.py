"""The typed run record: one reader that validates and migrates, queries, round trips."""

import json
import math
import shutil
from pathlib import Path

import pytest

from rmbench.core.metric_registry import TIES_LAYOUT, metric_def
from rmbench.errors import ConfigError
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.statistics.compare import compare_runs
from rmbench.results.storage.folder import load_run, parse_record, read_run, record_to_json
from rmbench.results.storage.record import SCHEMA_VERSION, Estimate
from rmbench.scoring.runner import EvalConfig, evaluate

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "v1_run"
"""A run folder written by rmbench before the typed record (schema 1): length on ties and
paraphrase_shift, 20 bootstrap resamples."""


def test_a_schema_1_file_loads_through_the_reader():
    raw = json.loads((GOLDEN / "results.json").read_text())
    assert raw["schema_version"] == 1
    run = read_run(GOLDEN)
    assert run.schema_version == SCHEMA_VERSION and run.status == "success"
    assert run.model.name == "length" and run.task_names == ("ties", "paraphrase_shift")
    for m in raw["metrics"]:  # every old record is reachable by query, value and CI unchanged
        got = run.metric(m["task"], m["metric"], eps=m["eps"], subset=m["subset"], shift=m["shift"])
        assert got is not None and got.n == m["n"]
        assert (got.value, got.ci_low, got.ci_high) == (
            math.nan if m["value"] is None else m["value"], m["ci_low"], m["ci_high"]) or math.isnan(got.value)
    ties = run.task("ties")
    assert ties.eps == (0.0, 0.1) and ties.metric_version == 1
    assert ties.comparability_key == raw["tasks"][0]["comparability_key"]  # the recipe is unchanged
    assert ties.official == TIES_LAYOUT and "ties_score" in ties.headline  # derived from its records
    assert run.task("paraphrase_shift").shifts == ("none", "paraphrase")
    assert run.execution.stats.requests > 0 and run.environment.python


def test_schema_1_runs_feed_leaderboards_and_compare(tmp_path):
    folder = tmp_path / "old"
    shutil.copytree(GOLDEN, folder)
    board = build_leaderboard([load_run(folder)])
    assert board.main.rows[0][0] == ("length",)
    rows = compare_runs(load_run(folder), load_run(folder), n_bootstrap=20)
    assert rows and all(r.diff == 0.0 for r in rows if not math.isnan(r.diff))


def test_the_current_schema_round_trips(tmp_path):
    run = evaluate(EvalConfig(model="length", tasks=("ties_sample", "paraphrase_shift_sample"), n_bootstrap=20,
                              use_cache=False),
                   out_dir=tmp_path / "run")
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc == record_to_json(run)
    again = parse_record(doc, tmp_path / "run" / "results.json")
    assert record_to_json(again) == doc
    assert again.execution.stats == run.execution.stats and again.execution.stats.threads is not None
    # Stats a newer version adds, and none at all, read and write back as they were.
    doc["execution"]["stats"]["from_the_future"] = {"x": 1}
    assert record_to_json(parse_record(doc, tmp_path / "run" / "results.json")) == doc
    doc["execution"]["stats"] = {}
    assert parse_record(doc, tmp_path / "x").execution.stats is None
    assert record_to_json(parse_record(doc, tmp_path / "x")) == doc
    # The plugins a run used (none here) round trip; a file written before they were recorded reads as none.
    assert doc["environment"]["plugins"] == [] and again.environment.plugins == ()
    doc["environment"]["plugins"] = [{"name": "pkg", "version": "1.0", "module": "pkg.model", "sha256": "ab" * 32},
                                     {"name": "pkg", "version": "1.0", "module": "pkg.tasks", "sha256": None}]
    with_plugins = parse_record(doc, tmp_path / "x")
    assert [p.module for p in with_plugins.environment.plugins] == ["pkg.model", "pkg.tasks"]
    assert record_to_json(with_plugins) == doc
    del doc["environment"]["plugins"]
    assert parse_record(doc, tmp_path / "x").environment.plugins == ()


def test_queries():
    run = read_run(GOLDEN)
    spec = run.metric("ties", "specificity", eps=0.1)
    assert spec.estimate == Estimate(0.8441558441558441, 0.6835102231933823, 0.9403865652724969)
    assert spec.n == 231 and metric_def("specificity").n_counts == "specificity pairs"
    assert run.metric("ties", "specificity", eps=0.5) is None  # not run at that eps
    assert run.metric("ties", "specificity") is None  # eps-dependent: eps is required
    assert run.metric("ties", "ds_auc").eps is None
    assert run.metric("ties", "pairwise_accuracy", subset="tied").n > 0
    assert math.isnan(run.value("ties", "specificity", eps=0.5))
    with pytest.raises(ConfigError, match="has no task 'persona' \\(it has ties, paraphrase_shift\\)"):
        run.metric("persona", "ds_auc")


@pytest.mark.parametrize("edit, words", [
    (lambda d: d["tasks"][0]["counts"].update(groups="many"), "field 'tasks[0].counts.groups': expected an integer"),
    (lambda d: d["tasks"][0]["metrics"][0].pop("n"), "field 'tasks[0].metrics[0].n': missing"),
    (lambda d: d["tasks"][0]["metrics"][1].update(value="high"),
     "field 'tasks[0].metrics[1].value': expected a number or null"),
    (lambda d: d.update(status="maybe"), "field 'status': expected one of success, partial, error"),
    (lambda d: d["tasks"][0].update(status="partial"), "field 'tasks[0].status': expected one of success, error, "
                                                       "got 'partial'"),
    (lambda d: d["tasks"][0].update(eps_unit="std"), "field 'tasks[0].eps_unit': expected one of sigma, raw"),
    (lambda d: d["tasks"][0]["metrics"][1].update(eps_unit="σ"),
     "field 'tasks[0].metrics[1].eps_unit': expected one of sigma, raw, got 'σ'"),
    (lambda d: d["config"].update(truncation="middle"), "field 'config.truncation': expected one of left, right"),
    (lambda d: d["tasks"][0].update(data_fingerprint="0" * 64), "field 'tasks[0].comparability_key': does not match"),
    (lambda d: d["model"].pop("name"), "field 'model.name': missing"),
    (lambda d: d.update(schema_version=3), "field 'schema_version': 3 is not supported"),
    (lambda d: d["execution"]["stats"].update(cached="all"), "field 'execution.stats.cached': expected int, got 'all'"),
    (lambda d: d["environment"].update(plugins=[{"name": "pkg"}]), "field 'environment.plugins[0].version': missing"),
])
def test_a_bad_file_names_the_file_and_the_field(tmp_path, edit, words):
    evaluate(EvalConfig(model="length", n_bootstrap=10, use_cache=False), out_dir=tmp_path / "run")
    file = tmp_path / "run" / "results.json"
    doc = json.loads(file.read_text())
    edit(doc)
    file.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as err:
        read_run(tmp_path / "run")
    assert str(err.value).startswith(f"{file}: {words}"), str(err.value)


def test_a_task_that_fails_is_recorded_and_the_others_kept(tmp_path):
    plugin = tmp_path / "broken.yaml"
    (tmp_path / "broken_task.py").write_text(
        "from rmbench.errors import DataError\n"
        "from rmbench.tasks.jsonl import PreferenceTask\n"
        "class Broken(PreferenceTask):\n"
        "    def extra_metrics(self, groups, rewards):\n"
        "        def fail(units):\n"
        "            raise DataError('the score needs a field this data lacks')\n"
        "        return {'broken_score': fail}\n")
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "bb"}) + "\n")
    plugin.write_text(f"name: broken\nkind: {tmp_path / 'broken_task.py'}:Broken\nversion: 1\n"
                      f"args: {{path: {tmp_path / 'pairs.jsonl'}}}\n")
    run = evaluate(EvalConfig(model="length", tasks=("ties_sample", "broken"), include=(str(tmp_path),), n_bootstrap=10,
                              use_cache=False), out_dir=tmp_path / "run")
    assert run.status == "partial"
    assert run.task("ties_sample").status == "success" and run.metric("ties_sample", "ds_auc") is not None
    broken = run.task("broken")
    assert broken.status == "error" and "needs a field this data lacks" in broken.error and not broken.metrics
    assert read_run(tmp_path / "run").task("broken").error == broken.error
    notes = build_leaderboard([run]).notes
    assert any("on broken: the task failed" in n for n in notes)


def test_two_runs_plugin_differences_name_the_version_or_the_module_code():
    from rmbench.registry import PluginSource
    from rmbench.results.storage.record import Environment

    def env(*plugins):
        return Environment("3.11", "linux", plugins=plugins)

    a = env(PluginSource("pkg", "1.0", "pkg.model", "a" * 64), PluginSource("pkg", "1.0", "pkg.tasks", "c" * 64),
            PluginSource("other", "2.0", "other.metric"))
    edited = env(PluginSource("pkg", "1.0", "pkg.model", "b" * 64), PluginSource("pkg", "1.0", "pkg.tasks", "c" * 64),
                 PluginSource("other", "2.0", "other.metric"))
    newer = env(PluginSource("pkg", "1.1", "pkg.model"), PluginSource("other", "2.0", "other.metric"))
    assert a.plugin_differences(a) == [] and a.plugin_differences(env()) == []  # a plugin only one run used: no line
    assert a.plugin_differences(edited) == [f"plugin pkg 1.0, module model {'a' * 12} vs {'b' * 12}"]
    assert a.plugin_differences(newer) == ["plugin pkg 1.0 vs 1.1"]
    assert a.plugin_versions() == {"other": "2.0", "pkg": f"1.0 (model {'a' * 12}, tasks {'c' * 12})"}
