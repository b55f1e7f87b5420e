"""VL-RewardBench (issue 56 item 2): a data.jsonl and its image folder read as groups whose prompts
carry the images; the official accuracies hand-computed and, where VL-RewardBench's own cal.py is
at hand (``RMBENCH_VLRB_DIR``: a checkout of github vl-rewardbench/VL_RewardBench), equal to it
on the same verdicts."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import os
import random
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.prompts import prompt_images
from rmbench.core.vl_rewardbench import AGREE, NO_VERDICT, REJECT, classify_rewards, dataset_of_id, majority, scores
from rmbench.errors import DataError
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.vl_rewardbench import VLRewardBenchTask


def png(rgb: tuple[int, int, int]) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# id, ranking, the two responses' lengths (the `length` baseline prefers the longer one)
ITEMS = [
    ("RLAIF-V_1", [0, 1], 30, 10),   # hallucination (rlaif-v): agree
    ("RLHF-V_2", [1, 0], 30, 10),    # hallucination (rlhf-v): reject
    ("hallucination_pair_3", [0, 1], 12, 12),  # hallucination (povid): a reward tie, no verdict
    ("mathverse_4", [0, 1], 40, 5),  # reasoning: agree
    ("mmmu-5", [1, 0], 5, 40),       # reasoning: agree
    ("wildvision-battle_6", [0, 1], 5, 40),  # general (wildvision-battle): reject
    ("vlf_7", [0, 1], 50, 10),        # general (vlfeedback): agree
    ("other8", [1, 0], 50, 10),      # general (vlfeedback): reject
    ("hallucination_pair_9", [1, 0], 10, 30),  # hallucination (povid): agree (cal.py needs one decided povid item)
]


def write_folder(folder: Path) -> Path:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (item, ranking, la, lb) in enumerate(ITEMS):
        (folder / "images" / f"{k}.png").write_bytes(png((k * 30, 0, 255 - k * 30)))
        rows.append({"id": item, "query": f"What is in picture {k}?", "response": ["a" * la, "b" * lb],
                     "human_ranking": ranking, "image_path": f"images/{k}.png", "query_source": "test",
                     "meta": {}})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_dataset_of_id_follows_the_id_prefix():
    assert [dataset_of_id(i) for i, *_ in ITEMS] == [
        "rlaif-v", "rlhf-v", "povid", "reasoning_tasks", "reasoning_tasks", "wildvision-battle", "vlfeedback",
        "vlfeedback", "povid"]


def test_the_folder_reads_as_groups_with_their_images(tmp_path):
    folder = write_folder(tmp_path / "vlrb")
    groups = list(VLRewardBenchTask(path=str(folder)).groups())
    assert [g.id for g in groups] == [i for i, *_ in ITEMS]
    assert [g.utilities for g in groups][:2] == [(1, 0), (0, 1)]
    images = prompt_images(groups[0].prompt)
    assert len(images) == 1 and images[0].read_bytes() == (folder / "images" / "0.png").read_bytes()
    assert groups[0].prompt[0].content == "What is in picture 0?" and groups[0].subset == "rlaif-v"


def test_official_scores_hand_computed(tmp_path):
    folder = write_folder(tmp_path / "vlrb")
    result = evaluate(EvalConfig(model="length", tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(folder)),),
                                 n_bootstrap=50))
    got = {m.subset: m.value for m in result.tasks[0].metrics if m.metric == "vl_rewardbench_score"}
    # hallucination: agree, reject, agree (the tie left out) -> 2/3; reasoning 2/2; general: reject, agree,
    # reject -> 1/3
    assert got["hallucination"] == pytest.approx(2 / 3) and got["reasoning"] == 1.0
    assert got["general"] == pytest.approx(1 / 3)
    assert got[None] == pytest.approx(5 / 8)  # 5 agree of 8 decided
    assert got["macro"] == pytest.approx((2 / 3 + 1.0 + 1 / 3) / 3)


def test_a_missing_image_names_file_line_and_field(tmp_path):
    folder = write_folder(tmp_path / "vlrb")
    (folder / "images" / "3.png").unlink()
    with pytest.raises(DataError) as info:
        list(VLRewardBenchTask(path=str(folder)).groups())
    assert (info.value.line, info.value.field) == (4, "image_path") and "no such image file" in str(info.value)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([AGREE, REJECT, NO_VERDICT]), st.integers(0, 2)), min_size=1, max_size=30))
def test_scores_property_overall_is_pooled_and_macro_the_mean(items):
    classes, groups = (np.array(x) for x in zip(*items))
    out = scores(classes, groups)
    decided = classes != NO_VERDICT
    if decided.any():
        assert out[3] == pytest.approx((classes == AGREE).sum() / decided.sum())
    for g in range(3):
        mine = decided & (groups == g)
        assert (math.isnan(out[g]) if not mine.any() else out[g] == pytest.approx((classes[mine] == AGREE).mean()))
    assert math.isnan(out[4]) == bool(np.isnan(out[:3]).any())
    # counting every item twice changes nothing
    np.testing.assert_allclose(scores(classes, groups, np.full(len(classes), 2.0)), out, equal_nan=True)


def test_majority_and_reward_classes():
    assert list(classify_rewards([2, 1, 1], [1, 2, 1])) == [AGREE, REJECT, NO_VERDICT]
    assert list(majority([3, 1, 2, 2], [1, 3, 2, 1], [4, 4, 4, 5])) == [AGREE, REJECT, NO_VERDICT, NO_VERDICT]


# --- against VL-RewardBench's own cal.py ----------------------------------------------------------

def _cal():
    where = os.environ.get("RMBENCH_VLRB_DIR")
    if not where or not (Path(where) / "cal.py").is_file():
        pytest.skip("RMBENCH_VLRB_DIR is not set to a checkout of github vl-rewardbench/VL_RewardBench (its cal.py "
                    "is not shipped with rmbench)")
    pytest.importorskip("openai")
    pytest.importorskip("tqdm")
    spec = importlib.util.spec_from_file_location("vlrb_cal", Path(where) / "cal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_official_scores_equal_cal_py_on_the_same_verdicts(tmp_path):
    cal = _cal()
    folder = write_folder(tmp_path / "vlrb")
    out = tmp_path / "run"
    result = evaluate(EvalConfig(model="length", tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(folder)),),
                                 n_bootstrap=20), out_dir=out)
    rewards = {}
    for line in (out / "rewards.jsonl").read_text().splitlines():
        row = json.loads(line)
        rewards.setdefault(row["group_id"], {})[row["response_index"]] = row["reward"]
    rng = random.Random(7)
    lines = []
    for item, ranking, *_ in ITEMS:
        row = json.loads((folder / "data.jsonl").read_text().splitlines()[[i for i, *_ in ITEMS].index(item)])
        shown = rng.choice([0, 1])  # the answer order the judge saw, as inference_hf.py draws it
        order = [0, 1] if shown == 0 else [1, 0]
        r = rewards[item]
        if r[0] == r[1]:
            text = "Both answers are equally good."
        else:
            picked = 0 if r[0] > r[1] else 1
            text = f"Reasoning...\nOverall Judgment: Answer {order.index(picked) + 1} is better."
        lines.append({"id": item, "query": row["query"], "response": row["response"], "ranking": ranking,
                      "meta": {"random_number": shown, "filter_choice": text, "flag_status": "unused"}})
    path = tmp_path / "infer.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        dist = cal.distribution(str(path), k=1, reparse=True, use_llm_parse=False)
        by_dataset = cal.distribution_dataset(cal.classify(dist, k=1))
    got = {m.subset: m.value for m in result.tasks[0].metrics if m.metric == "vl_rewardbench_score"}
    overall = float(re.search(r"Overall Accuracy: ([\d.]+)", printed.getvalue()).group(1)) / 100
    macro = float(re.search(r"Macro Average Acc: ([\d.]+)", printed.getvalue()).group(1)) / 100
    assert abs(got[None] - overall) <= 5e-5 and abs(got["macro"] - macro) <= 5e-5  # cal.py prints 2 decimals of %
    # and exactly, from cal.py's own per-dataset counts
    agree = {d: v["agree_number"] for d, v in by_dataset.items()}
    decided = {d: v["agree_number"] + v["reject_number"] for d, v in by_dataset.items()}
    assert got[None] == sum(agree.values()) / sum(decided.values())


def test_the_hub_parquet_form_reads_image_bytes(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [{"id": item, "query": f"q{k}", "response": ["a" * la, "b" * lb], "human_ranking": ranking,
             "image": {"bytes": png((k, k, k)), "path": f"{k}.png"}}
            for k, (item, ranking, la, lb) in enumerate(ITEMS)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "test-00000-of-00001.parquet")
    groups = list(VLRewardBenchTask(path=str(tmp_path / "test-00000-of-00001.parquet")).groups())
    assert [prompt_images(g.prompt)[0].read_bytes() for g in groups] == [png((k, k, k)) for k in range(len(ITEMS))]
