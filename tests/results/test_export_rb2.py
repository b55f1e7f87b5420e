"""``rmbench export --format rewardbench2-results``: RewardBench 2's results layout, pinned to the
official code that writes it.

The official files come from the official code itself: the lines of ``scripts/run_v2.py``
(allenai/reward-bench at 05a9005, ``../shared/official``; the same lines ship in the
``rewardbench`` 0.1.4 wheel's ``scripts/run_v2.py``) from "add subsets and ids back" to the end of
``main()`` are executed on the run's own rewards, with ``rewardbench`` 0.1.4's
``reroll_and_score_dataset``, ``process_single_model`` and ``save_to_hub`` (``--debug`` keeps
``save_to_hub`` local: it writes ``./results/eval-set/{model}.json`` and
``./results/eval-set-scores/{model}.json`` and uploads nothing). rmbench's files must equal them:
the per-item file byte for byte, the summary key for key (its values to 1e-12: the Ties score is
rmbench's own computation of the official formula). The official scores recomputed from the
exported per-item file by the official scoring code (``tests/support/rb_official.py``) equal rmbench's.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import random
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.errors import ConfigError, DataError
from rmbench.results.publishing.export import export_runs
from rmbench.results.publishing.export_formats import ExportOptions
from rmbench.results.publishing.rb2_results import NOTE_KEY, RB2_ROWS, Rb2Item
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.golden_runs import HERE, _rb2_rows, _write_lines

REPO = Path(__file__).resolve().parents[2]
RUN_V2 = REPO.parent / "shared" / "official" / "reward-bench-05a9005" / "scripts" / "run_v2.py"
RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
HASHED = f"python:{HERE}:hashed"
FORCED = ExportOptions(force=True)  # the runs read local copies of a few rows: written only with --force


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rb2runs")
    rng = random.Random(45)
    rb2 = _write_lines(root / "rb2.jsonl", _rb2_rows(rng, RB2_SUBSETS))
    ties = _write_lines(root / "ties.jsonl", _rb2_rows(rng, ("Ties",)))
    for model, name in (("length", "len"), (HASHED, "hashed")):
        evaluate(EvalConfig(model=model, tasks=("rewardbench2",), data=(("rewardbench2", rb2),), n_bootstrap=20,
                            use_cache=False), out_dir=root / name)
    evaluate(EvalConfig(model="length", tasks=("ties",), data=(("ties", ties),), n_bootstrap=20, use_cache=False),
             out_dir=root / "len_ties")
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=20, use_cache=False),
             out_dir=root / "len_sample")
    return {name: load_run(root / name) for name in ("len", "hashed", "len_ties", "len_sample")}


def _official():
    rb_official = pytest.importorskip("tests.support.rb_official")
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    return rb_official


def _run_v2_block() -> str:
    """The lines of run_v2.py's main() after inference: from the shared checkout, else the wheel's copy."""
    candidates = [RUN_V2]
    try:
        import scripts  # the rewardbench 0.1.4 wheel's scripts folder, a top-level package
        candidates.append(Path(scripts.__file__).with_name("run_v2.py"))
    except ImportError:
        pass
    for path in candidates:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            start = text.index("    # add subsets and ids back")
            return textwrap.dedent(text[start:text.index('if __name__ == "__main__":')])
    pytest.skip(f"scripts/run_v2.py of allenai/reward-bench not found ({RUN_V2}, nor the rewardbench wheel's)")


def official_files(items: list[Rb2Item], model: str, model_type: str, work: Path, monkeypatch) -> tuple[str, str]:
    """(summary, scores) as run_v2.py writes them for ``items``' rewards: its own lines, run."""
    rb = _official()._load()
    # What load_bon_dataset_v2 + the model give run_v2 at that point: one unrolled row per
    # completion, correct ones first, its "text" (here the completion: run_v2's is templated).
    dataset = rb.Dataset.from_dict({"text": [t for i in items for t in i.texts]})
    namespace = {
        "dataset": dataset, "subsets": [i.subset for i in items for _ in i.texts],
        "ids": [i.id for i in items for _ in i.texts], "scores": [s for i in items for s in i.scores],
        "total_completions": [len(i.texts) for i in items], "num_correct": [i.num_correct for i in items],
        "args": argparse.Namespace(model=model, revision=None, chat_template="rmbench", do_not_save=False,
                                   debug=True, disable_beaker_save=True),
        "model_type": model_type, "tokenizer": object(), "logger": logging.getLogger("run_v2"),
        "np": rb.np, "Dataset": rb.Dataset, "reroll_and_score_dataset": rb.utils.reroll_and_score_dataset,
        "process_single_model": rb.utils.process_single_model, "save_to_hub": rb.utils.save_to_hub,
        "check_tokenizer_chat_template": rb.utils.check_tokenizer_chat_template,
    }
    monkeypatch.chdir(work)
    exec(compile(_run_v2_block(), "run_v2.py", "exec"), namespace)  # noqa: S102 - the official code, as written
    base = work / "results"
    return ((base / "eval-set" / f"{model}.json").read_text(), (base / "eval-set-scores" / f"{model}.json").read_text())


def _items(scores: dict) -> list[Rb2Item]:
    return [Rb2Item(i, s, tuple(t), tuple(x), n) for i, s, t, x, n in
            zip(scores["id"], scores["subset"], scores["text"], scores["scores"], scores["num_correct"])]


@pytest.mark.parametrize("run, model", [("len", "rmbench/length"), ("len_ties", "rmbench/length")])
def test_files_equal_those_run_v2_writes(runs, run, model, tmp_path, monkeypatch):
    paths = export_runs([runs[run]], tmp_path / "out", "rewardbench2-results", options=FORCED)
    assert [p.relative_to(tmp_path / "out").as_posix() for p in paths] == [
        f"eval-set/{model}.json", f"eval-set-scores/{model}.json"]
    summary_text, scores_text = (p.read_text() for p in paths)
    # a local copy of a few rows: --force writes the files with the note inside, one line of each
    assert all(f'"{NOTE_KEY}": "not a RewardBench 2 submission: ' in t for t in (summary_text, scores_text))
    scores_text = re.sub(rf'\n    "{NOTE_KEY}": "[^"\n]*",', "", scores_text)
    summary_text = json.dumps({k: v for k, v in json.loads(summary_text).items() if k != NOTE_KEY})
    scores = json.loads(scores_text)
    work = tmp_path / "official"
    work.mkdir()
    official_summary, official_scores = official_files(_items(scores), model, "rmbench length", work, monkeypatch)
    assert scores_text == official_scores  # byte for byte: keys, types, values, layout
    mine, theirs = json.loads(summary_text), json.loads(official_summary)
    assert list(mine) == list(theirs)
    for key, value in theirs.items():
        assert type(mine[key]) is type(value), key
        assert mine[key] == (pytest.approx(value, abs=1e-12) if isinstance(value, float) else value), key
    expected = set(RB2_SUBSETS) if run == "len" else {"Ties"}
    assert set(mine) == expected | {"model", "model_type", "chat_template"}


def test_scores_file_replays_to_rmbench_official_scores(runs, tmp_path):
    rb_official = _official()
    for folder in (runs["len"], runs["hashed"]):
        summary_path, scores_path = export_runs([folder], tmp_path / folder.label, "rewardbench2-results",
                                                options=FORCED)
        scores = json.loads(scores_path.read_text())
        rows = [{"id": i, "prompt": "", "subset": s, "chosen": t[:n], "rejected": t[n:]}
                for i, s, t, n in zip(scores["id"], scores["subset"], scores["text"], scores["num_correct"])]
        official = rb_official.rb2_official(rows, scores["scores"])
        task = folder.record.task("rewardbench2")
        mine = {m.subset or "Score": m.value for m in task.metrics if m.metric == "rewardbench2_score"
                and m.shift is None}
        assert set(official) == set(mine) == set(RB2_SUBSETS) | {"Score"}
        for key, value in official.items():
            assert mine[key] == pytest.approx(value, abs=1e-9), key
        summary = json.loads(summary_path.read_text())
        assert {s: summary[s] for s in RB2_SUBSETS} == {s: mine[s] for s in RB2_SUBSETS}


def test_items_follow_the_data_and_the_rewards(runs, tmp_path):
    paths = export_runs([runs["len"]], tmp_path, "rewardbench2-results", options=FORCED)
    scores = json.loads(paths[1].read_text())
    data = Path(runs["len"].record.task("rewardbench2").args["path"])
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    assert scores["id"] == [r["id"] for r in rows]
    assert scores["subset"] == [r["subset"] for r in rows]
    assert scores["num_correct"] == [len(r["chosen"]) for r in rows]
    assert scores["text"] == [r["chosen"] + r["rejected"] for r in rows]
    # the length baseline's reward is the completion's length in characters
    assert scores["scores"] == [[float(len(t)) for t in r["chosen"] + r["rejected"]] for r in rows]
    top = [max(s) for s in scores["scores"]]
    assert scores["results"] == [(1 / s.count(m) if s[0] == m else 0.0) for s, m in zip(scores["scores"], top)]
    assert (scores["model"], scores["model_type"], scores["chat_template"]) == ("rmbench/length", "rmbench length",
                                                                                 "rmbench")


def test_which_runs_are_written(runs, tmp_path):
    notes: list[str] = []
    paths = export_runs(list(runs.values()), tmp_path, "rewardbench2-results", warn=notes.append, options=FORCED)
    names = sorted(p.relative_to(tmp_path).as_posix() for p in paths)
    hashed = "local/python_golden_runs.py_hashed"  # a python: model's name holds a path: cut to its file
    assert names == sorted(["eval-set/rmbench/length.json", "eval-set-scores/rmbench/length.json",
                            f"eval-set/{hashed}.json", f"eval-set-scores/{hashed}.json"])
    # length: the rewardbench2 run holds Ties; its ties run and the sample run are left out, each with a line
    assert len(notes) == 2, notes
    assert any("len_sample" in n and "no RewardBench 2 task" in n for n in notes)
    assert any("len_ties" in n for n in notes)
    with pytest.raises(ConfigError, match="no RewardBench 2 task"):
        export_runs([runs["len_sample"]], tmp_path / "none", "rewardbench2-results")
    assert not (tmp_path / "none").exists()


def test_moved_data_is_named_with_data(runs, tmp_path):
    run = runs["len_ties"]
    moved = tmp_path / "moved.jsonl"
    src = Path(run.record.task("ties").args["path"])
    moved.write_bytes(src.read_bytes())
    gone = run.path.parent / "ties_gone.jsonl"
    src.rename(gone)
    try:
        with pytest.raises(DataError, match="--data"):  # the file is gone: one line saying how to name it
            export_runs([run], tmp_path / "a", "rewardbench2-results", options=FORCED)
        assert not (tmp_path / "a").exists()
        from rmbench.tasks.loading import DataOverride
        paths = export_runs([run], tmp_path / "b", "rewardbench2-results",
                            options=ExportOptions(data={"ties": DataOverride("ties", str(moved))}, force=True))
        assert json.loads(paths[1].read_text())["subset"] == ["Ties"] * 60
    finally:
        gone.rename(src)


def test_cli_writes_refuses_to_replace_and_forces(runs, tmp_path):
    from rmbench.cli import app

    out = tmp_path / "out"
    args = ["export", str(runs["len"].path), "--format", "rewardbench2-results", "--out", str(out)]
    local = CliRunner().invoke(app, args)  # a local copy of a few rows is no RewardBench 2 submission
    assert local.exit_code == 2 and not out.exists()
    assert local.output.strip().splitlines() == [
        f"error: {runs['len'].path}: scored on a local copy (rb2.jsonl: 60 prompts, not RewardBench 2's {RB2_ROWS}); "
        f"RewardBench 2's submission files hold its whole data, so nothing was written (--force writes them with "
        f"this note inside)"], local.output
    args.append("--force")
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "Wrote" in first.output and "eval-set-scores" in first.output
    again = CliRunner().invoke(app, args)  # the same content: nothing to refuse, nothing written
    assert again.exit_code == 0 and again.output.count("Unchanged (already this content)") == 2, again.output
    summary = out / "eval-set" / "rmbench" / "length.json"
    assert json.loads(summary.read_text())[NOTE_KEY].startswith("not a RewardBench 2 submission: scored on a local")
    summary.write_text("{}")
    refused = CliRunner().invoke(app, args[:-1])
    assert refused.exit_code == 2 and "error:" in refused.output and "--force" in refused.output
    assert "Traceback" not in refused.output and summary.read_text() == "{}"
    forced = CliRunner().invoke(app, args)
    assert forced.exit_code == 0 and json.loads(summary.read_text())["model"] == "rmbench/length"
    assert sorted(p.name for p in summary.parent.iterdir()) == ["length.json"]  # no temporary files left


def test_only_rewardbench2s_whole_data_is_a_submission(runs):
    """From the Hub without --limit, or a local copy of its 1,865 rows: a submission; a --limit
    sample or another local copy: not (the reason)."""
    from rmbench.results.publishing.rb2_results import not_rewardbench2_data

    record = runs["len"].record
    task = record.task("rewardbench2")
    hub = dataclasses.replace(task, args={k: v for k, v in task.args.items() if k != "path"})
    assert not_rewardbench2_data(record, hub) is None
    whole = dataclasses.replace(task, counts=dataclasses.replace(task.counts, groups=RB2_ROWS))
    assert not_rewardbench2_data(record, whole) is None
    assert "not RewardBench 2's 1865" in str(not_rewardbench2_data(record, task))
    limited = dataclasses.replace(record, config=dataclasses.replace(record.config, limit=10))
    assert str(not_rewardbench2_data(limited, hub)).startswith("a --limit 10 sample")
    ties = runs["len_ties"].record
    assert "its ties task scored on a local copy" in str(not_rewardbench2_data(ties, ties.task("ties")))
