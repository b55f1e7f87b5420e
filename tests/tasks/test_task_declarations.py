"""A task kind's own scores and row schemas are declared on its class and registered with it
(one registration); a run records the declaration of each metric it shows or reports, which a
leaderboard built elsewhere takes first; ``--metrics`` and a task entry's ``headline:`` add any
declared metric as a column; the ``grouped`` helper gives a score per category and in total."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rmbench
from rmbench.cli import app
from rmbench.core import metric_registry as R
from rmbench.core.judgebench import judgebench_accuracies
from rmbench.errors import ConfigError, DataError
from rmbench.plugins import OfficialColumn, OfficialLayout
from rmbench.registry import Registry
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.storage.folder import load_run
from rmbench.tasks import TASK_KINDS, schemas
from rmbench.tasks.grouped import grouped
from rmbench.tasks.rows import RowReader

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]

LOSS = rmbench.MetricDef("plugin_loss", "my loss", False, False, "groups", "1 - pairwise accuracy, per run")
ROWS = rmbench.RowSchema("plugin rows", (("question", "text", lambda v: isinstance(v, str)),
                                        ("good", "text", lambda v: isinstance(v, str)),
                                        ("bad", "text", lambda v: isinstance(v, str))))


class LossTask(rmbench.Task):
    """A plugin kind with its own lower-is-better score, in its headline, and its own row schema."""

    scores = (LOSS,)
    row_schemas = (ROWS,)
    headline = ("plugin_loss", "pairwise_accuracy")

    def __init__(self, path: str) -> None:
        self.path = path

    def groups(self):
        for location, line, row in rmbench.iter_rows(path=self.path):
            r = RowReader(row, location, line, ROWS)
            yield r.group(id=str(line), prompt=r.string("question"), responses=(r.string("good"), r.string("bad")),
                          utilities=(1, 0))

    def extra_metrics(self, groups, rewards):
        r = np.asarray(rewards).reshape(-1, 2)
        wrong = (r[:, 0] <= r[:, 1]).astype(float)
        return {"plugin_loss": lambda units: float(wrong[units].mean())}


@pytest.fixture
def plugin_kind(tmp_path):
    """LossTask registered as ``plugin_loss_kind`` for one test (its metric and schema with it)."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"question": f"q{i}", "good": "a" * (i + 2), "bad": "b" * (5 - i)}) + "\n"
                            for i in range(5)))
    rmbench.register_task_kind("plugin_loss_kind", LossTask, description="a plugin with its own score")
    yield rows
    TASK_KINDS._entries.pop("plugin_loss_kind", None)
    R.METRICS.unregister("plugin_loss")
    schemas.ROW_SCHEMAS.unregister("plugin_loss_kind")


def test_one_registration_declares_the_kinds_scores_and_row_schema(plugin_kind):
    assert R.metric_def("plugin_loss") == LOSS
    assert schemas.kinds_reading(ROWS) == ("plugin_loss_kind",)
    hint = schemas.schema_hint({"question": "q", "good": "a", "bad": "b"}, schemas.PREFERENCE)
    assert "looks like plugin rows" in hint and "task kind 'plugin_loss_kind'" in hint
    with pytest.raises(ValueError, match="already declared differently"):  # a score named like another's
        rmbench.register_task_kind("other_kind", type("Other", (LossTask,), {"scores": (
            rmbench.MetricDef("plugin_loss", "other", True, False, "groups", "another"),)}))
    assert "other_kind" not in TASK_KINDS


def test_built_in_kinds_declare_their_scores_and_core_holds_none():
    assert not hasattr(R, "_TASK_SCORES") and not hasattr(schemas, "KNOWN")
    for name in ("judgebench", "rmb", "ppe_correctness", "rewardbench2", "rb2_ties"):
        kind = TASK_KINDS.get(name)
        assert kind.scores and all(R.METRICS.get(d.name) == d for d in kind.scores), name
        assert all(R.METRICS.origin(d.name).startswith("task kind ") for d in kind.scores), name
        assert kind.row_schemas and all(name in schemas.kinds_reading(s) for s in kind.row_schemas), name
    assert schemas.schemas_of("rmb") == (schemas.RMB_PAIRWISE, schemas.RMB_BON)
    assert R.metric_def("ties_score").reading == R.TIES_READING


def test_which_schema_a_row_looks_like_does_not_depend_on_registration_order(monkeypatch):
    rb1_csv = {"prompt": "q", "chosen": "a", "rejected": "b", "subset": "chat"}  # also preference pairs
    shifted = {"orig_index": 1, "prompt": "q", "orig_chosen": "a", "orig_rejected": "b", "chosen": "c",
               "rejected": "d"}
    rm_bench = {"id": 1, "prompt": "q", "chosen": ["a", "b", "c"], "rejected": ["d", "e", "f"], "domain": "chat"}
    expected = ([schemas.RB1], [schemas.PAIRED_SHIFT], [schemas.RM_BENCH, schemas.RB2])
    for order in (schemas.ROW_SCHEMAS.items(), list(reversed(schemas.ROW_SCHEMAS.items()))):
        registry = Registry("row schemas of task kind")
        for kind, read in order:
            registry.register(kind, read)
        monkeypatch.setattr(schemas, "ROW_SCHEMAS", registry)
        assert [list(schemas.looks_like(r)) for r in (rb1_csv, shifted, rm_bench)] == list(expected)
    assert schemas.looks_like({"nothing": 1}) == ()


# --- grouped ------------------------------------------------------------------------------------

def test_grouped_by_hand():
    credit = [1, 0, 1, 0.5, 1, 0]
    cats = ["a", "a", "b", "b", None, "c"]
    pooled = grouped("acc", credit, cats, order=["c", "b"])
    assert pooled.labels == (("acc", None), ("acc", "c"), ("acc", "b"), ("acc", "a"))
    assert pooled.counts == (6, 1, 2, 2)
    units = np.array([0, 0, 1, 2, 3, 4, 5])  # group 0 drawn twice
    # pooled: (2*1 + 0 + 1 + 0.5 + 1 + 0) / 7; c: 0/1; b: 1.5/2; a: 2/3
    assert pooled.statistic(units).tolist() == [4.5 / 7, 0.0, 0.75, 2 / 3]
    mean = grouped("acc", credit, cats, total="mean")
    assert mean.statistic(units)[0] == pytest.approx((2 / 3 + 0.75 + 0.0) / 3, abs=1e-15)
    assert np.isnan(mean.statistic(np.array([4, 4]))[0])  # no category drawn
    counted = grouped("acc", [1, 0, 0.5], ["a", "a", "b"], counted=[1, 0, 1])  # a human tie counts 0
    assert counted.counts == (2, 1, 1) and counted.statistic(np.arange(3)).tolist() == [0.75, 1.0, 0.5]
    with pytest.raises(ValueError, match="pooled or mean"):
        grouped("acc", credit, cats, total="median")


def test_grouped_gives_judgebenchs_accuracies_bit_for_bit():
    rng = np.random.default_rng(3)
    categories = ("knowledge", "reasoning", "math", "coding")
    correct = rng.integers(0, 2, 200).astype(float)
    category_of = rng.integers(1, 4, 200)  # "knowledge" absent
    scores = grouped("judgebench_score", correct, [categories[i] for i in category_of], order=categories)
    present = [0] + [1 + i for i in range(4) if (category_of == i).any()]
    for _ in range(20):
        units = rng.integers(0, 200, 200)
        weights = np.bincount(units, minlength=200).astype(float)
        official = judgebench_accuracies(correct, category_of, weights=weights)[present]
        assert scores.statistic(units).tobytes() == official.tobytes()


# --- metric specs in the run, --metrics, headline: ----------------------------------------------

def test_a_plugin_metric_keeps_its_declaration_in_a_leaderboard_built_without_the_plugin(plugin_kind, tmp_path):
    path = (("path", str(plugin_kind)),)
    run = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("plugin_loss_kind",), task_args=path,
                                              n_bootstrap=20), out_dir=tmp_path / "len")
    rmbench.evaluate(rmbench.EvalConfig(model="constant", tasks=("plugin_loss_kind",), task_args=path, n_bootstrap=20),
                     out_dir=tmp_path / "const")
    task = run.tasks[0]
    assert task.headline == ("plugin_loss", "pairwise_accuracy")
    stored = json.loads((tmp_path / "len" / "results.json").read_text())["tasks"][0]["metric_specs"]
    assert {"name": "plugin_loss", "label": "my loss", "higher_is_better": False, "eps_dependent": False,
            "n_counts": "groups"} in stored
    assert [s["name"] for s in stored][:2] == ["plugin_loss", "pairwise_accuracy"]
    R.METRICS.unregister("plugin_loss")  # another process: the plugin is not installed there
    assert R.metric_def("plugin_loss").higher_is_better  # the registry's guess
    runs = [load_run(tmp_path / "len"), load_run(tmp_path / "const")]
    assert not runs[0].record.tasks[0].metric_def("plugin_loss").higher_is_better
    lb = build_leaderboard(runs)
    assert lb.main.columns[0].header == "plugin_loss_kind my loss"
    losses = [cells[0].value for _, cells in lb.main.rows]
    assert losses == sorted(losses) and losses[0] < losses[-1]  # lower is better: best first
    assert run.value("plugin_loss_kind", "plugin_loss") == losses[0]


class TableTask(LossTask):
    """LossTask with its own official table and no provenance (a plugin's, which no test checks
    against any benchmark's code), on a dataset named as a Hub id."""

    official = OfficialLayout("Loss table", "plugin_loss", (OfficialColumn("Loss", None),
                                                            OfficialColumn("Acc", None, "pairwise_accuracy")))

    def __init__(self, path: str, dataset: str | None = None) -> None:
        super().__init__(path)
        self.dataset = dataset


def test_a_layout_without_provenance_claims_nothing_about_official_code(plugin_kind, tmp_path):
    """No provenance: the caption and the Hub export say nothing about the benchmark's code; the
    built-in tables whose tests run the official code name theirs, and RM-Bench (checked by hand)
    claims no code."""
    from rmbench.results.publishing.export_formats import ExportOptions
    from rmbench.results.publishing.hf_eval_results import task_entries
    from rmbench.results.publishing.leaderboard_render import render_md

    assert TableTask.official.provenance is None
    assert R.OfficialLayout.from_json(TableTask.official.to_json()) == TableTask.official
    assert "provenance" not in TableTask.official.to_json()
    rmbench.register_task_kind("plugin_table_kind", TableTask)
    try:
        rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("plugin_table_kind",),
                                            task_args=(("path", str(plugin_kind)), ("dataset", "someorg/loss-pairs")),
                                            n_bootstrap=10),
                         out_dir=tmp_path / "run")
    finally:
        TASK_KINDS.unregister("plugin_table_kind")
        schemas.ROW_SCHEMAS.unregister("plugin_table_kind")
    run = load_run(tmp_path / "run")  # as read back from disk
    task = run.record.tasks[0]
    assert task.official is not None and task.official.provenance is None
    table = build_leaderboard([run]).official[0]
    assert table.caption.startswith("Loss table's own scores; ") and "code" not in table.caption
    assert "computed as its code does" not in render_md(build_leaderboard([run]))
    _, entries = task_entries(task, run.record, ExportOptions())
    assert entries and all("code" not in e.notes and "as the task computes it" in e.notes for e in entries)
    checked = {layout.title for layout in (R.RB2_LAYOUT, R.RB1_LAYOUT, R.TIES_LAYOUT)
               if layout.provenance == R.CHECKED_AGAINST_CODE}
    assert checked == {"RewardBench 2", "RewardBench", "RewardBench 2 Ties"}
    for name in ("judgebench", "processbench", "prmbench", "m_rewardbench", "rewardbench", "rewardbench2", "rb2_ties"):
        assert TASK_KINDS.get(name).official.provenance == R.CHECKED_AGAINST_CODE, name
    assert R.RM_BENCH_LAYOUT.provenance is not None and "not against its code" in R.RM_BENCH_LAYOUT.provenance


def _without_specs(src: Path, dst: Path) -> Path:
    """A copy of a run folder whose results.json lacks metric_specs, as files written before them."""
    shutil.copytree(src, dst)
    data = json.loads((dst / "results.json").read_text())
    for t in data["tasks"]:
        t.pop("metric_specs")
    (dst / "results.json").write_text(json.dumps(data))
    return dst


def test_older_files_without_specs_still_load_and_build(tmp_path):
    rmbench.evaluate(rmbench.EvalConfig(model="length", n_bootstrap=20), out_dir=tmp_path / "new")
    old = load_run(_without_specs(tmp_path / "new", tmp_path / "old"))
    v1 = load_run(REPO / "tests" / "golden" / "v1_run")
    assert old.record.tasks[0].metric_specs == () and v1.record.tasks[0].metric_specs == ()
    new = load_run(tmp_path / "new")
    headers = [c.header for c in build_leaderboard([new]).main.columns]
    assert [c.header for c in build_leaderboard([old]).main.columns] == headers
    assert build_leaderboard([v1]).main.columns


def test_metrics_add_columns_where_runs_report_them(tmp_path):
    rmbench.evaluate(rmbench.EvalConfig(model="length", n_bootstrap=20), out_dir=tmp_path / "len")
    runs = [load_run(tmp_path / "len")]
    plain = [c.metric for c in build_leaderboard(runs).main.columns]
    more = build_leaderboard(runs, metrics=["length_bias_gap", "reward_margin", "length_bias_gap"]).main.columns
    assert [c.metric for c in more] == plain + ["length_bias_gap", "reward_margin"]
    assert more[-2].header == "ties_sample len gap" and more[-2].higher_is_better is False
    with pytest.raises(ConfigError, match="no run reports a metric 'reward_margn'.*did you mean 'reward_margin'"):
        build_leaderboard(runs, metrics=["reward_margn"])
    with pytest.raises(ConfigError, match="rewrite_specificity"):  # declared, but no task here reports it
        build_leaderboard(runs, metrics=["rewrite_specificity"])


def test_eval_and_leaderboard_build_take_metrics(tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--bootstrap", "10", "--out", str(out),
                                 "--metrics", "length_bias_gap,rewrite_specificity"])
    assert result.exit_code == 0, result.output
    task = json.loads((out / "results.json").read_text())["tasks"][0]
    assert task["headline"][-1] == "length_bias_gap"  # rewrite_specificity: not reported, no column
    assert "len gap" in (out / "leaderboard.md").read_text()
    board = tmp_path / "board.md"
    result = runner.invoke(app, ["leaderboard", "build", str(out), "--metrics", "reward_margin", "--out", str(board)])
    assert result.exit_code == 0, result.output
    assert "ties_sample margin" in board.read_text()
    for command in (["eval", "--model", "length", "--out", str(tmp_path / "no"), "--metrics", "lenght_bias_gap"],
                    ["leaderboard", "build", str(out), "--metrics", "nope"]):
        result = runner.invoke(app, command)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert "error:" in result.output and "--metrics" in result.output
    assert not (tmp_path / "no").exists()


def test_a_task_entry_sets_its_headline(tmp_path):
    entries = tmp_path / "entries"
    entries.mkdir()
    data = REPO / "tasks" / "data" / "ties_builtin.jsonl"
    (entries / "mine.yaml").write_text(f"name: mine\nkind: rb2_ties\nargs:\n  path: {data}\n"
                                       "headline: [ties_score, length_correlation]\n")
    run = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("mine",), include=(str(entries),),
                                              n_bootstrap=10, metrics=("reward_margin",)))
    assert run.tasks[0].headline == ("ties_score", "length_correlation", "reward_margin")
    assert [c.metric for c in build_leaderboard([run]).main.columns] == list(run.tasks[0].headline)
    (entries / "mine.yaml").write_text(f"name: mine\nkind: rb2_ties\nargs:\n  path: {data}\nheadline: [ties_scor]\n")
    with pytest.raises(ConfigError, match=r"mine.yaml: field 'headline': 'ties_scor' is not a declared metric; "
                                          r"did you mean 'ties_score'"):
        rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("mine",), include=(str(entries),)))
    (entries / "mine.yaml").write_text("name: mine\nkind: rb2_ties\nheadline: ties_score\n")
    with pytest.raises(ConfigError, match="field 'headline': must be a non-empty list"):
        rmbench.load_catalog([str(entries)])


def test_a_row_of_a_plugin_format_says_so_to_a_built_in_kind(plugin_kind):
    from rmbench.tasks.jsonl import PreferenceTask

    with pytest.raises(DataError, match="looks like plugin rows.*task kind 'plugin_loss_kind'"):
        list(PreferenceTask(path=str(plugin_kind)).groups())


def test_the_how_to_example_is_one_module_and_one_registration(tmp_path):
    """The task kind docs/how-to/add-task.md shows: it includes the module of the plugin package
    (tests/plugin_pkg, which tests/plugins/test_plugins.py installs), registered here in this process."""
    import runpy

    shown = "tests/plugin_pkg/rmbench_plugin_example/tasks.py"
    assert f'--8<-- "{shown}"' in (REPO / "docs" / "how-to" / "add-task.md").read_text(encoding="utf-8")
    module = runpy.run_path(str(REPO / shown))
    rows = tmp_path / "pairs.jsonl"
    rows.write_text("".join(json.dumps({"question": f"q{i}", "good": "g" * (1 + i % 3), "bad": "bb",
                                        "topic": ("math", "chat")[i % 2]}) + "\n" for i in range(8)))
    rmbench.register_task_kind("topic_pairs", module["TopicPairs"])
    try:
        run = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("topic_pairs",), n_bootstrap=10,
                                                  task_args=(("path", str(rows)),)))
        # length: good of 3 characters beats bb (i = 2, 5); of 2 ties (not counted); of 1 loses
        assert run.value("topic_pairs", "topic_accuracy") == 2 / 8
        assert run.value("topic_pairs", "topic_accuracy", subset="math") == 1 / 4  # i = 0, 2, 4, 6
        assert build_leaderboard([run]).main.columns[0].header == "topic_pairs topic acc"
    finally:
        TASK_KINDS._entries.pop("topic_pairs", None)
        R.METRICS.unregister("topic_accuracy")
        schemas.ROW_SCHEMAS.unregister("topic_pairs")


class _FolderTask(rmbench.Task):
    """A kind whose --data may be a folder (as VL-RewardBench's data file beside its images)."""

    reads_folder = True

    def __init__(self, path: str | None = None) -> None:
        self.path = path

    def groups(self):
        yield from ()


def test_a_kind_that_declares_reads_folder_is_handed_the_folder(tmp_path):
    """--data TASK=FOLDER: a kind with ``reads_folder`` gets the folder's absolute path, any other
    kind the one line that it reads a file (the class attribute, no list of kinds in the loader)."""
    from rmbench.core.specs import TaskSpec
    from rmbench.tasks.loading import task_spec_with_data

    rmbench.register_task_kind("plugin_folder_kind", _FolderTask)
    rmbench.register_task_kind("plugin_file_kind", type("FileTask", (_FolderTask,), {"reads_folder": False}))
    try:
        spec = TaskSpec.make(name="f", kind="plugin_folder_kind", args={})
        assert task_spec_with_data(spec, str(tmp_path)).args_dict["path"] == str(tmp_path.resolve())
        with pytest.raises(DataError, match="is a folder, but task 'g'"):
            task_spec_with_data(TaskSpec.make(name="g", kind="plugin_file_kind", args={}), str(tmp_path))
    finally:
        for kind in ("plugin_folder_kind", "plugin_file_kind"):
            TASK_KINDS.unregister(kind)
            schemas.ROW_SCHEMAS.unregister(kind)
    assert [k for k in ("ppe_correctness", "rmb", "vl_rewardbench", "mm_rewardbench")
            if TASK_KINDS.get(k).reads_folder] == ["ppe_correctness", "rmb", "vl_rewardbench", "mm_rewardbench"]
