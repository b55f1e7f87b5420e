"""Judge protocols (prompt text and answer parsing) of RewardBench 2 and JudgeBench.

RewardBench 2: checked against the ``rewardbench`` 0.1.4 wheel's own ``generative_v2`` functions
(skipped with a reason when the wheel is missing). JudgeBench does not install from PyPI: its
rules are written out independently in ``rmbench.models.judge.judgebench`` and checked here on
hand-computed cases, each citing the file and function of github.com/ScalerLab/JudgeBench
(commit e2c52c284e735e139b3daa61c206ee208f36c461) it was checked against by hand.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import sys
import types
from collections import Counter
from functools import lru_cache

import pytest

from rmbench.errors import ConfigError
from rmbench.models.judge import judgebench as jb
from rmbench.models.judge import rewardbench2 as rb2
from tests.support import rb_official

# ============================================================================================
# RewardBench 2 (rewardbench 0.1.4 wheel)
# ============================================================================================

API_MODEL = "gpt-4o-2024-08-06"  # in the wheel's OPENAI_MODEL_LIST: the OpenAI-style API path

# generative_v2 imports the API clients at module level; those not installed are stubbed for
# the import only (the functions under test never call them: chat_completion* are patched).
_CLIENT_STUBS = {
    "anthropic": {"HUMAN_PROMPT": "\n\nHuman:", "APIError": Exception, "Anthropic": object},
    "openai": {"APIError": Exception, "APIConnectionError": Exception, "RateLimitError": Exception,
               "OpenAI": object},
    "together": {"Together": object},
    "google.generativeai": {"configure": None, "GenerativeModel": object},
    "google.generativeai.types": {"HarmBlockThreshold": object, "HarmCategory": object},
}


@lru_cache(maxsize=1)
def _load_generative_v2():
    """``rewardbench.generative_v2`` (0.1.4), imported through ``rb_official.import_rewardbench``."""
    rb_official.import_rewardbench()
    added = []
    try:
        for name, attributes in _CLIENT_STUBS.items():
            try:
                importlib.import_module(name)
            except ImportError:
                sys.modules[name] = types.SimpleNamespace(__name__=name, **attributes)
                added.append(name)
        return importlib.import_module("rewardbench.generative_v2")
    finally:
        for name in added:  # the module keeps its references; nothing else should see the stubs
            sys.modules.pop(name, None)


REASON = rb_official.unavailable_reason(_load_generative_v2, "rewardbench.generative_v2 (0.1.4)")
needs_wheel = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture
def gv2():
    return _load_generative_v2()


def _wheel_rating(gv2, monkeypatch, reply, *, ties=False, question="q", answer="a"):
    """The wheel's ``_get_single_rating`` on a canned reply: (parsed rating, messages it sent)."""
    sent = []

    def fake_chat_completion(model, messages, temperature=0.0, max_tokens=None, **_):
        sent.append([dict(m) for m in messages])
        return reply

    monkeypatch.setattr(gv2, "chat_completion", fake_chat_completion)
    rating, raw = gv2._get_single_rating(question, answer, API_MODEL, None, ties)
    assert raw == reply
    return rating, sent[0]


def _turns(answer, question="q"):
    return [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]


@needs_wheel
def test_prompt_texts_equal_the_wheels(gv2):
    assert rb2.RATINGS_PROMPT == gv2.ratings_prompt
    assert rb2.RATINGS_PROMPT_TIES == gv2.ratings_prompt_ties
    assert rb2.FOURWAY_SYSTEM_PROMPT == gv2.prompt_v2 == gv2.MTBENCH_V2["system_prompt"]
    assert rb2.FOURWAY_TEMPLATE == gv2.MTBENCH_V2["prompt_template"]
    assert rb2.RATINGS_SYSTEM_PROMPT == ""


@needs_wheel
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("question,answer", [
    ("What is 2+2?", "4"),
    ("Braces {prompt} {0} {{x}}\n\n  spaced  ", "Answer with {completion} and }{ and \\n\n"),
    ("", ""),
])
def test_rating_messages_equal_what_the_wheel_sends(gv2, monkeypatch, ties, question, answer):
    _, sent = _wheel_rating(gv2, monkeypatch, "ok 5", ties=ties, question=question, answer=answer)
    assert rb2.rating_messages(question, answer, ties) == tuple((m["role"], m["content"]) for m in sent)


RATING_CORPUS = {
    # reply: the rating by rmbench's documented rule (None = the wheel's -1)
    "[[7]]": None, "Rating: [[10]]": None, "[[7]] ... [[3]]": None, "no rating": None,
    "[[11]]": None, "[[0]]": None, "7/10": 10, "**[[5]]**": None, "<think>[[2]]</think>[[8]]": None,
    "Good answer.\n\n9": 9, "Rating: 10": 10, "10": 10, "1": 1, " 7 \n\n": 7, "0": None, "11": None,
    "110": None, "07": None, "x7": None, "_7": None, "é7": None, "-3": 3, "3.5": 5, "8.": None,
    "8/10.": None, "**8**": None, "Score: 8\nThanks": None, "rated 9 of 10": 10, "9 out of 10": 10,
    "v10": None, "(4)": None, "(4": 4, "final: ٧": None, "final: 7\u3000": 7, "": None, "$ERROR$": None,
    "Explanation ... 6\t": 6, "2 3": 3, "12 1": 1,
}


def test_parse_rating_by_hand():
    for reply, expected in RATING_CORPUS.items():
        assert rb2.parse_rating(reply) == expected, reply
    assert rb2.parse_rating(None) is None


@needs_wheel
def test_parse_rating_matches_the_wheels_parser(gv2, monkeypatch):
    for reply in RATING_CORPUS:
        rating, _ = _wheel_rating(gv2, monkeypatch, reply)
        assert rb2.parse_rating(reply) == (None if rating == -1 else rating), reply


@needs_wheel
def test_ratings_to_winners_as_the_module_docstring_says(gv2, monkeypatch):
    """run_judge_ratings_multi: winners = indices at the top valid rating; all -1 -> "error"."""
    def run(replies):
        queue = list(replies)
        monkeypatch.setattr(gv2, "chat_completion", lambda *a, **k: queue.pop(0))
        return gv2.run_judge_ratings_multi("q", [_turns(f"answer {i}") for i in range(len(replies))], API_MODEL)

    winners, prompts, info = run(["8", "[[9]]", "8", "x"])
    assert winners == [0, 2] and info["ratings"] == [8, -1, 8, -1]
    assert prompts[1] == rb2.rating_messages("q", "answer 1", False)[0][1]
    winners, _, info = run(["no", "[[3]]", "none", ""])
    assert winners == "error" and info["ratings"] == [-1, -1, -1, -1]


@needs_wheel
@pytest.mark.parametrize("question,answers", [
    ("Pick one", ["alpha", "beta", "gamma", "delta"]),
    ("{question} {answer_a}\n", ["{answer_b}", "", "multi\nline\n\n", "  x  "]),
])
def test_fourway_messages_equal_what_the_wheel_sends(gv2, monkeypatch, question, answers):
    sent = []

    def fake_openai(model, conv, temperature, max_tokens, api_dict=None):
        sent.append(conv.to_openai_api_messages())
        return "My verdict: [[C]]"

    monkeypatch.setattr(gv2, "chat_completion_openai", fake_openai)
    winner, user_prompt, _ = gv2.run_judge_four(question, *[_turns(a, question) for a in answers], API_MODEL)
    assert winner == "C"
    messages = rb2.fourway_messages(question, answers)
    assert messages == tuple((m["role"], m["content"]) for m in sent[0])
    assert messages[1][1] == user_prompt
    assert gv2.format_judge_answers(question, *[_turns(a, question) for a in answers]) == (
        messages[0][1], messages[1][1])


def test_fourway_messages_needs_four_answers():
    with pytest.raises(ValueError):
        rb2.fourway_messages("q", ["a", "b", "c"])


FOURWAY_CORPUS = {
    "[[A]]": "A", "Final verdict: [[B]]": "B", "[[D]] ... [[A]]": "A", "[[C]] then [[B]]": "B",
    "<think>[[B]]</think>[[C]]": "B", "[A]": None, "[[ A ]]": None, "[[a]]": None, "[[E]]": None,
    "no verdict": None, "": None, "**[[D]]**": "D", "[[[C]]]": "C", "$ERROR$": None, "[[A/B]]": None,
}


def test_parse_fourway_by_hand():
    for reply, expected in FOURWAY_CORPUS.items():
        assert rb2.parse_fourway(reply) == expected, reply
    assert rb2.parse_fourway(None) is None


@needs_wheel
def test_parse_fourway_matches_process_judgement(gv2):
    for reply in FOURWAY_CORPUS:
        official = gv2.process_judgement(reply, None)
        assert rb2.parse_fourway(reply) == (None if official == "error" else official), reply


def _lp(p):
    return math.log(p)


def test_expected_rating_single_token():
    positions = [
        (("Good", _lp(0.9)),),
        ((".\n\n", _lp(0.8)), ("8", _lp(0.1))),  # an earlier "8" alternative is not the rating position
        (("8", _lp(0.5)), ("9", _lp(0.3)), ("7", _lp(0.1)), ("eight", _lp(0.05))),
    ]
    assert rb2.expected_rating(positions) == pytest.approx((8 * 0.5 + 9 * 0.3 + 7 * 0.1) / 0.9)


def test_expected_rating_uses_the_final_number_and_whitespace_tokens():
    positions = [
        (("Scale 1", _lp(0.9)),), ((" to", _lp(0.9)),), ((" 10", _lp(0.9)),), ((":", _lp(0.9)),),
        ((" 6", _lp(0.6)), (" 7", _lp(0.2)), ("6", _lp(0.1)), (" 10", _lp(0.1))),
        (("\n", _lp(0.99)),),
    ]
    expected = (6 * 0.6 + 7 * 0.2 + 6 * 0.1 + 10 * 0.1) / 1.0
    assert rb2.expected_rating(positions) == pytest.approx(expected)


def test_expected_rating_ten_as_one_token_and_as_two():
    one_token = [(("Answer:", 0.0),), ((" 10", _lp(0.7)), (" 9", _lp(0.2)), (" 1", _lp(0.05)))]
    assert rb2.expected_rating(one_token) == pytest.approx((10 * 0.7 + 9 * 0.2 + 1 * 0.05) / 0.95)
    two_tokens = [(("Answer:", 0.0),), ((" 1", _lp(0.6)), (" 9", _lp(0.3)), (" 8", _lp(0.1))), (("0", 0.0),)]
    assert rb2.expected_rating(two_tokens) == pytest.approx(10 * 0.6 + 9 * 0.3 + 8 * 0.1)
    # a lone "1" (no "0" after it) is a 1
    lone_one = [(("Answer:", 0.0),), ((" 1", _lp(0.5)), (" 2", _lp(0.5)))]
    assert rb2.expected_rating(lone_one) == pytest.approx(1.5)


def test_expected_rating_none_when_no_rating():
    assert rb2.expected_rating([]) is None
    assert rb2.expected_rating([(("[[", 0.0),), (("7", 0.0), ("8", -1.0)), (("]]", 0.0),)]) is None
    assert rb2.expected_rating([(("score", 0.0),), ((":9", 0.0), (":8", -1.0))]) is None  # text glued to it
    assert rb2.expected_rating([(("0", 0.0),)]) is None


def test_fourway_slots_swap_the_correct_answer_and_are_deterministic():
    for key in ["row-1", "row-2", "", "é"]:
        slots = rb2.fourway_slots(4, key, seed=7)
        assert slots == rb2.fourway_slots(4, key, seed=7)
        assert sorted(slots) == [0, 1, 2, 3]
        assert [slots[j] for j in slots] == [0, 1, 2, 3]  # a swap: its own inverse
        assert all(slots[i] == i for i in range(1, 4) if i != slots[0])
    assert rb2.fourway_slots(1, "x", 0) == [0]
    digest = hashlib.sha256(b"rmbench-fourway:7:row-1").digest()
    assert rb2.fourway_slots(4, "row-1", 7)[0] == int.from_bytes(digest, "big") % 4
    with pytest.raises(ValueError):
        rb2.fourway_slots(0, "x", 0)


def test_fourway_slots_are_uniform_and_depend_on_the_seed():
    n = 4000
    counts = Counter(rb2.fourway_slots(4, f"id-{i}", seed=42)[0] for i in range(n))
    chi2 = sum((counts[s] - n / 4) ** 2 / (n / 4) for s in range(4))
    assert chi2 < 16.27  # chi-square, 3 degrees of freedom, p = 0.001
    other = [rb2.fourway_slots(4, f"id-{i}", seed=43)[0] for i in range(200)]
    same = [rb2.fourway_slots(4, f"id-{i}", seed=42)[0] for i in range(200)]
    assert 20 < sum(a == b for a, b in zip(other, same)) < 80  # about 1/4 agree by chance


# ============================================================================================
# JudgeBench (written out independently; checked by hand against the repository's code)
# ============================================================================================

# sha256 of the template files at the commit (git show <commit>:utils/templates/<name> | sha256sum).
# The files have no trailing newline and no jinja blocks, so the rendered text is the file with
# {{name}} substituted (utils/prompts.py::render_template: trim_blocks/lstrip_blocks only touch blocks).
TEMPLATE_SHA256 = {
    "VANILLA_PROMPT": "45d0b0bd8304b032c9b34a2fece15ac9ad5c241ef296aff9896e5d5666d77026",
    "ARENA_HARD_SYSTEM": "03f68010febd7a6405102ef882b4dd5a9700c56b2e1ff286d3b38f5d3a929bbf",
    "ARENA_HARD_PROMPT": "16c2290ec6737343982773be71f80bd1caa8a8eaffe65077736586252ddda4c3",
}


def test_templates_are_the_files_at_the_commit():
    for name, digest in TEMPLATE_SHA256.items():
        assert hashlib.sha256(getattr(jb, name).encode("utf-8")).hexdigest() == digest, name


def test_pair_messages_vanilla():
    # utils/judges.py::Vanilla.get_judgment: one user message, render_template("vanilla_prompt", ...)
    (message,) = jb.pair_messages("vanilla", "Q?", "first", "second")
    assert message[0] == "user"
    assert message[1].startswith("You are a helpful assistant in evaluating the quality")
    assert "\n# Instruction:\nQ?\n# Output (a):\nfirst\n# Output (b):\nsecond\n# Which is better" in message[1]
    assert message[1].endswith('either "Output (a)" or "Output (b)":')


def test_pair_messages_arena_hard():
    # utils/judges.py::ArenaHard.get_judgment: system arena_hard_judge_system, user arena_hard_judge_prompt
    system, user = jb.pair_messages("arena_hard", "Q?", "first", "second")
    assert system == ("system", jb.ARENA_HARD_SYSTEM)
    expected = ("<|User Prompt|>\nQ?\n\n<|The Start of Assistant A's Answer|>\nfirst\n"
                "<|The End of Assistant A's Answer|>\n\n<|The Start of Assistant B's Answer|>\n"
                "second\n<|The End of Assistant B's Answer|>")
    assert user == ("user", expected)


def test_pair_messages_substitute_once():
    # jinja inserts values verbatim: a placeholder inside an answer is not filled in again
    _, (_, user) = jb.pair_messages("arena_hard", "{{answer_b}}", "{{prompt}}", "B")
    assert "<|User Prompt|>\n{{answer_b}}\n" in user and "Answer|>\n{{prompt}}\n" in user


def test_unknown_protocol():
    with pytest.raises(ConfigError, match="arena_hard"):
        jb.pair_messages("arena-hard", "q", "a", "b")
    with pytest.raises(ConfigError):
        jb.parse_verdict("pandalm", "x")


@pytest.mark.parametrize("text,expected", [
    # utils/judges.py::Vanilla.extract_pairwise_result on output.strip(); anything else raises,
    # run_judge.py::judge_pairs catches it and records the game as None
    ("Output (a)", "A>B"), ("Output (b)", "B>A"), ("  Output (b)\n", "B>A"),
    ("Output (a).", None), ("output (a)", None), ("Output (a) is better", None), ("Output (A)", None),
    ("", None), (None, None),
])
def test_parse_verdict_vanilla(text, expected):
    assert jb.parse_verdict("vanilla", text) == expected


@pytest.mark.parametrize("text,expected", [
    # utils/judges.py::ArenaHard.get_score (findall r"\[\[([AB<>=]+)\]\]", one distinct label or None)
    # then get_judgment: score.replace(">>", ">").strip()
    ("My final verdict is tie: [[A=B]]", "A=B"),
    ("[[A>>B]]", "A>B"), ("[[A>B]]", "A>B"), ("[[B>A]]", "B>A"), ("[[B>>A]]", "B>A"),
    ("[[A>B]] and again [[A>B]]", "A>B"),   # repeats of one label: fine
    ("[[A>>B]] ... [[A>B]]", None),         # two distinct strings: None (before the >> collapse)
    ("[[A>B]] ... [[B>A]]", None),
    ("no label", None), ("[A>B]", None), ("[[ A>B ]]", None), ("", None), (None, None),
    ("[[A]]", "A"), ("[[A<B]]", "A<B"),     # recorded as they are; they vote for neither side
    ("\nthinking...\n[[B>>A]]", "B>A"),
])
def test_parse_verdict_arena_hard(text, expected):
    assert jb.parse_verdict("arena_hard", text) == expected


def test_arena_hard_continuation():
    # ArenaHard.get_judgment: up to 2 attempts; asks again only when no label was found; the
    # judgment is "\n" + reply_1 + "\n" + reply_2 and is parsed as a whole
    first = "Long analysis, ran out of room"
    assert jb.needs_continuation("arena_hard", first)
    assert not jb.needs_continuation("arena_hard", "[[A>B]] [[B>A]]")  # ambiguous: no retry
    assert not jb.needs_continuation("vanilla", "whatever")
    messages = jb.pair_messages("arena_hard", "q", "a", "b")
    follow = jb.continue_messages(messages, first)
    assert follow[:2] == messages
    assert follow[2:] == (("assistant", first),
                          ("user", "continue your judgment and finish by outputting a final verdict label"))
    assert jb.ARENA_HARD_ATTEMPTS == 2
    assert jb.parse_verdict("arena_hard", "\n" + first + "\n" + "So: [[B>>A]]") == "B>A"


@pytest.mark.parametrize("text,reasoning,expected", [
    ("<think>hmm [[A>B]]</think>\nFinal: [[B>A]]", None, "\nFinal: [[B>A]]"),
    ("<think>a</think> x <think>b</think>[[A=B]]", None, "[[A=B]]"),
    ("<think>cut off mid-thought [[A>B]]", None, ""),
    ("<think>a</think> [[A>B]] <think>reopened, cut off", None, ""),
    ("plain [[A>B]]", None, "plain [[A>B]]"),
    ("stray </think> then Output (a)", None, " then Output (a)"),
    ("<think>ignored here</think>answer", "separate thoughts", "<think>ignored here</think>answer"),
    ("", None, ""), (None, None, ""),
])
def test_strip_reasoning(text, reasoning, expected):
    assert jb.strip_reasoning(text, reasoning) == expected


def _counter_from_metrics_py(label, decision1, decision2_raw):
    """utils/metrics.py::compute_final_metrics (reverse_order branch), the counter as written there
    (flip_judgment swaps only "A>B"/"B>A"): True when the pair counts in n_correct."""
    flip = {"A>B": "B>A", "B>A": "A>B"}
    decision2 = flip.get(decision2_raw, decision2_raw)
    counter = 0
    for decision in (decision1, decision2):
        if decision == label:
            counter += 1
        elif decision == flip[label]:
            counter -= 1
    return counter > 0


DECISIONS = ["A>B", "B>A", "A=B", None, "A"]


def test_combine_games_by_hand():
    # utils/metrics.py::compute_final_metrics: game 2 flipped back, +1/-1 votes, sign of the sum
    assert jb.combine_games("A>B", "B>A") == 1      # consistent: A better
    assert jb.combine_games("B>A", "A>B") == -1     # consistent: B better
    assert jb.combine_games("A>B", "A>B") == 0      # position bias: inconsistent
    assert jb.combine_games("A>B", "A=B") == 1      # one vote and a tie
    assert jb.combine_games("A=B", "A>B") == -1
    assert jb.combine_games("A>B", None) == 1       # a failed game does not cancel the other
    assert jb.combine_games(None, "B>A") == 1
    assert jb.combine_games("A=B", "A=B") == 0
    assert jb.combine_games("A", "A<B") == 0        # odd labels vote for neither side
    assert jb.combine_games(None, None) is None


def test_combine_games_agrees_with_the_metrics_counter_on_every_case():
    for label in ("A>B", "B>A"):
        want = 1 if label == "A>B" else -1
        for d1 in DECISIONS:
            for d2 in DECISIONS:
                correct = jb.combine_games(d1, d2) == want
                assert correct == _counter_from_metrics_py(label, d1, d2), (label, d1, d2)


def test_combine_single():
    # compute_final_metrics without reverse_order: correct iff decision == label
    assert [jb.combine_single(d) for d in DECISIONS] == [1, -1, 0, None, 0]


def test_final_metrics_by_hand():
    # run_judge.py::main: groups by source.startswith(prefix) for "mmlu-pro", "livebench-reasoning",
    # "livebench-math", "livecodebench", "" (overall); metrics.py: 100 * n_correct / n_pairs
    records = [
        ("mmlu-pro-law", "A>B", 1), ("mmlu-pro-computer science", "B>A", 1), ("mmlu-pro-math", "B>A", -1),
        ("livebench-reasoning", "A>B", 0), ("livebench-reasoning", "B>A", None),
        ("livebench-math", "A>B", 1),
        ("livecodebench", "B>A", -1), ("livecodebench", "A>B", -1),
        ("other-source", "A>B", 1),
    ]
    got = jb.final_metrics(records)
    assert got == pytest.approx({"knowledge": 2 / 3, "reasoning": 0.0, "math": 1.0, "coding": 0.5,
                                 "overall": 5 / 9})
    assert list(got) == ["knowledge", "reasoning", "math", "coding", "overall"]
    mapping = [{"source": s, "label": lab, "decision": d} for s, lab, d in records]
    assert jb.final_metrics(mapping) == got


def test_final_metrics_edges():
    assert jb.final_metrics([]) == {}
    assert jb.final_metrics([("livecodebench", "A>B", 1)]) == {"coding": 1.0, "overall": 1.0}
    with pytest.raises(ValueError):
        jb.final_metrics([("livecodebench", "A=B", 0)])


def test_protocols():
    assert jb.PROTOCOLS == ("vanilla", "arena_hard")
