"""M-RewardBench (``m_rewardbench``): per-language official scores, their average, and the
translation shift against the English rows with the same id.

Files in M-RewardBench's schema (``id``, ``language``, ``prompt``, ``chosen``, ``rejected``,
``source``, ``category``; English in RewardBench's, ``subset``) are written here. The reward of
a response is the number it ends with, so which pairs are right is chosen row by row.
"""

import json
import math
import random
from pathlib import Path

import pytest

import rmbench
from rmbench.errors import ConfigError, DataError
from rmbench.results.storage.folder import load_run
from rmbench.tasks.m_rewardbench import MRB_EXAMPLE_COUNTS, MRewardBenchTask
from tests.support import rb_official

RM = "def f(pairs):\n    return [float(r.rsplit(' ', 1)[1]) for _, r in pairs]\n"

# id -> RewardBench subset; the sections: Chat (1, 2), Chat Hard (3), Safety (4), Reasoning (5, 6)
SUBSETS = {1: "alpacaeval-easy", 2: "alpacaeval-easy", 3: "mt-bench-hard", 4: "refusals-dangerous", 5: "math-prm",
           6: "hep-python"}
RIGHT = {"eng_Latn": {1, 2, 3, 4, 5, 6}, "fra_Latn": {1, 3, 5}, "deu_Latn": {4, 6}}
"""The ids each language gets right (chosen 1 vs rejected 0; the others chosen 0 vs rejected 1)."""


def row(lang, i, subset, right, **extra):
    good, bad = (1, 0) if right else (0, 1)
    r = {"id": i, "language": lang, "prompt": f"{lang} question {i}", "chosen": f"{lang} good {i} {good}",
         "rejected": f"{lang} bad {i} {bad}", "chosen_model": "m1", "rejected_model": "m2"}
    if lang == "eng_Latn":
        r["subset"] = subset  # RewardBench's own schema
    else:
        r.update(source=subset, category="chat")  # M-RewardBench's
    return {**r, **extra}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def small_rows():
    return [row(lang, i, s, i in RIGHT[lang]) for lang in RIGHT for i, s in SUBSETS.items()]


@pytest.fixture
def rm(tmp_path):
    path = tmp_path / "rm.py"
    path.write_text(RM)
    return f"python:{path}:f"


def run(tmp_path, rm, data, name="run", **config):
    return rmbench.evaluate(rmbench.EvalConfig(model=rm, tasks=("m_rewardbench",),
                                               data=(("m_rewardbench", str(data)),), n_bootstrap=20,
                                               use_cache=False, **config), out_dir=tmp_path / name)


# Hand computation (M-RewardBench's weights: math-prm 983, hep-python 163):
FRA = (0.5 + 1 + 0 + 983 / 1146) / 4  # Chat 1 of 2, Chat Hard 1, Safety 0, Reasoning math right, python wrong
DEU = (0 + 0 + 1 + 163 / 1146) / 4


def test_language_scores_average_and_gaps_by_hand(tmp_path, rm):
    rec = run(tmp_path, rm, write(tmp_path / "mrb.jsonl", small_rows()))
    score = lambda subset=None: rec.value("m_rewardbench", "m_rewardbench_score", subset=subset)  # noqa: E731
    assert score("fra_Latn") == pytest.approx(FRA, abs=1e-12)
    assert score("deu_Latn") == pytest.approx(DEU, abs=1e-12)
    assert score("eng_Latn") == pytest.approx(1.0)
    assert score() == pytest.approx(3.5 / 8, abs=1e-12)  # the mean over the two languages, English left out
    assert score("fra_Latn/Chat") == pytest.approx(0.5) and score("fra_Latn/Reasoning") == pytest.approx(983 / 1146)
    assert score("deu_Latn/Safety") == pytest.approx(1.0) and score("eng_Latn/Chat Hard") == pytest.approx(1.0)
    gap = lambda subset=None: rec.value("m_rewardbench", "m_rewardbench_english_gap", subset=subset)  # noqa: E731
    assert gap("fra_Latn") == pytest.approx(FRA - 1) and gap() == pytest.approx(3.5 / 8 - 1)
    # the paired-shift machinery: each language a shift slice, its gap to the English rows with a CI
    fra = rec.metric("m_rewardbench", "pairwise_accuracy_shift_gap", shift="translation:fra_Latn")
    deu = rec.metric("m_rewardbench", "pairwise_accuracy_shift_gap", shift="translation:deu_Latn")
    assert fra.value == pytest.approx(3 / 6 - 1) and deu.value == pytest.approx(2 / 6 - 1)
    assert fra.ci_low <= fra.value <= fra.ci_high and fra.n == 6
    assert rec.value("m_rewardbench", "pairwise_accuracy", shift="none") == pytest.approx(1.0)
    task = rec.task("m_rewardbench")
    assert [c.subset for c in task.official.columns] == ["fra_Latn", "deu_Latn", "eng_Latn", None]


def test_groups_pair_each_translation_with_the_english_row_of_its_id(tmp_path):
    groups = list(MRewardBenchTask(path=str(write(tmp_path / "mrb.jsonl", small_rows()))).groups())
    assert [g.id for g in groups[:3]] == ["eng_Latn:1", "fra_Latn:1", "deu_Latn:1"]
    fra = groups[1]
    assert fra.shift == "translation:fra_Latn" and fra.source_id == "eng_Latn:1" and fra.subset == "alpacaeval-easy"
    assert groups[0].shift is None and groups[0].source_id is None and len(groups) == 18


def test_files_per_language_and_language_selection(tmp_path, rm):
    rows = small_rows()
    paths = {lang: str(write(tmp_path / f"{lang}.jsonl", [r for r in rows if r["language"] == lang]))
             for lang in RIGHT}
    task = MRewardBenchTask(paths=paths, languages="deu_Latn")
    groups = list(task.groups())
    assert {g.shift for g in groups} == {None, "translation:deu_Latn"} and len(groups) == 12
    assert [c.subset for c in task.official.columns] == ["deu_Latn", "eng_Latn", None]
    # --task-arg languages=... on the run (here through EvalConfig, as the CLI passes it)
    rec = run(tmp_path, rm, write(tmp_path / "mrb.jsonl", rows), task_args=(("languages", "fra_Latn"),))
    assert rec.value("m_rewardbench", "m_rewardbench_score") == pytest.approx(FRA, abs=1e-12)
    assert rec.metric("m_rewardbench", "m_rewardbench_score", subset="deu_Latn") is None
    assert rec.task("m_rewardbench").args["languages"] == "fra_Latn"
    with pytest.raises(DataError, match="languages names ita_Latn, which paths does not give"):
        list(MRewardBenchTask(paths=paths, languages=["ita_Latn"]).groups())
    with pytest.raises(DataError, match="no rows of language ita_Latn in .*mrb.jsonl"):
        list(MRewardBenchTask(path=str(tmp_path / "mrb.jsonl"), languages=["ita_Latn"]).groups())
    with pytest.raises(ValueError, match="eng_Latn is the English original"):
        MRewardBenchTask(path="x.jsonl", languages="eng_Latn,fra_Latn")


def test_task_args_name_their_task(tmp_path, rm):
    data = write(tmp_path / "mrb.jsonl", small_rows())
    rec = rmbench.evaluate(rmbench.EvalConfig(model=rm, tasks=("m_rewardbench", "hamiltonian"), n_bootstrap=0,
                                              data=(("m_rewardbench", str(data)),), use_cache=False,
                                              task_args=(("m_rewardbench.languages", "deu_Latn"),)),
                           out_dir=tmp_path / "two")
    assert rec.value("m_rewardbench", "m_rewardbench_score") == pytest.approx(DEU, abs=1e-12)
    with pytest.raises(ConfigError, match="'nope' is not among the tasks"):
        rmbench.evaluate(rmbench.EvalConfig(model=rm, tasks=("m_rewardbench",), n_bootstrap=0,
                                            data=(("m_rewardbench", str(data)),), task_args=(("nope.x", 1),)))


def test_a_translation_without_english_original_is_scored_unpaired(tmp_path, rm):
    rows = small_rows() + [row("fra_Latn", 99, "alpacaeval-easy", True)]
    task = MRewardBenchTask(path=str(write(tmp_path / "mrb.jsonl", rows)))
    groups = list(task.groups())
    lone = [g for g in groups if g.id == "fra_Latn:99"]
    assert lone and lone[0].source_id is None and lone[0].shift == "translation:fra_Latn"
    rec = run(tmp_path, rm, tmp_path / "mrb.jsonl")
    fra = (2 / 3 + 1 + 0 + 983 / 1146) / 4  # Chat now 2 of 3
    assert rec.value("m_rewardbench", "m_rewardbench_score", subset="fra_Latn") == pytest.approx(fra, abs=1e-12)
    # the gaps pair only rows with an English original: as without the extra row
    assert rec.value("m_rewardbench", "m_rewardbench_english_gap", subset="fra_Latn") == pytest.approx(FRA - 1)
    shift_gap = rec.metric("m_rewardbench", "pairwise_accuracy_shift_gap", shift="translation:fra_Latn")
    assert shift_gap.value == pytest.approx(3 / 6 - 1) and shift_gap.n == 6


def test_a_language_with_no_english_ids_is_an_error(tmp_path):
    rows = [r for r in small_rows() if r["language"] != "deu_Latn"]
    rows += [row("deu_Latn", 100 + i, s, True) for i, s in SUBSETS.items()]  # ids RewardBench does not have
    with pytest.raises(DataError, match=r"no deu_Latn row has an English original with the same id .*line 13"):
        list(MRewardBenchTask(path=str(write(tmp_path / "mrb.jsonl", rows))).groups())


@pytest.mark.parametrize("change, field", [
    (lambda r: r.pop("source"), "source"),
    (lambda r: r.update(chosen=None), "chosen"),
    (lambda r: r.pop("id"), "id"),
    (lambda r: r.update(language="French!"), "language"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, change, field):
    rows = small_rows()
    change(rows[8])  # line 9: fra_Latn, id 3
    path = write(tmp_path / "mrb.jsonl", rows)
    with pytest.raises(DataError) as info:
        list(MRewardBenchTask(path=str(path)).groups())
    assert info.value.path == str(path) and info.value.line == 9 and info.value.field == field


def test_duplicate_ids_in_a_language_are_named(tmp_path):
    rows = small_rows() + [row("deu_Latn", 2, "alpacaeval-easy", True)]
    with pytest.raises(DataError, match="duplicate id 2 in deu_Latn") as info:
        list(MRewardBenchTask(path=str(write(tmp_path / "mrb.jsonl", rows))).groups())
    assert info.value.line == 19 and info.value.field == "id"


def test_english_from_its_own_file(tmp_path):
    rows = small_rows()
    english = write(tmp_path / "rb.jsonl", [r for r in rows if r["language"] == "eng_Latn"])
    data = write(tmp_path / "mrb.jsonl", [r for r in rows if r["language"] != "eng_Latn"])
    groups = list(MRewardBenchTask(path=str(data), english=str(english)).groups())
    assert len(groups) == 18 and sum(g.shift is None for g in groups) == 6


def test_skip_bad_rows_leaves_out_one_row(tmp_path, rm):
    rows = small_rows()
    rows[8].pop("chosen")
    rec = run(tmp_path, rm, write(tmp_path / "mrb.jsonl", rows), skip_bad_rows=True)
    assert rec.task("m_rewardbench").counts.groups == 17
    # fra_Latn lost its only Chat Hard row: that section is undefined and the language scores three
    assert math.isnan(rec.value("m_rewardbench", "m_rewardbench_score", subset="fra_Latn/Chat Hard"))
    assert rec.value("m_rewardbench", "m_rewardbench_score", subset="fra_Latn") == pytest.approx(
        (0.5 + 0 + 983 / 1146) / 3, abs=1e-12)


def test_hub_unreachable_fails_with_one_line_naming_data(tmp_path, monkeypatch):
    from rmbench import catalog, hub
    from rmbench.tasks.loading import load_groups

    monkeypatch.setattr(hub, "unreachable", lambda: "http://127.0.0.1:9: [Errno 111] Connection refused")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    # this checkout's entries (an editable install elsewhere would serve its own tasks/ folder)
    monkeypatch.setattr(catalog, "builtin_tasks_dir", lambda: Path(__file__).resolve().parents[2] / "tasks")

    spec = catalog.load_catalog().task_spec("m_rewardbench")
    assert spec.args_dict["dataset"] == "C4AI-Community/multilingual-reward-bench"
    with pytest.raises(DataError) as info:
        load_groups(spec)
    text = str(info.value)
    assert "\n" not in text and "--data TASK=PATH" in text and "multilingual-reward-bench" in text


def test_leaderboard_build_shows_the_official_layout(tmp_path, rm):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    run(tmp_path, rm, write(tmp_path / "mrb.jsonl", small_rows()))
    result = CliRunner().invoke(app, ["leaderboard", "build", str(tmp_path / "run"), "--format", "md",
                                      "--out", str(tmp_path / "lb.md")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "lb.md").read_text()
    assert "M-RewardBench" in md and "fra_Latn" in md and "deu_Latn" in md and "Avg" in md
    assert f"{3.5 / 8:.3f}" in md and "translation:fra_Latn" in md


ALL_SUBSETS = tuple(MRB_EXAMPLE_COUNTS)


@pytest.mark.slow  # imports RewardBench's code and datasets: a few seconds
def test_sections_equal_rewardbench_code_with_m_rewardbench_weights(tmp_path, rm):
    """Per language, the sections are RewardBench's ``calculate_scores_per_section`` (the 0.1.4
    wheel, as M-RewardBench's ``run_rewardbench.py`` calls it) with M-RewardBench's example counts
    (the weights of its ``analysis/plot_utils.py``), and the score their plain mean."""
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    calculate = rb_official._load().utils.calculate_scores_per_section
    mapping = rb_official._load().constants.SUBSET_MAPPING
    rng = random.Random(5)
    right = {lang: {i for i in range(len(ALL_SUBSETS) * 3) if rng.random() < p}
             for lang, p in (("eng_Latn", 0.8), ("fra_Latn", 0.6), ("jpn_Jpan", 0.4))}
    rows = [row(lang, i, ALL_SUBSETS[i % len(ALL_SUBSETS)], i in right[lang]) for lang in right
            for i in range(len(ALL_SUBSETS) * 3)]
    rec = run(tmp_path, rm, write(tmp_path / "mrb.jsonl", rows))
    scores = []
    for lang in right:
        acc = {}
        for s in ALL_SUBSETS:
            ids = [i for i in range(len(ALL_SUBSETS) * 3) if ALL_SUBSETS[i % len(ALL_SUBSETS)] == s]
            acc[s] = sum(i in right[lang] for i in ids) / len(ids)
        official = calculate(MRB_EXAMPLE_COUNTS, mapping, acc)
        for section, value in official.items():
            got = rec.value("m_rewardbench", "m_rewardbench_score", subset=f"{lang}/{section}")
            assert got == pytest.approx(value, abs=1e-9), (lang, section)
        expected = sum(official.values()) / len(official)  # plot_utils.get_scores: the four sections' mean
        assert rec.value("m_rewardbench", "m_rewardbench_score", subset=lang) == pytest.approx(expected, abs=1e-9)
        scores.append(expected)
    assert rec.value("m_rewardbench", "m_rewardbench_score") == pytest.approx((scores[1] + scores[2]) / 2, abs=1e-9)


def test_export_names_each_language_score_with_its_range(tmp_path, rm):
    from rmbench.results.publishing.export import to_every_eval_ever

    rec = run(tmp_path, rm, write(tmp_path / "mrb.jsonl", small_rows()))
    doc = to_every_eval_ever([rec])
    results = {r["evaluation_name"]: r for r in doc["evaluation_results"]}
    fra = results["rmbench.m_rewardbench.m_rewardbench_score.fra_Latn"]
    assert fra["score_details"]["score"] == pytest.approx(FRA)
    assert (fra["metric_config"]["min_score"], fra["metric_config"]["max_score"]) == (0.0, 1.0)
    gap = results["rmbench.m_rewardbench.m_rewardbench_english_gap"]
    assert gap["metric_config"]["min_score"] == -1.0


def test_cli_task_arg_selects_languages(tmp_path, rm):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    data = write(tmp_path / "mrb.jsonl", small_rows())
    args = ["eval", "--model", rm, "--tasks", "m_rewardbench", "--data", f"m_rewardbench={data}", "--bootstrap", "0",
            "--no-cache", "--out", str(tmp_path / "cli")]
    result = CliRunner().invoke(app, args + ["--task-arg", "languages=deu_Latn"])
    assert result.exit_code == 0, result.output
    rec = load_run(tmp_path / "cli").record
    assert rec.value("m_rewardbench", "m_rewardbench_score") == pytest.approx(DEU, abs=1e-12)
    assert rec.task("m_rewardbench").args["languages"] == "deu_Latn"
    bad = CliRunner().invoke(app, args + ["--overwrite", "--task-arg", "languages=eng_Latn"])
    assert bad.exit_code == 2 and "eng_Latn is the English original" in bad.output


def test_hub_source_reads_one_config_per_language_and_rewardbench_for_english(monkeypatch):
    from rmbench.tasks import m_rewardbench

    calls = []
    rows = {lang: [row(lang, i, s, True) for i, s in SUBSETS.items()] for lang in RIGHT}

    def fake_iter_rows(path=None, dataset=None, revision=None, split="test", config=None):
        calls.append((dataset, config, split))
        lang = config or "eng_Latn"
        location = f"hf://datasets/{dataset}@main{'/' + config if config else ''}[{split}]"
        for i, r in enumerate(rows[lang], start=1):
            yield location, i, {k: v for k, v in r.items() if k != "language"}  # the hub's English rows: RewardBench's

    monkeypatch.setattr(m_rewardbench, "iter_rows", fake_iter_rows)
    task = MRewardBenchTask(dataset="C4AI-Community/multilingual-reward-bench", languages="fra_Latn,deu_Latn")
    groups = list(task.groups())
    assert calls == [("C4AI-Community/multilingual-reward-bench", "fra_Latn", "test"),
                     ("C4AI-Community/multilingual-reward-bench", "deu_Latn", "test"),
                     ("allenai/reward-bench", None, "filtered")]
    assert len(groups) == 18 and groups[1].source_id == "eng_Latn:1"
    assert len(MRewardBenchTask(dataset="x/y").official.columns) == 23 + 2  # every language, English, Avg
