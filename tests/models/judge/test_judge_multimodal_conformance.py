"""Conformance: the multimodal benchmarks' OFFICIAL judge clients, run unedited apart from their
hard-coded endpoint, beside rmbench's ``prompt=vl_rewardbench`` and ``prompt=mm_rewardbench``.

VL-RewardBench's ``inference_hf.py`` (``RMBENCH_VLRB_DIR``) and Multimodal RewardBench's
``scripts/1_run_model_as_judge_gpt4o.py`` (``RMBENCH_MMRB_DIR``) are copied into a temporary
folder with their one endpoint line pointed at the scripted server on 127.0.0.1
(:mod:`tests.support.multimodal_official`), and run on small synthetic data in each benchmark's
own format (PIL-drawn images: a hub-style parquet for VL-RewardBench, ``all_data.json`` and an
image folder for Multimodal RewardBench); rmbench runs the same data on the same server with only
the protocol named. Per benchmark:

* the request bodies are equal: Multimodal RewardBench's as a multiset (one game per item in the
  file's order, each image labelled by its file name's type); VL-RewardBench's item by item for the
  same answer order (its client draws the order per sample with an unseeded ``random.choice``, so
  each of its bodies is compared with rmbench's body of the order it drew);
* the official scoring scripts' numbers on the official outputs (``cal.py``; ``2_get_accuracy.py``,
  run as it is) equal rmbench's official records to 1e-9;
* and ``cal.py`` on rmbench's own judgments (its recorded draws as ``random_number``) equals rmbench's
  records where the K samples disagree (position-biased replies), so the majority over K is
  VL-RewardBench's.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict

import pytest

from tests.support import multimodal_official as M
from tests.support.judge_runs import run_rmbench, sent
from tests.support.judge_server import ScriptedServer

pytestmark = pytest.mark.conformance

VLRB_DIR, VLRB_REASON = M.vlrb_checkout()
MMRB_DIR, MMRB_REASON = M.mmrb_checkout()
K = 10  # inference_hf.py's --k in its README, and rmbench's default n for prompt=vl_rewardbench
K_POSITION = 5


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(reply=M.reply) as s:
        yield s


def assert_scores(official: dict, ours: dict) -> None:
    assert set(official) == set(ours), (official, ours)
    for name in official:
        assert math.isclose(ours[name], official[name], rel_tol=0, abs_tol=1e-9), (name, official[name], ours[name])


def canonical(body: dict) -> str:
    return json.dumps(body, sort_keys=True)


# ============================================================================================
# VL-RewardBench
# ============================================================================================

def vlrb_item_order(body: dict) -> tuple[str, bool]:
    """A VL-RewardBench request's item (its question) and whether the good answer is Answer 1."""
    text = M._user_text(body)
    question = text.split("Question: ", 1)[1].split("\n\nAnswer 1: ", 1)[0]
    return question, "ans=good" in text.split("Answer 1: ", 1)[1].split("\n\nAnswer 2: ", 1)[0]


@pytest.fixture(scope="module")
def vlrb(server, tmp_path_factory):
    if VLRB_REASON:
        pytest.skip(VLRB_REASON)
    tmp = tmp_path_factory.mktemp("vlrb-conformance")
    rows = M.vlrb_rows(M.VLRB_CASES)
    parquet = M.write_parquet(tmp / "data" / "test-00000-of-00001.parquet", rows)
    ours = run_rmbench(server, tmp, "vlrb", M.VLRB_MODEL, "vl_rewardbench", parquet, prompt="vl_rewardbench")
    records = M.run_inference_hf(VLRB_DIR, parquet, server.base_url, tmp / "official", K)
    return {"rows": rows, "tmp": tmp, "ours": ours, "records": records,
            "official_bodies": sent(server, "authorization", "Bearer EMPTY")}


@pytest.mark.skipif(VLRB_REASON is not None, reason=VLRB_REASON or "")
def test_vlrb_requests_equal_inference_hf_for_the_same_order(vlrb):
    official, ours = vlrb["official_bodies"], vlrb["ours"].bodies
    n_items = len(vlrb["rows"])
    assert len(official) == len(ours) == K * n_items  # K samples per item, each its own call
    assert {tuple(sorted(b)) for b in official} == {
        ("max_tokens", "messages", "model", "stream", "temperature", "top_p")}
    per_item: dict[str, Counter] = defaultdict(Counter)
    ours_by_order: dict[tuple[str, bool], set[str]] = defaultdict(set)
    for body in ours:
        item, good_first = vlrb_item_order(body)
        per_item[item][good_first] += 1
        ours_by_order[item, good_first].add(canonical(body))
    # rmbench's seeded draws show every item in both orders, so every order the script drew is compared
    assert len(per_item) == n_items and all(len(c) == 2 and sum(c.values()) == K for c in per_item.values())
    assert all(len(bodies) == 1 for bodies in ours_by_order.values())  # the K samples of one order: one body
    for body in official:
        assert {canonical(body)} == ours_by_order[vlrb_item_order(body)], vlrb_item_order(body)
    # every image labelled image/png, the JPEG ones too, as inference_hf.py does
    urls = {part["image_url"]["url"][:22] for b in ours for part in b["messages"][0]["content"]
            if part["type"] == "image_url"}
    assert urls == {"data:image/png;base64,"}
    assert any(r["image"]["bytes"][:3] == b"\xff\xd8\xff" for r in vlrb["rows"])


@pytest.mark.skipif(VLRB_REASON is not None, reason=VLRB_REASON or "")
def test_vlrb_scores_equal_cal_py_on_inference_hf_outputs(vlrb):
    official = M.cal_scores(VLRB_DIR, vlrb["records"], vlrb["tmp"], K)
    assert_scores(official, vlrb["ours"].scores("vl_rewardbench_score"))
    # the draws are recorded: every sample's order and its official random_number
    samples = [j for j in vlrb["ours"].judgments if j["response_index"] == 0]
    assert len(samples) == K * len(vlrb["rows"]) and {j["draw"] for j in samples} == {0, 1}
    assert all(j["order"] == ("AB" if j["draw"] == 0 else "BA") for j in samples)


def inference_records(rows: list[dict], judgments: list[dict]) -> list[dict]:
    """rmbench's judgments as ``inference_hf.py`` writes its outputs (``meta.random_number`` the
    recorded draw, ``meta.filter_choice`` the reply), for ``cal.py``."""
    by_id = {r["id"]: r for r in rows}
    return [{"id": j["group_id"], "query": by_id[j["group_id"]]["query"], "response": by_id[j["group_id"]]["response"],
             "ranking": by_id[j["group_id"]]["human_ranking"],
             "meta": {"random_number": j["draw"], "filter_choice": j["text"], "flag_status": "unused"}}
            for j in judgments if j["response_index"] == 0]


@pytest.mark.skipif(VLRB_REASON is not None, reason=VLRB_REASON or "")
def test_vlrb_majority_over_k_equals_cal_py_on_rmbench_draws(server, vlrb):
    """Position-biased replies make an item's K samples disagree: cal.py's majority over the
    samples rmbench recorded (its draws as random_number) equals rmbench's official records."""
    tmp = vlrb["tmp"]
    rows = M.vlrb_rows(M.VLRB_ALL_CASES)
    parquet = M.write_parquet(tmp / "position" / "test-00000-of-00001.parquet", rows)
    ours = run_rmbench(server, tmp, "vlrb_position", M.VLRB_MODEL, "vl_rewardbench", parquet,
                       prompt="vl_rewardbench", n=K_POSITION)
    records = inference_records(rows, ours.judgments)
    assert len(records) == K_POSITION * len(rows)
    picks = defaultdict(set)
    for j in ours.judgments:
        if j["response_index"] == 0 and j["parsed"] is not None:
            picks[j["group_id"]].add(j["parsed"] == ("A" if j["order"] == "AB" else "B"))
    assert any(len(p) == 2 for p in picks.values())  # some item's samples pick both responses
    assert_scores(M.cal_scores(VLRB_DIR, records, tmp, K_POSITION), ours.scores("vl_rewardbench_score"))


# ============================================================================================
# Multimodal RewardBench
# ============================================================================================

@pytest.fixture(scope="module")
def mmrb(server, tmp_path_factory):
    if MMRB_REASON:
        pytest.skip(MMRB_REASON)
    tmp = tmp_path_factory.mktemp("mmrb-conformance")
    folder = tmp / "data"
    rows = M.mmrb_rows(folder)
    (folder / "all_data.json").write_text(json.dumps(rows, indent=1))
    ours = run_rmbench(server, tmp, "mmrb", M.MMRB_MODEL, "mm_rewardbench", folder, prompt="mm_rewardbench")
    answers = M.run_mmrb_judge(MMRB_DIR, folder / "all_data.json", folder, server.base_url, "sk-official-mmrb",
                               tmp / "official")
    return {"rows": rows, "tmp": tmp, "ours": ours, "answers": answers,
            "official_bodies": sent(server, "api-key", "sk-official-mmrb")}


@pytest.mark.skipif(MMRB_REASON is not None, reason=MMRB_REASON or "")
def test_mmrb_requests_equal_the_official_judge_script(mmrb):
    official, ours = mmrb["official_bodies"], mmrb["ours"].bodies
    assert len(official) == len(mmrb["rows"])  # one game per item
    assert {tuple(sorted(b)) for b in official} == {("max_tokens", "messages", "model")}  # no temperature
    a, b = Counter(map(canonical, official)), Counter(map(canonical, ours))
    assert a == b, (list((a - b).elements())[:1], list((b - a).elements())[:1])
    labels = {part["image_url"]["url"].split(";")[0] for body in ours for part in body["messages"][0]["content"]
              if part["type"] == "image_url"}
    # every image holds PNG bytes; the client labels each by its file name
    assert labels == {"data:image/png", "data:image/jpeg", "data:application/octet-stream", "data:image/webp"}


@pytest.mark.skipif(MMRB_REASON is not None, reason=MMRB_REASON or "")
def test_mmrb_scores_equal_2_get_accuracy_on_the_official_answers(mmrb):
    official = M.mmrb_accuracy(MMRB_DIR, mmrb["answers"], mmrb["tmp"])
    ours = {("all" if k is None else k): v for k, v in mmrb["ours"].scores("mm_rewardbench_score").items()}
    assert_scores(official, ours)
    unparsed = [j for j in mmrb["ours"].judgments if j["response_index"] == 0 and j["parsed"] is None]
    assert len(unparsed) >= 3  # the seeded coin decides several items, in file order, as the script's does
