"""``judge:MODEL`` end to end against a real HTTP server on 127.0.0.1 (tests/support/judge_server.py).

The server's replies are a function of the request, so every judgment is known in advance:
rating, pairwise and best-of-4 judges, unparsed answers, the call cache (a re-run makes no
call), a server that dies half-way (finished calls kept, the re-run equals a clean run), the
official RewardBench 2 scores on the judges' answers, and the key kept secret.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from rmbench.errors import ConfigError, RMBenchError  # noqa: E402
from rmbench.scoring.runner import EvalConfig, evaluate  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

MODEL = "judge-model"
SCORE = re.compile(r"score=(\d+)")
TIES_LINE = "but need not consider depth or level of detail"  # only RATINGS_PROMPT_TIES says this


def rating_reply(body: dict) -> str:
    """A rating judge that reads the answer's ``score=K`` tag; "refuse" answers are not rated."""
    text = body["messages"][-1]["content"]
    answer = text.split("[The Start of Assistant's Answer]")[-1]
    if "refuse" in answer:
        return "I will not rate this."
    m = SCORE.search(answer)
    return f"The answer is fine.\nRating: {m.group(1) if m else 5}"


def run(server: ScriptedServer, tmp_path: Path, tasks: tuple[str, ...], data=(), out="run", limit=None, **args):
    model_args = (("base_url", server.base_url), *args.items())
    cfg = EvalConfig(model=f"judge:{MODEL}", model_args=model_args, tasks=tasks, data=data, n_bootstrap=50,
                     cache_dir=str(tmp_path / "cache"), limit=limit)
    record = evaluate(cfg, out_dir=tmp_path / out, overwrite=True)
    return record, tmp_path / out


def judgments(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]


def rewards(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rewards.jsonl").read_text().splitlines()]


def write_pairs(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"prompt": p, "chosen": c, "rejected": r}) + "\n" for p, c, r in rows))
    return path


# --- rating ---------------------------------------------------------------------------------

def test_rating_judge_on_ties_uses_the_ties_prompt_and_a_rerun_makes_no_call(tmp_path):
    with ScriptedServer(reply=rating_reply) as server:
        record, folder = run(server, tmp_path, ("ties_sample",), limit=4)
        sent = server.chat_requests()
        task = record.tasks[0]
        n = task.counts.responses
        assert len(sent) == n  # one call per response
        assert all(TIES_LINE in b["messages"][-1]["content"] for b in sent)
        rows = judgments(folder)
        assert len(rows) == n and {r["mode"] for r in rows} == {"rating"}
        assert all(r["parsed"] == 5.0 and not r["cached"] for r in rows)  # no score tags: every rating 5
        assert task.unparsed == 0
        stats = record.execution.stats.ran_with["judge_calls"]
        assert stats["calls"] == n and stats["cached_calls"] == 0 and stats["prompt_tokens"] > 0

        again, folder2 = run(server, tmp_path, ("ties_sample",), out="again", limit=4)
        assert len(server.chat_requests()) == n  # the re-run made no call
        assert again.execution.stats.ran_with["judge_calls"]["cached_calls"] == n
        assert all(r["cached"] for r in judgments(folder2))
        np.testing.assert_equal([m.value for m in again.tasks[0].metrics], [m.value for m in task.metrics])


def test_unparsed_ratings_are_left_out_or_scored_as_rewardbench_does(tmp_path):
    pairs = write_pairs(tmp_path / "p.jsonl", [(f"q{i}", f"good score={8 - i % 3}", f"bad score={2 + i % 2}")
                                               for i in range(5)] + [("q5", "good score=9", "I refuse to answer")])
    with ScriptedServer(reply=rating_reply) as server:
        skip, folder = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), unparsed="skip")
        t = skip.tasks[0]
        assert t.judge_replies is not None and t.judge_replies.left_out == 1 and t.judge_replies.no_verdict == 1
        assert t.unparsed == 1 and t.status == "success"
        assert t.metric("pairwise_accuracy").n == 5  # the pair with the unparsed answer is left out
        assert t.metric("pairwise_accuracy").value == 1.0
        null = [r for r in rewards(folder) if r["reward"] is None]
        assert len(null) == 1 and null[0]["group_id"] == "6"  # preference groups are numbered by line
        unparsed = [j for j in judgments(folder) if j["parsed"] is None]
        assert len(unparsed) == 1 and unparsed[0]["text"] == "I will not rate this."

        # the default (fidelity official, unparsed official): scored -1, as RewardBench 2 does, and still counted
        rb, folder_rb = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="rb")
        assert rb.tasks[0].metric("pairwise_accuracy").n == 6
        replies = rb.tasks[0].judge_replies
        assert rb.tasks[0].unparsed == 1 and replies is not None
        assert (replies.fidelity, replies.calls, replies.no_verdict, replies.left_out) == ("official", 12, 1, 0)
        assert "-1" in replies.no_verdict_scored
        assert {r["reward"] for r in rewards(folder_rb) if r["group_id"] == "6"} == {9.0, -1.0}


def test_n_ratings_are_averaged_with_seeds_and_expected_score_reads_top_logprobs(tmp_path):
    pairs = write_pairs(tmp_path / "p.jsonl", [("q", "good score=8", "bad score=3")])

    def reply(body):
        text = rating_reply(body)
        rating = text.rsplit(" ", 1)[-1]
        seed = body.get("seed", 0)
        if body.get("logprobs"):
            alts = [(rating, math.log(0.75)), ("1" if rating != "1" else "2", math.log(0.25))]
            return {"content": text, "top_logprobs": [[(t, 0.0)] for t in text.split(" ")[:-1]] + [alts]}
        return text if seed % 2 == 0 else text[:-1] + str(int(rating) - 1)

    with ScriptedServer(reply=reply) as server:
        _, folder = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), n=2, seed=10)
        seeds = sorted(r["seed"] for r in server.chat_requests())
        assert seeds == [10, 10, 11, 11]
        assert sorted(r["reward"] for r in rewards(folder)) == [2.5, 7.5]  # (3 + 2) / 2, (8 + 7) / 2
        assert {j["sample"] for j in judgments(folder)} == {0, 1}

        _, folder_e = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="e",
                          score="expected")
        assert all(r["top_logprobs"] == 20 for r in server.chat_requests()[-2:])
        got = sorted(r["reward"] for r in rewards(folder_e))
        # renormalised over the rating tokens at the rating's position: 0.75 * k + 0.25 * 1
        assert got == pytest.approx([0.75 * 3 + 0.25 * 1, 0.75 * 8 + 0.25 * 1])


# --- pairwise -------------------------------------------------------------------------------

def vanilla_reply(body: dict) -> str:
    """A vanilla (JudgeBench) judge that prefers the answer with the higher score tag; ties and
    "both" answers give an unparsable reply."""
    text = body["messages"][-1]["content"]
    a = text.split("# Output (a):")[1].split("# Output (b):")[0]
    b = text.split("# Output (b):")[1].split("# Which is better")[0]
    sa, sb = (int(SCORE.search(x).group(1)) if SCORE.search(x) else 0 for x in (a, b))
    if sa == sb:
        return "Both are good."
    return "Output (a)" if sa > sb else "Output (b)"


def test_pairwise_judge_plays_both_orders_and_combines_them(tmp_path):
    rows = [("q0", "score=9 a", "score=1 b"), ("q1", "score=2 a", "score=7 b"), ("q2", "score=5 a", "score=5 b")]
    pairs = write_pairs(tmp_path / "p.jsonl", rows)
    with ScriptedServer(reply=vanilla_reply) as server:
        record, folder = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), mode="pairwise",
                             unparsed="skip")
        assert len(server.chat_requests()) == 6  # two games per pair, shared by the pair's two responses
        firsts = [r["messages"][-1]["content"].split("# Output (a):\n")[1].split("\n")[0]
                  for r in server.chat_requests()]
        assert len(set(firsts)) == 6  # each game puts the other answer first
        by = {(r["group_id"], r["response_index"]): r["reward"] for r in rewards(folder)}
        assert by[("1", 0)] == 0.5 and by[("1", 1)] == -0.5  # A>B in both orders: v = +1
        assert by[("2", 0)] == -0.5 and by[("2", 1)] == 0.5
        assert by[("3", 0)] is None and by[("3", 1)] is None  # no verdict in either game: left out
        t = record.tasks[0]
        assert t.unparsed == 2
        assert t.metric("pairwise_accuracy").value == 0.5 and t.metric("pairwise_accuracy").n == 2
        rows_j = judgments(folder)
        assert {j["order"] for j in rows_j} == {"AB", "BA"}
        assert len(rows_j) == 12  # each response lists its pair's two games

        # unparsed=rewardbench: a pair without a verdict is a tie, as JudgeBench counts it
        tie, folder_t = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="t",
                            mode="pairwise", unparsed="rewardbench")
        assert tie.tasks[0].metric("pairwise_accuracy").n == 3
        assert {r["reward"] for r in rewards(folder_t) if r["group_id"] == "3"} == {0.0}


def test_pairwise_refuses_groups_of_more_than_two(tmp_path):
    with ScriptedServer(reply=vanilla_reply) as server:
        with pytest.raises(ConfigError, match="groups of two responses"):
            run(server, tmp_path, ("ties_sample",), mode="pairwise", limit=2)


def test_arena_hard_asks_once_more_when_the_verdict_label_is_missing(tmp_path):
    pairs = write_pairs(tmp_path / "p.jsonl", [("q", "score=9 a", "score=1 b")])

    def reply(body):
        if body["messages"][-1]["content"].startswith("continue your judgment"):
            return "My final verdict is: [[A>B]]" if "score=9 a\n<|The End of Assistant A" in \
                body["messages"][1]["content"] else "My final verdict is: [[B>A]]"
        return "Let me think about both answers."

    with ScriptedServer(reply=reply) as server:
        _, folder = run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), mode="pairwise",
                        prompt="arena_hard")
        assert len(server.chat_requests()) == 4  # two games, each asked once more
        assert [r["reward"] for r in rewards(folder)] == [0.5, -0.5]
        assert sorted(j.get("attempt", 1) for j in judgments(folder)) == [1, 1, 1, 1, 2, 2, 2, 2]


# --- best-of-4 and RewardBench 2's official scores -------------------------------------------

def rb2_rows() -> list[dict]:
    rows = []
    for i in range(6):
        chosen = [f"answer score={7 + i % 3}"]
        rejected = [f"wrong {j} score={3 + (i + j) % 6}" for j in range(3)]
        rows.append({"id": f"r{i}", "prompt": f"Question {i}?", "chosen": chosen, "rejected": rejected,
                     "subset": ("Math", "Focus")[i % 2]})
    rows.append({"id": "r6", "prompt": "Q6?", "chosen": ["I refuse"], "rejected": ["refuse a", "refuse b",
                                                                                    "refuse c"], "subset": "Math"})
    for k in range(2):
        for kind in ("tied", "ref"):
            rows.append({"id": f"{kind}:{k}", "prompt": f"{kind} {k}?", "subset": "Ties",
                         "chosen": [f"ok score={8 + k}", "ok2 score=8"] if kind == "tied" else ["ok score=9"],
                         "rejected": [f"no score={3 + k}", "no2 refuse"]})
    return rows


def fourway_reply(body: dict) -> str:
    """Best-of-4: picks the slot with the highest score tag; "refuse" rows get no verdict."""
    text = body["messages"][-1]["content"]
    if "refuse" in text:
        return "I cannot choose."
    parts = re.split(r"\[The Start of Assistant ([ABCD])'s Answer\]", text)[1:]
    tags = {parts[i]: int(SCORE.search(parts[i + 1]).group(1)) for i in range(0, len(parts), 2)}
    return f"My verdict: [[{max(tags, key=tags.get)}]]"


def _rb2_file(tmp_path: Path, rows: list[dict]) -> str:
    path = tmp_path / "rb2.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_fourway_judge_places_the_correct_answer_by_a_seeded_draw_and_scores_as_rewardbench2(tmp_path):
    rows = [r for r in rb2_rows() if r["subset"] != "Ties"]
    data = (("rewardbench2", _rb2_file(tmp_path, rows)),)
    with ScriptedServer(reply=fourway_reply) as server:
        record, folder = run(server, tmp_path, ("rewardbench2",), data=data, mode="fourway", unparsed="rewardbench")
        assert len(server.chat_requests()) == len(rows)  # one call per row
        rows_j = judgments(folder)
        correct_slots = [j["slot"] for j in rows_j if j["utility"] == 1]
        assert len(set(correct_slots)) > 1  # the correct answer is not always in slot A
        again, _ = run(server, tmp_path, ("rewardbench2",), data=data, out="again", mode="fourway",
                       unparsed="rewardbench")
        assert [j["slot"] for j in judgments(tmp_path / "again")] == [j["slot"] for j in rows_j]  # seeded
    # run_generative_v2.py (API path): 1 for the correct slot, 0 for another, 0.25 for "error"
    official: dict[str, list[float]] = {}
    for row in rows:
        mine = [j for j in rows_j if j["group_id"] == row["id"]]
        verdict = mine[0]["parsed"]
        result = 0.25 if verdict is None else float(verdict == next(j["slot"] for j in mine if j["utility"] == 1))
        official.setdefault(row["subset"], []).append(result)
    expected = {s: sum(v) / len(v) for s, v in official.items()}
    got = {m.subset: m.value for m in record.tasks[0].metrics if m.metric == "rewardbench2_score" and m.subset}
    assert got == pytest.approx(expected, abs=1e-12)
    assert expected["Math"] < 1.0  # the refused row scored 0.25


def test_rating_judge_scores_rewardbench2_as_the_official_code_on_the_same_ratings(tmp_path):
    rb_official = pytest.importorskip("tests.support.rb_official")
    reason = rb_official.official_unavailable()
    if reason:
        pytest.skip(reason)
    rows = rb2_rows()
    with ScriptedServer(reply=rating_reply) as server:
        record, folder = run(server, tmp_path, ("rewardbench2",), data=(("rewardbench2", _rb2_file(tmp_path, rows)),),
                             unparsed="rewardbench")
        sent = [r["messages"][-1]["content"] for r in server.chat_requests()]
        assert sum(TIES_LINE in s for s in sent) == sum(len(r["chosen"]) + len(r["rejected"])
                                                       for r in rows if r["subset"] == "Ties")
    by = {(r["group_id"], r["response_index"]): r["reward"] for r in rewards(folder)}
    scores = [[by[(row["id"], i)] for i in range(len(row["chosen"]) + len(row["rejected"]))] for row in rows]
    assert -1.0 in {s for row in scores for s in row}  # unparsed answers are in, as -1
    official = rb_official.rb2_official(rows, scores)
    got = {m.subset or "Score": m.value for m in record.tasks[0].metrics if m.metric == "rewardbench2_score"}
    assert got == pytest.approx(official, abs=1e-12)


# --- faults and secrecy ---------------------------------------------------------------------

def test_a_server_that_dies_keeps_finished_calls_and_the_rerun_equals_a_clean_run(tmp_path):
    pairs = write_pairs(tmp_path / "p.jsonl", [(f"q{i}", f"good score={9 - i % 4}", f"bad score={1 + i % 3}")
                                               for i in range(12)])
    data = (("preference", str(pairs)),)
    with ScriptedServer(reply=rating_reply, die_after=10) as server:
        with pytest.raises(RMBenchError, match="failed .* in a row|cannot reach|refused|kept"):
            run(server, tmp_path, ("preference",), data=data, concurrency=2)
        assert not (tmp_path / "run" / "results.json").exists()
    with ScriptedServer(reply=rating_reply) as server2:
        resumed, folder = run(server2, tmp_path, ("preference",), data=data)
        assert len(server2.chat_requests()) == 24 - 10  # the ten finished calls were kept
    with ScriptedServer(reply=rating_reply) as server3:
        clean = tmp_path / "clean"
        cfg = EvalConfig(model=f"judge:{MODEL}", model_args=(("base_url", server3.base_url),), tasks=("preference",),
                         data=data, n_bootstrap=50, cache_dir=str(tmp_path / "other-cache"))
        fresh = evaluate(cfg, out_dir=clean)
    assert rewards(folder) == rewards(clean)
    np.testing.assert_equal([m.value for m in resumed.tasks[0].metrics], [m.value for m in fresh.tasks[0].metrics])


def test_the_key_is_sent_but_never_written_or_printed(tmp_path, monkeypatch, capsys):
    key = "sk-test-PLANTED-9f8e7d"
    monkeypatch.setenv("MY_JUDGE_KEY", key)
    pairs = write_pairs(tmp_path / "p.jsonl", [("q", "good score=8", "bad score=2")])
    with ScriptedServer(reply=rating_reply, require_key=key) as server:
        run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), api_key_env="MY_JUDGE_KEY")
        assert all(r["headers"].get("Authorization") == f"Bearer {key}" for r in server.requests
                   if r["path"].endswith("/chat/completions"))
        monkeypatch.setenv("MY_JUDGE_KEY", "sk-wrong-key")
        with pytest.raises(RMBenchError) as failed:  # a failing run: the server refuses the key
            run(server, tmp_path, ("preference",), data=(("preference", str(pairs)),), out="bad",
                api_key_env="MY_JUDGE_KEY", prompt=str(_prompt_file(tmp_path)))
    assert key not in str(failed.value) and "sk-wrong-key" not in str(failed.value)
    out = capsys.readouterr()
    assert key not in out.out + out.err
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def _prompt_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompt.txt"
    path.write_text("---\ngrade: '(\\d+)\\s*$'\nscale: 1-10\n---\n"
                    "Rate this answer from 1 to 10.\n{question}\n{answer}\nEnd with the number.")
    return path


def test_bad_judge_arguments_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="no server address"):
        evaluate(EvalConfig(model="judge:m", tasks=("ties_sample",)))
    with ScriptedServer() as server:
        for args, message in [((("mode", "best"),), "mode must be one of"),
                              ((("prompt", "nope"),), "neither a named rating protocol"),
                              ((("score", "expected"), ("mode", "pairwise")), "score must be"),
                              ((("n", 0),), "positive integer")]:
            with pytest.raises(ConfigError, match=message):
                evaluate(EvalConfig(model="judge:m", model_args=(("base_url", server.base_url), *args),
                                    tasks=("ties_sample",)))
        bad = tmp_path / "bad.txt"
        bad.write_text("---\ngrade: '(\\d+)'\nscale: 1-10\n---\nRate {answer} for {prompt}")
        with pytest.raises(ConfigError, match="may use only"):
            evaluate(EvalConfig(model="judge:m", model_args=(("base_url", server.base_url), ("prompt", str(bad))),
                                tasks=("ties_sample",)))
    with pytest.raises(RMBenchError, match="127.0.0.1:9"):  # nothing listens there: one line, the address named
        evaluate(EvalConfig(model="judge:m", model_args=(("base_url", "http://127.0.0.1:9/v1"),),
                            tasks=("ties_sample",), cache_dir=str(tmp_path / "c")))


def test_identity_holds_the_served_model_and_prompt_not_the_address(tmp_path):
    from rmbench.models import build_model, parse_model_spec

    with ScriptedServer(reply=rating_reply) as a, ScriptedServer(reply=rating_reply) as b:
        ma = build_model(parse_model_spec("judge:judge-model").__class__.make(
            "j", "judge", {"model": MODEL, "base_url": a.base_url}))
        mb = build_model(parse_model_spec("judge:judge-model").__class__.make(
            "j", "judge", {"model": MODEL, "base_url": b.base_url, "concurrency": 3}))
        assert ma.fingerprint() == mb.fingerprint() and ma.call_fingerprint() == mb.call_fingerprint()
        assert a.base_url not in json.dumps(ma.identity())
        mc = build_model(parse_model_spec("judge:judge-model").__class__.make(
            "j", "judge", {"model": MODEL, "base_url": a.base_url, "temperature": 0.7}))
        assert mc.fingerprint() != ma.fingerprint()
        assert mc.call_fingerprint() == ma.call_fingerprint()  # the requests differ, the endpoint does not


# --- JudgeBench -----------------------------------------------------------------------------

def arena_reply(body: dict) -> str:
    """An arena_hard judge that prefers the higher score tag, and says [[A>B]] (position bias)
    when the tags are equal, so those pairs' two games disagree."""
    text = body["messages"][-1]["content"]
    a = text.split("<|The Start of Assistant A's Answer|>")[1].split("<|The End of Assistant A's Answer|>")[0]
    b = text.split("<|The Start of Assistant B's Answer|>")[1].split("<|The End of Assistant B's Answer|>")[0]
    sa, sb = (int(SCORE.search(x).group(1)) for x in (a, b))
    return "My final verdict is: " + ("[[A>>B]]" if sa >= sb else "[[B>A]]")


def test_pairwise_judge_on_judgebench_scores_its_two_games_as_judgebench_does(tmp_path):
    sources = ["mmlu-pro-law", "livebench-math", "livebench-reasoning", "livecodebench"]
    tags = [(9, 2, "A>B"), (2, 9, "B>A"), (3, 8, "A>B"), (5, 5, "A>B"), (5, 5, "B>A"), (8, 1, "A>B"), (1, 4, "B>A"),
            (6, 6, "B>A")]
    rows = [{"pair_id": f"p{i}", "original_id": i, "source": sources[i % 4], "question": f"Q{i}?",
             "response_model": "gpt-4o-2024-05-13", "response_A": f"A score={a}", "response_B": f"B score={b}",
             "label": label} for i, (a, b, label) in enumerate(tags)]
    path = tmp_path / "judgebench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ScriptedServer(reply=arena_reply) as server:
        record, folder = run(server, tmp_path, ("judgebench",), data=(("judgebench", str(path)),), mode="pairwise",
                             prompt="arena_hard")
        assert len(server.chat_requests()) == 2 * len(rows)
    task = record.tasks[0]
    assert task.args["single_game"] is False  # a judge's verdicts: JudgeBench's two-game rule
    # JudgeBench (utils/metrics.py, reverse_order): each game votes +1 (A>B) / -1 (B>A); equal tags give
    # [[A>B]] in both orders, i.e. +1 and -1 after flipping game 2 back: 0, never correct.
    decision = [(a > b) - (a < b) for a, b, _ in tags]
    correct = [d == (1 if label == "A>B" else -1) for d, (_, _, label) in zip(decision, tags)]
    by_category: dict[str, list[bool]] = {}
    for r, c in zip(rows, correct):
        category = {"mmlu-pro-law": "knowledge", "livebench-math": "math", "livebench-reasoning": "reasoning",
                    "livecodebench": "coding"}[r["source"]]
        by_category.setdefault(category, []).append(c)
    got = {m.subset or "overall": m.value for m in task.metrics if m.metric == "judgebench_score"}
    assert got["overall"] == pytest.approx(sum(correct) / len(correct))
    for category, values in by_category.items():
        assert got[category] == pytest.approx(sum(values) / len(values))
    assert {j["parsed"] for j in judgments(folder)} <= {"A>B", "B>A"}  # ">>" counts as ">"


def test_report_shows_the_judges_answer_beside_each_response_by_its_original_index(tmp_path):
    from rmbench.results.publishing.report import write_report
    from rmbench.results.storage.folder import load_run

    path = tmp_path / "groups.jsonl"
    groups = [{"id": "g1", "prompt": "Q?", "responses": ["best score=9", "I refuse", "worst score=2"],
               "utilities": [2, 1, 0]},
              {"id": "g2", "prompt": "Q2?", "responses": ["fine score=6", "fine too score=7"], "utilities": [1, 1]}]
    path.write_text("".join(json.dumps(g) + "\n" for g in groups))
    with ScriptedServer(reply=rating_reply) as server:
        record, folder = run(server, tmp_path, ("groups",), data=(("groups", str(path)),))
    assert record.tasks[0].unparsed == 1
    html = write_report([load_run(folder)], tmp_path / "report.html").read_text()
    assert "the judge:" in html and "Rating: 9" in html
    # g1 kept responses 0 and 2: the report numbers "worst" by its index in the data, 2
    assert re.search(r"response 2, utility 0, reward 2\.0000</div><pre class=\"txt\">worst score=2", html)


def test_a_judge_runs_on_the_local_engine_only(tmp_path):
    with pytest.raises(ConfigError, match="drop --engine ray"):
        evaluate(EvalConfig(model="judge:m", model_args=(("base_url", "http://127.0.0.1:9/v1"),), engine="ray",
                            tasks=("ties_sample",)))


def test_a_ties_row_that_loses_all_its_correct_answers_is_left_out_whole(tmp_path):
    rows = [r for r in rb2_rows() if r["subset"] == "Ties"]
    rows[2]["chosen"] = ["I refuse"]  # ref:1 keeps only incorrect answers once its correct one is unparsed
    path = tmp_path / "ties.jsonl"
    path.write_text("".join(json.dumps({**r, "num_correct": len(r["chosen"])}) + "\n" for r in rows))
    with ScriptedServer(reply=rating_reply) as server:
        record, _ = run(server, tmp_path, ("ties",), data=(("ties", str(path)),), unparsed="skip")
    task = record.tasks[0]
    assert task.status == "success" and task.unparsed == 5  # every row's "no2 refuse" and ref:1's correct answer
    assert task.metric("ties_score").n == 3  # tied:0, ref:0, tied:1: ref:1 kept no correct answer and is left out


def test_a_named_key_variable_that_is_not_set_is_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    with ScriptedServer() as server:
        with pytest.raises(ConfigError, match="api_key_env names 'NOT_SET_KEY', which is not set"):
            evaluate(EvalConfig(model="judge:m", model_args=(("base_url", server.base_url),
                                                               ("api_key_env", "NOT_SET_KEY")),
                                tasks=("ties_sample",), cache_dir=str(tmp_path / "c")))
