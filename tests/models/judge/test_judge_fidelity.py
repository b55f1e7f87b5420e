"""``fidelity``: named judge protocols reproduce their official client by default (the request
keys, the reading of cut-off and ``<think>`` replies, the re-ask, unparsed answers), and
``fidelity=strict`` differs from it exactly on the cut-off and ``<think>`` replies.

Every run here is against a real HTTP server on 127.0.0.1 (tests/support/judge_server.py) whose replies
are a function of the request, so each judgment is known in advance.
"""

from __future__ import annotations

import json
import re

import pytest

from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models.judge.adapter import JudgeRM  # noqa: E402
from rmbench.models.judge.protocol import Protocol  # noqa: E402
from tests.models.judge.test_judge import judgments, run, write_pairs  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

SCORE = re.compile(r"score=(\d+)")


def rating_reply(body: dict) -> dict:
    """Ratings: ``cut`` answers are cut off by max_tokens after a rating; ``think`` answers rate
    inside a <think> block the reply never closes; ``refuse`` answers are not rated."""
    answer = body["messages"][-1]["content"].split("[Response]")[-1]
    score = SCORE.search(answer)
    rating = score.group(1) if score else "5"
    if "refuse" in answer:
        return {"content": "I will not rate this.", "finish_reason": "stop"}
    if "cut" in answer and "think" in answer:
        return {"content": f"<think>Let me think about score {rating}", "finish_reason": "length"}
    if "cut" in answer:
        return {"content": f"Looks fine so far. Rating: {rating}", "finish_reason": "length"}
    if "think" in answer:
        return {"content": f"<think>I would rate it {rating}", "finish_reason": "stop"}
    return {"content": f"Fine.\n{rating}", "finish_reason": "stop"}


def test_official_requests_carry_the_official_keys_and_no_seed():
    """The body of each named protocol, as its official client sends it."""
    cases = {("rating", None): {"max_tokens": 1024, "temperature": 0.0},
             ("fourway", None): {"max_tokens": 2048, "temperature": 0.0, "n": 1},
             ("pairwise", "arena_hard"): {"max_tokens": 4096, "temperature": 0.0},
             ("pairwise", "vanilla"): {"max_tokens": 1024, "temperature": 0.0, "top_p": 1.0}}
    for (mode, prompt), want in cases.items():
        p = Protocol.make(mode, prompt, None, 0.0, 1, None, "rating", None)
        assert p.fidelity == "official" and p.unparsed == "official"
        body = p._request((("user", "x"),), p.seed).body("m")
        assert {k: v for k, v in body.items() if k not in ("model", "messages")} == want, (mode, prompt)
        strict = Protocol.make(mode, prompt, None, 0.0, 1, None, "rating", None, "strict")
        assert strict.unparsed == "skip" and "n" not in strict._request((("user", "x"),), None).body("m")
    seeded = Protocol.make("rating", None, None, 0.0, 1, 7, "rating", None)
    assert seeded._request((("user", "x"),), seeded.seed).body("m")["seed"] == 7  # a seed only when given


def test_a_template_is_read_strictly_and_refuses_fidelity_official(tmp_path):
    template = tmp_path / "t.txt"
    template.write_text("---\ngrade: '(\\d+)'\nscale: 1-10\n---\nRate {answer} for {question}.")
    assert Protocol.make("rating", str(template), None, 0.0, 1, None, "rating", None).fidelity == "strict"
    with pytest.raises(ConfigError, match="template file, which has no official client"):
        Protocol.make("rating", str(template), None, 0.0, 1, None, "rating", None, "official")
    with pytest.raises(ConfigError, match="fidelity must be 'official'"):
        Protocol.make("rating", None, None, 0.0, 1, None, "rating", None, "loose")


def test_official_reads_cut_off_and_think_ratings_and_strict_does_not(tmp_path):
    rows = [("q0", "good score=9", "bad score=2"), ("q1", "good cut score=8", "bad score=3"),
            ("q2", "good think score=7", "bad score=4"), ("q3", "good score=6", "bad cut think score=1"),
            ("q4", "good score=5", "bad refuse")]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    with ScriptedServer(reply=rating_reply) as server:
        official, f_off = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="off")
        strict, f_str = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="str",
                            fidelity="strict")
        bodies = server.chat_requests()
    assert all("seed" not in b and b["max_tokens"] == 1024 for b in bodies)
    off = {(j["group_id"], j["response_index"]): j for j in judgments(f_off)}
    st = {(j["group_id"], j["response_index"]): j for j in judgments(f_str)}
    differ = {k for k in off if off[k]["parsed"] != st[k]["parsed"]}
    odd = {k for k, j in off.items() if j["finish_reason"] == "length" or "<think>" in j["text"]}
    assert differ == odd and len(odd) == 3  # exactly the cut-off and <think> replies
    # official: the trailing rating of a cut-off reply, and of an unclosed <think>, counts (RB2's regex)
    assert off[("2", 0)]["parsed"] == 8.0 and st[("2", 0)]["parsed"] is None
    assert off[("3", 0)]["parsed"] == 7.0 and st[("3", 0)]["parsed"] is None
    assert off[("5", 1)]["parsed"] is None and st[("5", 1)]["parsed"] is None  # no verdict either way
    r_off, r_str = official.tasks[0].judge_replies, strict.tasks[0].judge_replies
    assert r_off is not None and r_str is not None
    assert (r_off.calls, r_off.cut_off, r_off.think, r_off.no_verdict, r_off.left_out) == (10, 2, 2, 1, 0)
    assert (r_str.fidelity, r_str.no_verdict, r_str.left_out) == ("strict", 4, 4)
    assert official.tasks[0].unparsed == 1 and strict.tasks[0].unparsed == 4


def arena_reply(body: dict) -> dict:
    """arena_hard: the verdict follows the score tags; answers tagged ``cutlabel`` get a cut-off
    reply that holds the label; ``cutnone`` a cut-off reply with none (the follow-up answers);
    ``think2`` a <think> label that disagrees with the one after it."""
    messages = body["messages"]
    if len(messages) > 2:  # the follow-up: "continue your judgment ..."
        return {"content": "Final verdict: [[A>B]]", "finish_reason": "stop"}
    text = messages[-1]["content"]
    a = text.split("<|The Start of Assistant A's Answer|>")[1].split("<|The End")[0]
    b = text.split("<|The Start of Assistant B's Answer|>")[1].split("<|The End")[0]
    label = "A>B" if int(SCORE.search(a).group(1)) > int(SCORE.search(b).group(1)) else "B>A"
    if "cutlabel" in text:
        return {"content": f"Thinking... [[{label}]] and more", "finish_reason": "length"}
    if "cutnone" in text:
        return {"content": "Thinking and thinking", "finish_reason": "length"}
    if "think2" in text:
        flipped = "B>A" if label == "A>B" else "A>B"
        return {"content": f"<think>[[{flipped}]]</think> So: [[{label}]]", "finish_reason": "stop"}
    return {"content": f"My final verdict is [[{label}]]", "finish_reason": "stop"}


def test_arena_hard_official_reads_cut_offs_asks_again_and_sees_think_labels(tmp_path):
    rows = [("q0", "a score=9", "b score=1"), ("q1", "a cutlabel score=9", "b score=2"),
            ("q2", "a cutnone score=9", "b score=2"), ("q3", "a think2 score=9", "b score=3")]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    with ScriptedServer(reply=arena_reply) as server:
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="off", mode="pairwise",
            prompt="arena_hard", concurrency=1)
        bodies = server.chat_requests()
        server.requests.clear()
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="str", mode="pairwise",
            prompt="arena_hard", fidelity="strict", concurrency=1)
        strict_bodies = server.chat_requests()
    assert all(b["max_tokens"] == 4096 and "seed" not in b for b in bodies)
    # official: the two cut-off games with no label are asked again, each right after its own call
    follow = [i for i, b in enumerate(bodies) if len(b["messages"]) > 2]
    assert len(follow) == 2 and all(len(bodies[i - 1]["messages"]) == 2 for i in follow)
    assert bodies[follow[0] - 1]["messages"][1] == bodies[follow[0]]["messages"][1]  # in its pair's slot
    assert not any(len(b["messages"]) > 2 for b in strict_bodies)  # strict: a cut-off reply is not asked again
    off = {(j["group_id"], j["response_index"], j.get("order"), j.get("attempt", 1)): j["parsed"]
           for j in judgments(tmp_path / "off")}
    st = {(j["group_id"], j["response_index"], j.get("order"), j.get("attempt", 1)): j["parsed"]
          for j in judgments(tmp_path / "str")}
    games = {k[:3] for k in off}
    # q1 (cut off, with a label): read officially, no verdict strictly; q3 (<think> disagrees):
    # JudgeBench sees two labels and no verdict, strict reads the label after </think>
    assert {k[0] for k in games if off.get((*k, 1)) != st.get((*k, 1))} == {"2", "3", "4"}
    assert off[("4", 0, "AB", 1)] is None and st[("4", 0, "AB", 1)] is not None
    assert off[("2", 0, "AB", 1)] is not None and st[("2", 0, "AB", 1)] is None


def test_a_follow_up_runs_in_its_slot_and_a_cached_chain_makes_no_call(tmp_path):
    """The follow-up is sent by the same worker right after its call's reply (no second round),
    and a re-run reads the call and its follow-up from the cache."""
    rows = [(f"q{i}", f"a cutnone score={9 - i}", f"b score={i}") for i in range(4)]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    with ScriptedServer(reply=arena_reply, latency=0.05) as server:
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="a", mode="pairwise",
            prompt="arena_hard", concurrency=2)
        n = len(server.chat_requests())
        assert n == 16  # 8 games, each asked again
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="b", mode="pairwise",
            prompt="arena_hard", concurrency=2)
        assert len(server.chat_requests()) == n
    assert judgments(tmp_path / "a") == [{**j, "cached": False} for j in judgments(tmp_path / "b")]


def test_judge_rm_counts_what_it_read():
    """reply_counts: one row per response and call; a call shared by a pair counts once."""
    judge = JudgeRM("m", base_url="http://127.0.0.1:9/v1", mode="pairwise")
    rows = [{"call": "c1", "text": "<think>x</think>[[A>B]]", "reasoning": None, "finish_reason": "stop",
             "parsed": "A>B", "group_id": "g", "response_index": 0},
            {"call": "c1", "text": "<think>x</think>[[A>B]]", "reasoning": None, "finish_reason": "stop",
             "parsed": "A>B", "group_id": "g", "response_index": 1},
            {"call": "c2", "text": "cut", "reasoning": None, "finish_reason": "length", "parsed": None,
             "group_id": "g", "response_index": 0}]
    counts = judge.reply_counts(rows, left_out=0)
    assert (counts.calls, counts.think, counts.cut_off) == (2, 1, 1)
    assert (counts.no_verdict, counts.responses_no_verdict) == (1, 1)
    assert "JudgeBench" in counts.reading and "not correct" in counts.no_verdict_scored


def test_a_leaderboard_from_disk_says_which_runs_read_replies_strictly(tmp_path):
    """The official table's caption names a strict run; the notes count cut-off, <think> and
    no-verdict replies and say how they were scored (read back from results.json)."""
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.storage.folder import load_run
    from tests.models.judge.test_judge import rb2_rows

    path = tmp_path / "rb2.jsonl"
    rows = rb2_rows()
    rows[0]["chosen"] = ["answer cut score=9"]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ScriptedServer(reply=rating_reply) as server:
        run(server, tmp_path, ("rewardbench2",), data=(("rewardbench2", str(path)),), out="off")
        run(server, tmp_path, ("rewardbench2",), data=(("rewardbench2", str(path)),), out="str", fidelity="strict")
    official = load_run(tmp_path / "off")
    replies = official.record.tasks[0].judge_replies
    assert replies is not None and replies.cut_off == 1 and replies.fidelity == "official"
    lb = build_leaderboard([official, load_run(tmp_path / "str")])
    table = next(t for t in lb.official if "official layout" in t.title)
    assert "read strictly (fidelity=strict)" in table.caption and table.caption.count("judge:") == 1
    notes = " ".join(lb.notes)
    assert "1 were cut off by max_tokens" in notes and "rated -1, as RewardBench 2's client does" in notes
    assert "left out of the pairs and the official scores" in notes  # the strict run's


def test_a_reply_with_null_content_fails_an_arena_hard_game_officially_without_asking_again():
    """JudgeBench adds "\\n" + content: a null content (a reasoning judge cut off inside its
    reasoning) raises there, so the game has no decision and no follow-up is sent; an empty
    string is asked again. The reply keeps the difference (``no_content``) through the cache."""
    from rmbench.models.judge.wire import ChatReply, ChatRequest, parse_reply

    null = parse_reply({"choices": [{"message": {"content": None, "reasoning_content": "A is"},
                                     "finish_reason": "length"}]}, 0.1, 0)
    empty = parse_reply({"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}, 0.1, 0)
    assert null.no_content and not empty.no_content and null.text == empty.text == ""
    assert ChatReply.from_json(null.to_json()) == null
    p = Protocol.make("pairwise", "arena_hard", None, 0.0, 1, None, "rating", None)
    call = ChatRequest((("system", "s"), ("user", "u")), 4096)
    assert p.continuation(call, null) is None and p.continuation(call, empty) is not None
    assert p._game_verdict([null]) is None
    labelled = parse_reply({"choices": [{"message": {"content": "[[A>B]]"}, "finish_reason": "stop"}]}, 0.1, 0)
    assert p._game_verdict([labelled]) == "A>B" and p._game_verdict([null, labelled]) is None


def test_a_judgment_hashes_the_messages_it_sent_and_the_protocol_apart(tmp_path):
    from rmbench.core.canonical import canonical_json, sha256_hex

    pairs = write_pairs(tmp_path / "p.jsonl", [("q0", "good score=9", "bad score=2")])
    with ScriptedServer(reply=rating_reply) as server:
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="a")
        bodies = server.chat_requests()
    rows = judgments(tmp_path / "a")
    sent = {sha256_hex(canonical_json([[m["role"], m["content"]] for m in b["messages"]])) for b in bodies}
    assert {r["prompt_sha256"] for r in rows} == sent and len(sent) == 2  # one per rendered prompt
    assert len({r["protocol_sha256"] for r in rows}) == 1  # the same protocol for both
