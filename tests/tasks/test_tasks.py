import json

import pytest

from rmbench.catalog import builtin_tasks_dir, load_catalog
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError
from rmbench.tasks.jsonl import GroupsTask, PreferenceTask
from rmbench.tasks.loading import load_groups, task_spec_with_data
from rmbench.tasks.ties import TiesTask
from tests.conftest import shared_file


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_builtin_ties_has_20_prompt_pairs_in_rb2_shape():
    catalog = load_catalog()
    spec = catalog.task_spec("ties_sample")
    assert spec.kind == "rb2_ties" and spec.version == 1
    task, groups = load_groups(spec)
    assert len(groups) == 40
    assert {g.id.split(":")[0] for g in groups} == {"tied", "ref"}
    for g in groups:
        n_correct = sum(g.utilities)
        assert (n_correct == 1) == g.id.startswith("ref:")
        # specificity pairs only among the correct answers
        assert len(g.specificity_pairs()) == n_correct * (n_correct - 1) // 2
    units = task.bootstrap_units(groups)
    assert units[0] == units[1]  # tied:0 and ref:0 resample together


def test_rb2_sample_file_loads(tmp_path):
    path = shared_file("rb2/ties_sample.jsonl")
    groups = list(TiesTask(path=str(path)).groups())
    assert [g.id for g in groups] == ["tied:0", "ref:0", "tied:1", "ref:1", "tied:2", "ref:2"]
    assert groups[0].utilities.count(1) == 10 and len(groups[0].responses) == 22


GOOD_TIES = {"id": "tied:0", "prompt": "Pick a digit.", "chosen": ["1", "2"], "rejected": ["x"], "num_correct": 2}


@pytest.mark.parametrize("row, field, message", [
    ({**GOOD_TIES, "chosen": "1"}, "chosen", "list of strings"),
    ({**GOOD_TIES, "num_correct": 3}, "num_correct", "is 3 but 'chosen' has 2"),
    ({**GOOD_TIES, "id": "prompt-0"}, "id", "tied:K"),
    ({k: v for k, v in GOOD_TIES.items() if k != "prompt"}, "prompt", "missing"),
    ({**GOOD_TIES, "prompt": 5}, "prompt", "string or a non-empty list"),
    ({**GOOD_TIES, "rejected": []}, "rejected", "is empty"),
])
def test_bad_ties_row_names_file_line_and_field(tmp_path, row, field, message):
    path = write_jsonl(tmp_path / "t.jsonl", [{**GOOD_TIES, "id": "ref:0", "chosen": ["1"], "num_correct": 1}, row])
    with pytest.raises(DataError) as info:
        list(TiesTask(path=str(path)).groups())
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 2, field)
    assert message in str(err) and "line 2" in str(err) and repr(field) in str(err)


def test_bad_json_line_and_missing_file(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [GOOD_TIES, "{not json"])
    with pytest.raises(DataError, match=r"t.jsonl, line 2: not valid JSON"):
        list(TiesTask(path=str(path)).groups())
    with pytest.raises(DataError, match="no such file"):
        list(TiesTask(path=str(tmp_path / "nope.jsonl")).groups())


def test_other_rb2_subsets_are_skipped_and_duplicates_refused(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [GOOD_TIES, {**GOOD_TIES, "id": "5", "subset": "Math"}])
    assert [g.id for g in TiesTask(path=str(path)).groups()] == ["tied:0"]
    path = write_jsonl(tmp_path / "d.jsonl", [GOOD_TIES, GOOD_TIES])
    with pytest.raises(DataError, match="line 2, field 'id': duplicate"):
        list(TiesTask(path=str(path)).groups())


def test_preference_and_groups_loaders(tmp_path):
    pref = write_jsonl(tmp_path / "p.jsonl", [
        {"prompt": "q", "chosen": "good", "rejected": "bad"},
        {"prompt": "q2", "chosen": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "ok"}],
         "rejected": [{"role": "user", "content": "q2"}, {"role": "assistant", "content": "no"}], "id": 7},
    ])
    groups = list(PreferenceTask(path=str(pref)).groups())
    assert [g.id for g in groups] == ["1", "7"] and groups[1].responses == ("ok", "no")
    g = ComparisonGroup("a", "q", ["x", "y", "z"], [2, 1, 1], subset="s", source_id="o", shift="paraphrase",
                        meta={"k": 1})
    native = write_jsonl(tmp_path / "g.jsonl", [g.to_json()])
    assert list(GroupsTask(path=str(native)).groups()) == [g]
    bad = write_jsonl(tmp_path / "b.jsonl", [{**g.to_json(), "utilities": [1, 0]}])
    with pytest.raises(DataError, match="line 1, field 'utilities': 2 utilities for 3 responses"):
        list(GroupsTask(path=str(bad)).groups())


def test_data_override_replaces_the_source(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [GOOD_TIES])
    spec = task_spec_with_data(load_catalog().task_spec("ties"), str(path))
    assert "dataset" not in spec.args_dict and spec.args_dict["path"] == str(path)
    _, groups = load_groups(spec)
    assert [g.id for g in groups] == ["tied:0"]


def test_hub_source_fails_clearly_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match="could not load the dataset from the hub.*--data TASK=PATH"):
        list(TiesTask(dataset="allenai/reward-bench-2", revision="main").groups())


# --- entry files -------------------------------------------------------------------------------

def test_yaml_entry_instantiates_a_kind_with_relative_paths(tmp_path):
    write_jsonl(tmp_path / "mine.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    (tmp_path / "mine.yaml").write_text("name: mine\nkind: preference\nversion: 3\nargs:\n  path: mine.jsonl\n")
    catalog = load_catalog([tmp_path])
    spec = catalog.task_spec("mine")
    assert spec.version == 3 and spec.args_dict["path"] == str((tmp_path / "mine.jsonl").resolve())
    _, groups = load_groups(spec)
    assert len(groups) == 1


@pytest.mark.parametrize("text, message", [
    ("name: x\nkind: preference\nargz: {}\n", "field 'argz': unknown key (did you mean 'args'?)"),
    ("name: x\nkind: prefrence\n", "unknown task kind 'prefrence'; did you mean 'preference'"),
    ("name: x\n", "field 'kind': missing"),
    ("name: x\nkind: preference\nversion: one\n", "field 'version'"),
    ("name: [x\n", "cannot parse"),
    ("- a\n- b\n", "expected a mapping"),
])
def test_broken_entry_fails_loudly_with_its_path(tmp_path, text, message):
    (tmp_path / "broken.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_catalog([tmp_path])
    assert str(tmp_path / "broken.yaml") in str(info.value) and message in str(info.value)


def test_duplicate_task_names_across_folders_fail(tmp_path):
    (tmp_path / "t.yaml").write_text("name: ties\nkind: preference\n")
    with pytest.raises(ConfigError, match="duplicate task name 'ties'"):
        load_catalog([tmp_path])


def test_unknown_task_suggests():
    with pytest.raises(ConfigError, match="did you mean 'ties'"):
        load_catalog().task_spec("tise")


def test_builtin_dir_is_the_tasks_folder():
    assert (builtin_tasks_dir() / "ties_sample.yaml").is_file()


def test_the_train_held_out_split_is_deterministic_keeps_units_together_and_holds_out_a_fifth():
    from rmbench.core.splits import parts_of
    from rmbench.core.types import ComparisonGroup
    from rmbench.tasks.base import units_by_source

    groups = []
    for i in range(500):
        groups.append(ComparisonGroup(f"g{i}", "q", ["a", "b"], [1, 0]))
        groups.append(ComparisonGroup(f"g{i}:para", "q", ["c", "d"], [1, 0], source_id=f"g{i}", shift="paraphrase"))
    parts = parts_of(groups, units_by_source(groups))
    assert all(parts[2 * i] == parts[2 * i + 1] for i in range(500))  # a copy goes with its original
    assert 0.15 < parts.count("held_out") / len(parts) < 0.25
    reversed_parts = parts_of(groups[::-1], units_by_source(groups[::-1]))
    assert reversed_parts[::-1] == parts  # order of the rows does not matter


def test_a_part_argument_splits_any_task_and_limit_applies_within_the_part():
    from rmbench.errors import ConfigError
    from rmbench.tasks.loading import load_groups, task_spec_with_args

    spec = load_catalog().task_spec("ties_sample")
    _, every = load_groups(spec)
    _, train = load_groups(task_spec_with_args(spec, {"part": "train"}))
    _, held = load_groups(task_spec_with_args(spec, {"part": "held_out"}))
    assert {g.id for g in train}.isdisjoint(g.id for g in held) and len(train) + len(held) == len(every)
    key = {g.id: g.id.split(":", 1)[1] for g in every}  # tied:K and ref:K are one unit: one part
    assert {key[g.id] for g in train}.isdisjoint(key[g.id] for g in held)
    _, sample = load_groups(task_spec_with_args(spec, {"part": "held_out"}), limit=2)
    assert {g.id for g in sample} <= {g.id for g in held} and len(sample) == 2
    assert len({key[g.id] for g in sample}) == 1  # one unit: tied:K with its ref:K
    with pytest.raises(ConfigError, match="part must be train or held_out"):
        load_groups(task_spec_with_args(spec, {"part": "test"}))


def test_a_task_group_asked_for_as_one_task_names_its_members():
    from rmbench.catalog import load_catalog
    from rmbench.errors import ConfigError

    with pytest.raises(ConfigError, match=r"'token_shift_sample' is a group of tasks \(paraphrase_shift_sample, "
                                          r"translation_shift_sample, paraphrase_invariance_sample\), not one task"):
        load_catalog().task_spec("token_shift_sample")
