"""One-game pairwise judge protocols (issue 56): VL-RewardBench's (``prompt=vl_rewardbench``: an
answer order drawn per sample, K samples, a strict majority) and Multimodal RewardBench's
(``prompt=mm_rewardbench``: the file's order, one sample), their requests, call keys, values and
records. The official clients themselves run in ``test_judge_multimodal_conformance.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.images import Image
from rmbench.core.prompts import Message
from rmbench.core.vl_rewardbench import AGREE, NO_VERDICT, REJECT, majority
from rmbench.errors import ConfigError
from rmbench.models.base import ScoreRequest
from rmbench.models.judge import multimodal as MM
from rmbench.models.judge.client import ChatReply, ChatRequest
from rmbench.models.judge.judge_protocol import JudgeProtocol, infer_mode, judge_protocol
from rmbench.models.judge.protocol import Protocol
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support import multimodal_official as M
from tests.support.judge_server import ScriptedServer


def make(prompt: str, **args) -> Protocol:
    values = dict(mode=None, prompt=prompt, max_tokens=None, temperature=None, n=None, seed=None, score=None,
                  unparsed=None)
    values.update(args)
    return Protocol.make(**values)


def pair(image: Image, question: str = "What is shown?", a: str = "a cat", b: str = "a dog") -> list[ScoreRequest]:
    prompt = (Message("user", question, (image,)),)
    return [ScoreRequest(prompt, a, "g", 0, context=(b,)), ScoreRequest(prompt, b, "g", 1, context=(a,))]


@pytest.fixture
def png(tmp_path) -> Image:
    path = tmp_path / "picture.jpg"  # PNG bytes under a .jpg name
    path.write_bytes(M.image_bytes(3, "PNG"))
    return Image.from_file(path)


def reply(text: str | None) -> ChatReply:
    return ChatReply(text or "", None, "stop", 0, 0, 0.0, 0, None, no_content=text is None)


# --- the records ---------------------------------------------------------------------------------

def test_the_records_hold_the_official_clients_sampling():
    vl, mm = judge_protocol("pairwise", "vl_rewardbench"), judge_protocol("pairwise", "mm_rewardbench")
    assert (vl.order, vl.samples, vl.image_mime) == ("random", 10, "image/png")
    assert (vl.official.max_tokens, vl.official.temperature, vl.official.top_p, vl.official.seed) == (2048, 0.2, 0.2,
                                                                                                      None)
    assert dict(vl.official.extra) == {"stream": False}
    assert (mm.order, mm.samples, mm.image_mime) == ("file", 1, "from-name")
    assert (mm.official.max_tokens, mm.official.temperature, mm.official.top_p) == (1024, None, None)
    assert infer_mode(None, "vl_rewardbench") == infer_mode(None, "mm_rewardbench") == "pairwise"
    assert infer_mode(None, "rewardbench2") == "rating" and infer_mode("fourway", "rewardbench2") == "fourway"


def test_a_record_refuses_samples_or_an_order_where_they_mean_nothing():
    def build(**kw):
        return JudgeProtocol("x", kw.pop("mode", "pairwise"), lambda q, a, s: (("user", q),), str, "t", **kw)

    with pytest.raises(ValueError, match="samples"):
        build(samples=3)  # two games, both orders: no K
    with pytest.raises(ValueError, match="order"):
        build(mode="rating", order="file")
    with pytest.raises(ValueError, match="order"):
        build(order="shuffled")
    assert build(order="random", samples=5).single_game


def test_n_sets_k_and_is_refused_for_two_game_protocols():
    assert make("vl_rewardbench").n == 10 and make("vl_rewardbench", n=3).n == 3 and make("mm_rewardbench").n == 1
    with pytest.raises(ConfigError, match="judge n"):
        make("vanilla", n=3)


# --- requests ------------------------------------------------------------------------------------

def test_vl_rewardbench_sends_its_clients_body(png):
    p = make("vl_rewardbench", n=4)
    calls, _ = p.calls(pair(png)[0])
    assert len(calls) == 4
    body = calls[0].body("judge")
    assert {k: body[k] for k in ("max_tokens", "temperature", "top_p", "stream")} == {
        "max_tokens": 2048, "temperature": 0.2, "top_p": 0.2, "stream": False}
    assert "seed" not in body and "n" not in body
    (message,) = body["messages"]
    text, image = message["content"]
    assert image["image_url"]["url"].startswith("data:image/png;base64,")  # its label, whatever the bytes
    for call, draw in zip(calls, p.draws(pair(png)[0])):
        first, second = ("a cat", "a dog") if draw == 0 else ("a dog", "a cat")
        assert call.messages == MM.vlrb_messages("What is shown?", first, second)


def test_mm_rewardbench_sends_its_clients_body(png):
    p = make("mm_rewardbench")
    (call,), _ = p.calls(pair(png)[1])  # the second response's request asks the same game
    body = call.body("gpt-4o")
    assert sorted(body) == ["max_tokens", "messages", "model"] and body["max_tokens"] == 1024  # no temperature
    text, image = body["messages"][0]["content"]
    assert text["text"] == MM.MMRB_PROMPT.format(question="What is shown?", answer_a="a cat", answer_b="a dog")
    assert image["image_url"]["url"].startswith("data:image/jpeg;base64,")  # the file name's type, not the bytes'


def test_a_name_without_a_known_type_is_octet_stream_and_a_link_keeps_its_name(tmp_path):
    (tmp_path / "blob").write_bytes(M.image_bytes(1))
    (tmp_path / "x.webp").symlink_to(tmp_path / "blob")
    assert Image.from_file(tmp_path / "blob").name_mime() == "application/octet-stream"
    linked = Image.from_file(tmp_path / "x.webp")
    assert linked.name_mime() == "image/webp" and linked.mime == "image/png"
    assert Image.from_ref(linked.to_json(sources=True)).name_mime() == "image/webp"  # the wire form keeps it


def test_the_draws_are_seeded_shared_by_both_requests_and_recorded(png):
    p = make("vl_rewardbench")
    first, second = pair(png)
    assert p.draws(first) == p.draws(second) == make("vl_rewardbench").draws(first)
    assert set(p.draws(first)) == {0, 1}
    assert p.calls(first)[0] == p.calls(second)[0]  # the same calls: one per sample in the call cache
    assert make("vl_rewardbench", seed=1).draws(first) != p.draws(first)
    assert make("vl_rewardbench", n=20).draws(first)[:10] == p.draws(first)  # sample k's draw is k's alone
    other = pair(Image.from_bytes(M.image_bytes(9)))[0]
    assert p.draws(other) != p.draws(first)  # the image is part of the item
    for i, draw in enumerate(p.draws(first)):
        assert p.judgment_fields(first, i) == {"order": "AB" if draw == 0 else "BA", "sample": i, "draw": draw}
        assert p.judgment_fields(second, i)["order"] == ("BA" if draw == 0 else "AB")
    assert make("mm_rewardbench").draws(first) == (0,)


def test_k_identical_requests_have_k_call_keys_and_the_label_is_in_the_key(png):
    request = ChatRequest((("user", "q"),), images=((png,),), image_mime="image/png")
    samples = [ChatRequest(request.messages, images=request.images, image_mime="image/png", sample=k)
               for k in range(3)]
    assert len({json.dumps(s.body("m"), sort_keys=True) for s in samples}) == 1  # the same bytes sent
    assert len({json.dumps(s.body("m", keyed=True), sort_keys=True) for s in samples}) == 3
    sniffed = ChatRequest(request.messages, images=request.images)
    assert sniffed.body("m", keyed=True)["messages"][0]["content"][1]["image_url"]["url"] == f"sha256:{png.sha256}"
    assert request.body("m", keyed=True) != sniffed.body("m", keyed=True)


# --- values --------------------------------------------------------------------------------------

def value_of(p: Protocol, req: ScoreRequest, texts: list[str | None]) -> float | None:
    return p.value(req, [[reply(t)] for t in texts])[0]


def test_the_majority_over_k_hand_computed(png):
    p = make("vl_rewardbench", n=4)
    first, second = pair(png)
    draws = p.draws(first)

    def picks(who: list[str | None]) -> list[str | None]:
        """The replies naming response ``a``/``b`` (None: no verdict) in each sample's order."""
        out = []
        for w, d in zip(who, draws):
            number = None if w is None else (1 if (w == "a") == (d == 0) else 2)
            out.append("No verdict." if number is None else f"Overall Judgment: Answer {number} is better.")
        return out

    assert value_of(p, first, picks(["a", "a", "a", "b"])) == 0.5  # 3 of 4 > 4/2
    assert value_of(p, second, picks(["a", "a", "a", "b"])) == -0.5
    assert value_of(p, first, picks(["a", "a", "b", "b"])) == 0.0  # no strict majority: a tie
    assert value_of(p, first, picks(["a", "a", None, None])) == 0.0  # unparsed answers count in K
    assert value_of(p, first, picks([None, None, None, None])) == 0.0
    skip = make("vl_rewardbench", n=4, unparsed="skip")
    assert value_of(skip, first, picks(["a", "a", None, None])) == 0.5  # left out of K
    assert value_of(skip, first, picks([None] * 4)) is None


def test_mm_rewardbench_reads_a_then_b():
    assert MM.mmrb_verdict("[[B]] and then [[A]]") == "A" and MM.mmrb_verdict("[[B]]") == "B"
    assert MM.mmrb_verdict("[A]") is None


def test_vl_rewardbench_parse_follows_its_regex():
    assert MM.vlrb_verdict("Overall Judgment: Answer 2 is better.") == "B"
    assert MM.vlrb_verdict("**Overall Judgment**: Answer 1 is **slightly better**") == "A"
    assert MM.vlrb_verdict("Overall Judgment: Answer 2 is better, no, Answer 1 is better") == "A"  # greedy: the last
    assert MM.vlrb_verdict("Therefore,\nAnswer\n2 is the better") == "B"
    assert MM.vlrb_answer("Overall Judgment: Answer 3 is better") == 3
    assert MM.vlrb_verdict("Overall Judgment: Answer 3 is better") is None  # cal.py: "agree" whatever the labels
    assert MM.vlrb_verdict("Answer 1 is better") is None  # no "Overall Judgment" or "Therefore" before it


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", None]), min_size=1, max_size=9))
def test_the_value_equals_cal_py_s_majority_property(who):
    """Whatever the K answers, the sign of the value for the human-preferred response ``a`` is
    :func:`rmbench.core.vl_rewardbench.majority` of its agree / reject / K counts."""
    image = Image.from_bytes(M.image_bytes(5))
    p = make("vl_rewardbench", n=len(who))
    req = pair(image)[0]
    texts = [None if w is None else f"Therefore Answer {1 if (w == 'a') == (d == 0) else 2} is better"
             for w, d in zip(who, p.draws(req))]
    v = value_of(p, req, texts)
    expected = majority([who.count("a")], [who.count("b")], [len(who)])[0]
    assert {AGREE: 0.5, REJECT: -0.5, NO_VERDICT: 0.0}[expected] == v


# --- end to end on the scripted server ----------------------------------------------------------

def test_vl_rewardbench_end_to_end_records_every_draw_and_reuses_its_calls(tmp_path):
    rows = M.vlrb_rows(M.VLRB_ALL_CASES)
    parquet = M.write_parquet(tmp_path / "data" / "test.parquet", rows)
    with ScriptedServer(reply=M.reply) as server:
        def run(name: str, n: int = 3) -> Path:
            cfg = EvalConfig(model="judge:vlm", model_args=(("base_url", server.base_url), ("prompt", "vl_rewardbench"),
                                                            ("n", n)),
                             tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(parquet)),), n_bootstrap=0,
                             cache_dir=str(tmp_path / "cache"))
            evaluate(cfg, out_dir=tmp_path / name)
            return tmp_path / name
        first = run("first")
        calls = len(server.chat_requests())
        run("again")
        assert calls == 3 * len(rows) and len(server.chat_requests()) == calls  # all from the call cache
        run("fewer", n=2)
        assert len(server.chat_requests()) == calls  # sample k's call does not depend on K
    judgments = [json.loads(x) for x in (first / "judgments.jsonl").read_text().splitlines()]
    assert len(judgments) == 2 * 3 * len(rows)  # each response lists its group's K calls
    results = json.loads((first / "results.json").read_text())
    assert "image" not in json.dumps(judgments).lower().replace("<image>", "")  # no image path or bytes recorded
    # the official record equals cal.py's rule on the recorded samples
    by_item: dict[str, list] = {}
    for j in judgments:
        if j["response_index"] == 0:
            by_item.setdefault(j["group_id"], []).append(j)
    ranking = {r["id"]: r["human_ranking"] for r in rows}
    agree, decided = 0, 0
    for item, samples in by_item.items():
        preferred_first = ranking[item][0] == 0
        picked_first = [(s["parsed"] == "A") == (s["order"] == "AB") for s in samples if s["parsed"] is not None]
        a = sum(1 for p in picked_first if p == preferred_first)
        r = sum(1 for s in samples if s["parsed"] is not None) - a
        c = majority([a], [r], [len(samples)])[0]
        agree += c == AGREE
        decided += c != NO_VERDICT
    (task,) = results["tasks"]
    overall = next(m["value"] for m in task["metrics"] if m["metric"] == "vl_rewardbench_score" and m["subset"] is None)
    assert overall == pytest.approx(agree / decided, abs=1e-12)
    assert os.path.basename(str(parquet)) not in json.dumps(results["tasks"][0].get("metrics"))


@pytest.mark.parametrize("benchmark", ["vl_rewardbench", "mm_rewardbench"])
def test_strict_reads_otherwise_exactly_the_cut_off_and_think_replies(tmp_path, benchmark):
    """``fidelity=strict`` parses differently from the official reading exactly the replies cut off
    with a verdict in them and those whose verdict is inside ``<think>`` (the cases flagged so)."""
    if benchmark == "vl_rewardbench":
        rows = M.vlrb_rows(M.VLRB_CASES)
        data, cases = M.write_parquet(tmp_path / "data" / "test.parquet", rows), M.VLRB_CASES
        case_of = {r["id"]: M.CASE.search(r["query"]).group(1) for r in rows}
    else:
        data, cases = tmp_path / "data", M.MMRB_CASES
        rows = M.mmrb_rows(data)
        (data / "all_data.json").write_text(json.dumps(rows))
        case_of = {r["ID"]: M.CASE.search(r["Text"]).group(1) for r in rows}
    parsed = {}
    with ScriptedServer(reply=M.reply) as server:
        for fidelity in ("official", "strict"):
            cfg = EvalConfig(model="judge:vlm", model_args=(("base_url", server.base_url), ("prompt", benchmark),
                                                            ("n", 2 if benchmark == "vl_rewardbench" else 1),
                                                            ("fidelity", fidelity)),
                             tasks=(benchmark,), data=((benchmark, str(data)),), n_bootstrap=0,
                             cache_dir=str(tmp_path / "cache"))
            evaluate(cfg, out_dir=tmp_path / fidelity)
            judgments = [json.loads(x) for x in (tmp_path / fidelity / "judgments.jsonl").read_text().splitlines()]
            parsed[fidelity] = {(j["group_id"], j["sample"]): j["parsed"] for j in judgments
                                if j["response_index"] == 0}
    assert set(parsed["official"]) == set(parsed["strict"])
    differs = {k for k in parsed["official"] if parsed["official"][k] != parsed["strict"][k]}
    flagged = {k for k in parsed["official"] if cases[case_of[k[0]]][1]}
    assert differs and differs == flagged
