"""Conformance: the OFFICIAL judge clients, run unedited, against rmbench's ``judge`` kind.

RewardBench 2's ``scripts/run_generative_v2.py`` (reward-bench 05a9005, from
``../shared/official``) and JudgeBench's ``run_judge.py`` (a checkout named by
``RMBENCH_JUDGEBENCH_DIR``: no licence, so not shipped) run as subprocesses against one scripted
OpenAI-compatible server (``tests/support/judge_server.py``), and so does rmbench with its DEFAULT
arguments (only the protocol is named: ``mode``, ``prompt``). The scripted judge
(``tests/support/conformance_replies.py``) answers as a function of the request's messages, with replies
cut off by ``max_tokens``, ``<think>`` blocks, two labels, no label, trailing whitespace,
``[[N]]`` ratings, arena_hard follow-ups... Per protocol (RewardBench 2 ratings with Ties,
RewardBench 2 best-of-4, JudgeBench arena_hard, JudgeBench vanilla):

* the multiset of request bodies rmbench sent equals the official client's (parsed JSON, numbers
  as floats; best-of-4 answers put back in the row's order, since the official script places the
  correct one with an unseeded ``np.random``; the OpenAI python client adds no key of its own);
* the official scores rmbench records in results.json equal the official code's to 1e-9.

And ``fidelity=strict`` reads differently from the official code exactly the replies cut off
with a verdict in them and those whose verdict is inside (or after an unclosed) ``<think>``.

Each family runs its two official scripts at once, beside rmbench's runs, once per module
(30 s on 2 idle cores, the whole module). Every run sends its own API key, so the server's log tells them apart.
"""

from __future__ import annotations

import math

import pytest

from tests.support import conformance_replies as C  # noqa: E402
from tests.support.judge_runs import Run, run_rmbench  # noqa: E402
from tests.support.judge_runs import sent_with_key as sent  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

pytestmark = pytest.mark.conformance

RB2_REASON = C.rb2_unavailable()
JB_REASON = C.judgebench_unavailable()
needs_rb2 = pytest.mark.skipif(RB2_REASON is not None, reason=RB2_REASON or "")
needs_jb = pytest.mark.skipif(JB_REASON is not None, reason=JB_REASON or "")

OFFICIAL_TIMEOUT = 240  # seconds for one official script (about 10 s alone on 2 cores)
TIES_LINE = "but need not consider depth or level of detail"  # only the Ties ratings prompt says this


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(reply=C.reply) as s:
        yield s


def assert_same_requests(official: list[dict], ours: list[dict]) -> None:
    a, b = C.body_multiset(official), C.body_multiset(ours)
    if a != b:
        pytest.fail("request bodies, official client vs rmbench:\n" + C.multiset_difference(a, b), pytrace=False)


def assert_scores(official: dict, ours: dict, names) -> None:
    for name in names:
        assert name in ours, f"rmbench reports no score for {name!r}: {ours}"
        assert math.isclose(ours[name], official[name], rel_tol=0, abs_tol=1e-9), (name, official[name], ours[name])


def no_verdict(value):
    """A parsed value, with the official scoring's stand-in for no verdict (-1) read as None."""
    return None if value in (None, -1, -1.0) else value


# ============================================================================================
# RewardBench 2
# ============================================================================================

@pytest.fixture(scope="module")
def rb2(server, tmp_path_factory):
    if RB2_REASON:
        pytest.skip(RB2_REASON)
    tmp = tmp_path_factory.mktemp("rb2-conformance")
    rows = C.rb2_rows()
    data = C.write_jsonl(tmp / "data" / "test.jsonl", rows)
    non_ties = C.write_jsonl(tmp / "non_ties.jsonl", [r for r in rows if r["subset"] != "Ties"])
    official = {kind: (C.start_rb2(data.parent, server.base_url, f"sk-official-rb2-{kind}", tmp / kind,
                                   ratings=kind == "ratings"), tmp / kind) for kind in ("ratings", "best_of_4")}
    with C.killed_on_error(proc for proc, _ in official.values()):
        out = {"rows": rows, "tmp": tmp, "data": data, "non_ties": non_ties,
               "ratings": run_rmbench(server, tmp, "ratings", C.RB2_MODEL, "rewardbench2", data),
               "fourway": run_rmbench(server, tmp, "fourway", C.RB2_MODEL, "rewardbench2", non_ties, mode="fourway")}
    for kind, (proc, work) in official.items():
        text = C.finish(proc, work, OFFICIAL_TIMEOUT)
        out[f"official_{kind}"] = {"scores": C.rb2_scores(text), "bodies": sent(server, f"sk-official-rb2-{kind}")}
    return out


@pytest.fixture(scope="module")
def rb2_strict(server, rb2):
    """rmbench's runs of the same rows with ``fidelity=strict``."""
    tmp = rb2["tmp"]
    return {"ratings": run_rmbench(server, tmp, "ratings_strict", C.RB2_MODEL, "rewardbench2", rb2["data"],
                                   fidelity="strict"),
            "fourway": run_rmbench(server, tmp, "fourway_strict", C.RB2_MODEL, "rewardbench2", rb2["non_ties"],
                                   mode="fourway", fidelity="strict")}


@needs_rb2
def test_rb2_ratings_requests_equal_the_official_scripts(rb2):
    official = rb2["official_ratings"]["bodies"]
    n_answers = sum(len(r["chosen"]) + len(r["rejected"]) for r in rb2["rows"])
    assert len(official) == n_answers  # --score_w_ratings: one call per answer, Ties rows included
    assert {tuple(sorted(b)) for b in official} == {("max_tokens", "messages", "model", "temperature")}
    assert_same_requests(official, rb2["ratings"].bodies)


@needs_rb2
def test_rb2_ratings_scores_equal_the_official_scripts(rb2):
    official = rb2["official_ratings"]["scores"]
    assert set(official) == {*C.NON_TIES_SUBSETS, "Ties"}
    assert_scores(official, rb2["ratings"].scores("rewardbench2_score"), official)


@needs_rb2
def test_rb2_best_of_4_requests_equal_the_official_scripts(rb2):
    official = rb2["official_best_of_4"]["bodies"]
    ours = rb2["fourway"].bodies
    fourway = [b for b in official if len(b["messages"]) == 2]
    assert len(fourway) == len(ours) == len(C.FOURWAY_CASES)  # one call per non-Ties row
    assert {tuple(sorted(b)) for b in fourway} == {("max_tokens", "messages", "model", "n", "temperature")}
    # both place the correct answer by swapping it with one slot (the script: np.random, rmbench: seeded)
    assert all(C.unshuffle_fourway(b)[1] for b in fourway + ours)
    # the script rates Ties rows whatever the protocol: rmbench's rating run asks the same
    ties_ratings = [b for b in rb2["ratings"].bodies if TIES_LINE in b["messages"][-1]["content"]]
    assert_same_requests(official, ours + ties_ratings)


@needs_rb2
def test_rb2_best_of_4_scores_equal_the_official_scripts(rb2):
    official = rb2["official_best_of_4"]["scores"]
    assert set(official) == {*C.NON_TIES_SUBSETS, "Ties"}
    assert_scores(official, rb2["fourway"].scores("rewardbench2_score"), C.NON_TIES_SUBSETS)
    # Ties is rated in both of the script's modes: the same score as the ratings run, and rmbench's
    assert official["Ties"] == rb2["official_ratings"]["scores"]["Ties"]
    assert_scores(official, rb2["ratings"].scores("rewardbench2_score"), ["Ties"])


# ============================================================================================
# JudgeBench
# ============================================================================================

JUDGES = ("arena_hard", "vanilla")


@pytest.fixture(scope="module")
def jb(server, tmp_path_factory):
    if JB_REASON:
        pytest.skip(JB_REASON)
    tmp = tmp_path_factory.mktemp("jb-conformance")
    rows = C.judgebench_rows()
    pairs = C.write_jsonl(tmp / "data" / f"dataset=judgebench,response_model={C.JB_MODEL}.jsonl", rows)
    official = {judge: (C.start_judgebench(pairs, judge, server.base_url, f"sk-official-jb-{judge}", tmp / judge),
                        tmp / judge) for judge in JUDGES}
    out: dict = {"rows": rows, "tmp": tmp, "pairs": pairs}
    with C.killed_on_error(proc for proc, _ in official.values()):
        for judge in JUDGES:
            out[judge] = run_rmbench(server, tmp, f"jb_{judge}", C.JB_MODEL, "judgebench", pairs, mode="pairwise",
                                     prompt=judge)
    for judge, (proc, work) in official.items():
        text = C.finish(proc, work, OFFICIAL_TIMEOUT)
        scores, records = C.judgebench_scores(text, work)
        out[f"official_{judge}"] = {"scores": scores, "records": records,
                                    "bodies": sent(server, f"sk-official-jb-{judge}")}
    return out


@pytest.fixture(scope="module")
def jb_strict(server, jb):
    """rmbench's runs of the same pairs with ``fidelity=strict``."""
    return {judge: run_rmbench(server, jb["tmp"], f"jb_{judge}_strict", C.JB_MODEL, "judgebench", jb["pairs"],
                               mode="pairwise", prompt=judge, fidelity="strict") for judge in JUDGES}


@needs_jb
@pytest.mark.parametrize("judge", JUDGES)
def test_judgebench_requests_equal_run_judge(jb, judge):
    official = jb[f"official_{judge}"]["bodies"]
    n_pairs = len(jb["rows"])
    if judge == "arena_hard":
        # two games a pair, and a follow-up for each game whose reply held no label
        follow = [b for b in official if len(b["messages"]) == 4]
        assert len(official) == 2 * n_pairs + len(follow) and follow
        assert {tuple(sorted(b)) for b in official} == {("max_tokens", "messages", "model", "temperature")}
    else:
        assert len(official) == 2 * n_pairs
        assert {tuple(sorted(b)) for b in official} == {("max_tokens", "messages", "model", "temperature", "top_p")}
    assert_same_requests(official, jb[judge].bodies)


@needs_jb
@pytest.mark.parametrize("judge", JUDGES)
def test_judgebench_scores_equal_run_judge(jb, judge):
    official = jb[f"official_{judge}"]["scores"]
    assert_scores(official, jb[judge].scores("judgebench_score"), official)


@needs_jb
@pytest.mark.parametrize("judge", JUDGES)
def test_judgebench_each_games_decision_equals_run_judge(jb, judge):
    """Game by game: run_judge.py's recorded decision (game 1 shows A first, game 2 B first; each in
    its own positions) against rmbench's parsed verdict for the same game."""
    official = {r["pair_id"]: [None if j is None else j["decision"] for j in r["judgments"]]
                for r in jb[f"official_{judge}"]["records"]}
    ours: dict[str, list] = {}
    for j in jb[judge].judgments:
        if j["response_index"] == 0 and j.get("attempt", 1) == 1:  # response A: game AB shows it first
            ours.setdefault(j["group_id"], [None, None])[j["order"] == "BA"] = j["parsed"]
    assert ours == official


# ============================================================================================
# fidelity=strict: exactly the cut-off and <think> replies read otherwise
# ============================================================================================

def rating_calls(run: Run, rows: list[dict]) -> tuple[dict, set]:
    """(group, response) -> parsed rating, and the calls whose reply case strict reads otherwise."""
    texts = {(r["id"], i): t for r in rows for i, t in enumerate(r["chosen"] + r["rejected"])}
    parsed = {(j["group_id"], j["response_index"]): no_verdict(j["parsed"]) for j in run.judgments}
    differs = {k for k in parsed if C.RATING_CASES[C.TAG.search(texts[k]).group(2)][1]}
    return parsed, differs


def group_calls(run: Run, rows: list[dict], id_field: str, question: str, cases: dict, flag: int) -> tuple[dict, set]:
    """Per call of a group (best-of-4: the group; pairwise: the game, by where response 0 stood)
    -> parsed verdict, and the calls whose case strict reads otherwise."""
    case_of = {r[id_field]: C.CASE.search(r[question]).group(1) for r in rows}
    parsed = {(j["group_id"], j.get("order")): no_verdict(j["parsed"]) for j in run.judgments
              if j["response_index"] == 0 and j.get("attempt", 1) == 1}
    differs = {k for k in parsed if cases[case_of[k[0]]][flag]}
    return parsed, differs


def strict_cases():
    cases = []
    if RB2_REASON is None:
        cases += ["rb2_ratings", "rb2_fourway"]
    else:
        cases += [pytest.param(p, marks=pytest.mark.skip(reason=RB2_REASON)) for p in ("rb2_ratings", "rb2_fourway")]
    if JB_REASON is None:
        cases += ["arena_hard", "vanilla"]
    else:
        cases += [pytest.param(p, marks=pytest.mark.skip(reason=JB_REASON)) for p in JUDGES]
    return cases


@pytest.mark.parametrize("protocol", strict_cases())
def test_strict_reads_otherwise_exactly_the_cut_off_and_think_replies(request, protocol):
    if protocol.startswith("rb2_"):
        rb2, strict_runs = request.getfixturevalue("rb2"), request.getfixturevalue("rb2_strict")
        kind = protocol[4:]
        runs = (rb2[kind], strict_runs[kind])
        if kind == "ratings":
            (default, d), (strict, _) = (rating_calls(run, rb2["rows"]) for run in runs)
        else:
            rows = [r for r in rb2["rows"] if r["subset"] != "Ties"]
            (default, d), (strict, _) = (group_calls(run, rows, "id", "prompt", C.FOURWAY_CASES, 1) for run in runs)
    else:
        jb, strict_runs = request.getfixturevalue("jb"), request.getfixturevalue("jb_strict")
        cases, flag = (C.ARENA_CASES, 2) if protocol == "arena_hard" else (C.VANILLA_CASES, 1)
        (default, d), (strict, _) = (group_calls(run, jb["rows"], "pair_id", "question", cases, flag)
                                     for run in (jb[protocol], strict_runs[protocol]))
    assert set(default) == set(strict) and d
    read_otherwise = {k for k in default if default[k] != strict[k]}
    assert read_otherwise == d, {k: (default[k], strict[k]) for k in read_otherwise ^ d}
