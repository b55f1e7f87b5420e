"""Multimodal RewardBench (issue 56 item 2): an all_data.json and its image folder read as groups
whose prompts carry the images; the official accuracies hand-computed and, where the benchmark's
own scripts/2_get_accuracy.py is at hand (``RMBENCH_MMRB_DIR``: a checkout of github
facebookresearch/multimodal_rewardbench, or its scripts folder), equal to it on the same verdicts,
items without one (a reward tie, a judge's unparsed answer) decided by its seeded coin.

The folders are written here: synthetic PNG and JPEG images drawn with PIL, never the real data.
A response ends with ``[score N]``, the reward the ``python:`` model and the scripted judge give it.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rmbench.core.mm_rewardbench import category_of
from rmbench.core.prompts import prompt_images
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.mm_rewardbench import BETTER, MMRewardBenchTask

PIL = pytest.importorskip("PIL.Image")

# ID, Category, Better, the rewards of Output1 and Output2 (0: the judge gives no rating).
# A tie takes random.seed(123)'s next coin: A, A, A, A, B, A, B (draws 0.052 0.087 0.407 0.108 0.901 0.038 0.536).
ITEMS = [
    ("nocaps_1", "open_generation/correctness_task", "Output1", 7, 3),  # A, right
    ("visitbench_2", "open_generation/correctness_task", "Output2", 7, 3),  # A, wrong
    ("llava_3", "open_generation/preference_task", "Output2", 5, 5),  # tie -> coin 1 A, wrong
    ("mmmu-s_4", "knowledge", "Output1", 2, 8),  # B, wrong
    ("mmmu-v_5", "knowledge", "Output1", 6, 6),  # tie -> coin 2 A, right
    ("mathvista_6", "reasoning", "Output2", 1, 9),  # reasoning/math: B, right
    ("EMMA-Coding_7", "reasoning", "Output1", 4, 4),  # reasoning/coding: tie -> coin 3 A, right
    ("image2struct_8", "reasoning", "Output2", 4, 4),  # reasoning/coding: tie -> coin 4 A, wrong
    ("pairs_9", "safety", "Output2", 3, 3),  # safety/bias: tie -> coin 5 B, right
    ("hateful_10", "safety", "Output1", 9, 1),  # safety/toxicity: A, right
    ("MMBench_11", "vqa", "Output2", 2, 2),  # tie -> coin 6 A, wrong
    ("SEED-Bench_12", "vqa", "Output2", 3, 6),  # B, right
    ("RealworldQA_13", "vqa", "Output1", 8, 8),  # tie -> coin 7 B, wrong
]
EXPECTED = {"open_generation/correctness_task": 1 / 2, "open_generation/preference_task": 0.0, "knowledge": 1 / 2,
            "reasoning/math": 1.0, "reasoning/coding": 1 / 2, "safety/bias": 1.0, "safety/toxicity": 1.0,
            "vqa": 1 / 3, None: 7 / 13}

RM = "def f(items):\n    return [float(r.rsplit('[score ', 1)[1].rstrip(']')) for _, r in items]\n"


def write_folder(folder: Path, items=ITEMS, meta_category: bool = False) -> Path:
    """all_data.json and images/<k>.png|jpg under ``folder``; ``meta_category``: Category under Meta."""
    (folder / "images" / "sub").mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (item, category, better, s1, s2) in enumerate(items):
        name = f"images/sub/{k}.{'jpg' if k % 2 else 'png'}"
        PIL.new("RGB", (6, 4), (20 * k % 256, 255 - 20 * k % 256, 7)).save(folder / name)
        row = {"ID": item, "Text": f"What is shown in picture {k}?", "Image": name,
               "Output1": f"first answer to {item} [score {s1}]", "Output2": f"second answer to {item} [score {s2}]",
               "Better": better}
        row.update({"Meta": {"Category": category}} if meta_category else {"Category": category})
        rows.append(row)
    (folder / "all_data.json").write_text(json.dumps(rows, indent=2))
    return folder


def rm(tmp_path: Path) -> str:
    path = tmp_path / "rm.py"
    path.write_text(RM)
    return f"python:{path}:f"


def official(result) -> dict:
    return {m.subset: m for m in result.tasks[0].metrics if m.metric == "mm_rewardbench_score"}


def test_the_folder_reads_as_groups_with_their_images(tmp_path):
    folder = write_folder(tmp_path / "data")
    groups = list(MMRewardBenchTask(path=str(folder)).groups())
    assert [g.id for g in groups] == [i for i, *_ in ITEMS]
    assert [g.utilities for g in groups][:2] == [(1, 0), (0, 1)]
    assert groups[0].responses == ("first answer to nocaps_1 [score 7]", "second answer to nocaps_1 [score 3]")
    assert groups[0].prompt[0].role == "user" and groups[0].prompt[0].content == "What is shown in picture 0?"
    for k in (0, 1):  # a PNG and a JPEG, read as their bytes with their sniffed type
        (image,) = prompt_images(groups[k].prompt)
        assert image.read_bytes() == (folder / "images" / "sub" / f"{k}.{'jpg' if k else 'png'}").read_bytes()
        assert image.mime == ("image/jpeg" if k else "image/png")
    assert [g.subset for g in groups][5:10] == ["reasoning/math", "reasoning/coding", "reasoning/coding",
                                                "safety/bias", "safety/toxicity"]
    assert groups[8].meta_dict == {"category": "safety", "label": "B", "image": "images/sub/8.png"}


def test_a_file_and_category_under_meta_read_the_same(tmp_path):
    folder = write_folder(tmp_path / "data", meta_category=True)
    by_file = list(MMRewardBenchTask(path=str(folder / "all_data.json")).groups())
    by_folder = list(MMRewardBenchTask(path=str(write_folder(tmp_path / "other"))).groups())
    assert by_file == by_folder  # the same pixels and texts: equal groups (images by content)


def test_official_scores_hand_computed_through_the_cli(tmp_path):
    from rmbench.cli.app import app

    folder = write_folder(tmp_path / "data")
    out = tmp_path / "run"
    run = CliRunner().invoke(app, ["eval", "--model", rm(tmp_path), "--tasks", "mm_rewardbench", "--data",
                                   f"mm_rewardbench={folder}", "--bootstrap", "30", "--out", str(out), "--no-cache"])
    assert run.exit_code == 0, run.output
    results = json.loads((out / "results.json").read_text())
    (task,) = results["tasks"]
    got = {m["subset"]: m for m in task["metrics"] if m["metric"] == "mm_rewardbench_score"}
    assert {k: v["value"] for k, v in got.items()} == pytest.approx(EXPECTED, abs=0)
    assert got[None]["n"] == 13 and got["vqa"]["n"] == 3 and got["reasoning/coding"]["n"] == 2
    assert got[None]["ci_low"] <= 7 / 13 <= got[None]["ci_high"]
    pairwise = next(m for m in task["metrics"] if m["metric"] == "pairwise_accuracy" and m["subset"] is None)
    assert pairwise["value"] == pytest.approx(7.5 / 13)  # 4 pairs right, 7 ties at 1/2
    assert task["official"]["title"] == "Multimodal RewardBench"
    assert "mm_rewardbench_score" in run.output or "Multimodal RewardBench" in run.output


def test_the_coin_is_drawn_over_the_run_in_file_order(tmp_path):
    # the same items in reverse order: each tie takes another draw, as the script would give it
    folder = write_folder(tmp_path / "data", items=ITEMS[::-1])
    result = evaluate(EvalConfig(model=rm(tmp_path), tasks=("mm_rewardbench",), data=(("mm_rewardbench", str(folder)),),
                                 n_bootstrap=20, use_cache=False))
    # ties in order 13, 11, 9, 8, 7, 5, 3 take A, A, A, A, B, A, B: right, wrong, wrong, wrong, wrong, right, right
    # decided: 12 right, 10 right, 6 right, 4 wrong, 2 wrong, 1 right -> 4 + 3 = 7 of 13 again, but per category:
    got = {k: m.value for k, m in official(result).items()}
    assert got["vqa"] == pytest.approx(2 / 3) and got["safety/bias"] == 0.0 and got["reasoning/coding"] == 0.0
    assert got["knowledge"] == pytest.approx(1 / 2) and got["open_generation/preference_task"] == 1.0
    assert got[None] == pytest.approx(7 / 13)


@pytest.mark.parametrize(("change", "field", "says"), [
    (lambda r: r.update(Better="Output3"), "Better", "expected 'Output1' or 'Output2'"),
    (lambda r: r.update(Image="images/missing.png"), "Image", "no such image file"),
    (lambda r: r.pop("Category"), "Category", "missing or not a string"),
    (lambda r: r.update(ID="nocaps_1"), "ID", "duplicate ID 'nocaps_1'"),
    (lambda r: r.pop("Output2"), "Output2", "missing"),
])
def test_a_bad_item_is_one_error_naming_file_line_item_and_field(tmp_path, change, field, says):
    folder = write_folder(tmp_path / "data")
    rows = json.loads((folder / "all_data.json").read_text())
    change(rows[2])
    (folder / "all_data.json").write_text(json.dumps(rows, indent=2))
    with pytest.raises(DataError) as info:
        list(MMRewardBenchTask(path=str(folder)).groups())
    assert info.value.field == field and says in str(info.value)
    assert info.value.path == str(folder / "all_data.json") and info.value.line is not None
    if field not in ("ID", "Output2"):
        assert "'llava_3'" in str(info.value)  # the item's ID


def test_without_data_it_says_how_to_get_it():
    from rmbench.core.specs import TaskSpec
    from rmbench.tasks.describe import data_lines

    with pytest.raises(DataError, match=r"no hub copy.*0_download_data\.py.*--data mm_rewardbench=FOLDER"):
        list(MMRewardBenchTask().groups())
    lines = data_lines(TaskSpec.make(name="mm_rewardbench", kind="mm_rewardbench", args={}))
    assert lines[0].startswith("none of its own: build its folder with the benchmark's scripts/0_download_data.py")
    assert lines[1].startswith("--data mm_rewardbench=FOLDER (the folder its kind's docs describe) or =FILE")


# --- against Multimodal RewardBench's own 2_get_accuracy.py --------------------------------------

def _script() -> Path:
    where = os.environ.get("RMBENCH_MMRB_DIR")
    for path in ((Path(where) / "scripts" / "2_get_accuracy.py", Path(where) / "2_get_accuracy.py") if where else ()):
        if path.is_file():
            return path
    pytest.skip("RMBENCH_MMRB_DIR is not set to a checkout of github facebookresearch/multimodal_rewardbench (its "
                "scripts/2_get_accuracy.py is not shipped with rmbench)")


def _printed(script: Path, answers: Path) -> dict[str | None, tuple[int, int, float]]:
    """The script's printed lines, ``acc TASK: RIGHT / N = ACC``, by category (``all``: None)."""
    run = subprocess.run([sys.executable, str(script), "--answers-file", str(answers)], capture_output=True,
                         text=True, cwd=answers.parent, timeout=120, check=True)
    out = {}
    for line in run.stdout.splitlines():
        m = re.fullmatch(r"acc (.+): (\d+) / (\d+) = (\S+)", line)
        assert m, line
        out[None if m[1] == "all" else m[1]] = (int(m[2]), int(m[3]), float(m[4]))
    return out


def _answers(folder: Path, run: Path, path: Path, says: dict[str, str] | None = None) -> Path:
    """An answers file as 1_run_model_as_judge_gpt4o.py writes it (ID, Label, output, Meta = the item),
    each output the verdict rmbench's rewards give: [[A]], [[B]], or (a tie, a missing reward) a reply
    with neither label (``says``: the judge's own reply for that item)."""
    rewards: dict[str, dict[int, float | None]] = {}
    for line in (run / "rewards.jsonl").read_text().splitlines():
        row = json.loads(line)
        rewards.setdefault(row["group_id"], {})[row["response_index"]] = row["reward"]
    lines = []
    for item in json.loads((folder / "all_data.json").read_text()):
        r1, r2 = rewards[item["ID"]][0], rewards[item["ID"]][1]
        if r1 is not None and r2 is not None and r1 != r2:
            output = f"Assistant {'A' if r1 > r2 else 'B'} is better.\n\nFinal verdict: [[{'A' if r1 > r2 else 'B'}]]"
        else:
            output = (says or {}).get(item["ID"], "Both are equally good; I cannot choose [[C]].")
            assert "[[A]]" not in output and "[[B]]" not in output
        lines.append({"ID": item["ID"], "Image": item["Image"], "Label": "B" if item["Better"] == "Output2" else "A",
                      "output": output, "Meta": item})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _assert_equal(printed: dict, records: dict) -> None:
    assert set(printed) == set(records)
    for key, (right, n, acc) in printed.items():
        assert records[key].n == n and abs(records[key].value - acc) <= 1e-9, key
        assert round(records[key].value * n) == right


def test_official_scores_equal_2_get_accuracy_py_on_a_reward_models_verdicts(tmp_path):
    script = _script()
    folder = write_folder(tmp_path / "data")
    result = evaluate(EvalConfig(model=rm(tmp_path), tasks=("mm_rewardbench",), data=(("mm_rewardbench", str(folder)),),
                                 n_bootstrap=20, use_cache=False), out_dir=tmp_path / "run")
    printed = _printed(script, _answers(folder, tmp_path / "run", tmp_path / "answers.jsonl"))
    assert printed[None] == (7, 13, 7 / 13)
    _assert_equal(printed, official(result))


RATING_TEMPLATE = """---
grade: 'Rating:\\s*(\\d+)'
scale: 1-10
---
Rate the answer to the question from 1 to 10; end with "Rating: N".

[Question]
{question}

[Answer]
{answer}
"""
"""A rating template read strictly: a reply without a rating is no verdict (no reward)."""


def _judge_reply(body: dict) -> str:
    """A rating judge: the response's own ``[score N]``; for score 0 an answer with no rating."""
    text = body["messages"][-1]["content"][0]["text"]
    score = re.findall(r"\[score (\d)\]", text)[-1]
    return "I would rather not rate this one." if score == "0" else f"Rating: {score}"


def test_official_scores_equal_2_get_accuracy_py_on_a_judges_replies_with_unparsed_ones(tmp_path):
    """A judge that rates each response, some answers unparsed (no reward): such an item has no
    verdict and takes the script's coin, exactly as an answer without [[A]]/[[B]] does there."""
    from tests.support.judge_server import ScriptedServer

    script = _script()
    items = [(i, c, b, s1 if k % 4 else 0, s2) for k, (i, c, b, s1, s2) in enumerate(ITEMS)]
    folder = write_folder(tmp_path / "data", items=items)
    template = tmp_path / "rate.txt"
    template.write_text(RATING_TEMPLATE)
    with ScriptedServer(reply=_judge_reply) as server:
        result = evaluate(EvalConfig(model="judge:judge-model", model_args=(("base_url", server.base_url),
                                                                            ("prompt", str(template))),
                                     tasks=("mm_rewardbench",), data=(("mm_rewardbench", str(folder)),),
                                     n_bootstrap=20, use_cache=False), out_dir=tmp_path / "run")
        sent = server.chat_requests()
    assert sent and all(b["messages"][-1]["content"][1]["type"] == "image_url" for b in sent)
    assert result.tasks[0].status == "success"
    rewards = [json.loads(line)["reward"] for line in (tmp_path / "run" / "rewards.jsonl").read_text().splitlines()]
    assert rewards.count(None) == 4  # Output1 of items 1, 5, 9, 13: no rating
    records = official(result)
    assert records[None].n == 13  # the four items with an unparsed answer are counted, by the coin
    pairs = next(m for m in result.tasks[0].metrics if m.metric == "pairwise_accuracy" and m.subset is None)
    assert pairs.n == 9  # and left out of the pairs
    printed = _printed(script, _answers(folder, tmp_path / "run", tmp_path / "answers.jsonl"))
    _assert_equal(printed, records)


def _compute_acc(script: Path):
    """The script's own ``compute_acc``, imported (it runs nothing at import)."""
    pytest.importorskip("tqdm")
    spec = importlib.util.spec_from_file_location("mmrb_get_accuracy", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.compute_acc


CASES = st.lists(st.tuples(st.sampled_from([i for i, *_ in ITEMS]), st.sampled_from(["Output1", "Output2"]),
                           st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None)
@given(CASES)
def test_property_extra_metrics_equal_the_scripts_compute_acc(cases):
    """Random items (IDs of every category, ties common: rewards 0-2) scored by the task's
    extra_metrics and, on the answers their verdicts give, by the script's compute_acc."""
    compute_acc = _compute_acc(_script())
    category = {i: c for i, c, *_ in ITEMS}
    groups = [ComparisonGroup(id=f"{item}#{k}", prompt="q", responses=("x", "y"),
                              utilities=(1, 0) if better == "Output1" else (0, 1),
                              subset=category_of(category[item], item),
                              meta={"category": category[item], "label": BETTER[better]})
              for k, (item, better, _, _) in enumerate(cases)]
    rewards = np.array([[r1, r2] for *_, r1, r2 in cases], dtype=np.float64).ravel()
    scores = MMRewardBenchTask().extra_metrics(groups, rewards)
    values = scores.statistic(np.arange(len(groups)))
    mine = {subset: (value, n) for (_, subset), value, n in zip(scores.labels, values, scores.counts)}
    with tempfile.TemporaryDirectory() as tmp:
        answers = Path(tmp) / "answers.jsonl"
        answers.write_text("".join(json.dumps({
            "ID": item, "Label": BETTER[better], "Meta": {"Category": category[item]},
            "output": "[[A]]" if r1 > r2 else "[[B]]" if r2 > r1 else "no label"}) + "\n"
            for item, better, r1, r2 in cases))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            compute_acc(argparse.Namespace(answers_file=str(answers)))
    lines = [re.fullmatch(r"acc (.+): (\d+) / (\d+) = (\S+)", line) for line in printed.getvalue().splitlines()]
    theirs = {None if m[1] == "all" else m[1]: (float(m[4]), int(m[3])) for m in lines}
    assert theirs == mine
