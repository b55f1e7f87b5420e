"""The judge client under replies that are slow, bad or huge (issue 53, items 3, 4 and 8), against
the real loopback server (tests/support/judge_server.py): a server dripping one byte every 0.5 s, usage
of ``Infinity``, NaN logprobs, a 10 MB reply. No attempt outlasts ``timeout`` by more than a
second, one bad reply is one failed (retried, counted) call, never the run's end, and the
rewards of a run through the faults equal a clean run's."""

from __future__ import annotations

import json
import math
import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models.judge.client import ChatClient, ChatRequest, JudgeServerError  # noqa: E402
from rmbench.models.judge.transfer import Deadline, DeadlineExceeded, TooLarge, request_within  # noqa: E402
from rmbench.models.judge.wire import MAX_TOKEN_COUNT, MalformedReply, parse_reply, token_count  # noqa: E402
from tests.models.judge.test_judge import rating_reply, rewards, run  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

NAN_LOGPROBS = {"content": [{"token": "A", "logprob": math.nan, "top_logprobs": [{"token": "A", "logprob": math.nan}]}]}


def ask(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=(("user", text),), **kw)


def client(server: ScriptedServer, **kw) -> ChatClient:
    return ChatClient(server.base_url, "judge-model", **{"backoff_base": 0.01, "timeout": 1.0, "progress": False,
                                                         **kw})


# --- a deadline per attempt -------------------------------------------------------------------

@pytest.mark.parametrize("head_too", [False, True], ids=["body", "head-and-body"])
def test_a_dripping_server_is_given_up_at_the_timeout_and_retried(head_too):
    with ScriptedServer(reply="A") as server:
        server.faults.append(("drip", 0.5, head_too))
        c = client(server, timeout=1.0)
        t0 = time.perf_counter()
        [reply] = c.complete([ask("x")])
        took = time.perf_counter() - t0
    # one attempt given up at 1 s (the drip would take ~100 s), then an immediate good one
    assert reply.text == "A" and reply.retries == 1 and took < 1.0 + 1.0, took
    assert (c.stats.timeouts, c.stats.retries, c.stats.calls, c.stats.malformed) == (1, 1, 1, 0)


def test_every_attempt_is_bounded_and_the_progress_line_counts_the_timeouts(capsys, monkeypatch):
    monkeypatch.setenv("RMBENCH_PROGRESS_EVERY", "0.2")
    with ScriptedServer(reply="A") as server:
        server.faults += [("drip", 0.5)] * 3
        c = client(server, timeout=1.0, max_retries=2, concurrency=1, progress=True)
        t0 = time.perf_counter()
        with pytest.raises(JudgeServerError, match=r"failed request 0 after 3 attempts; last: DeadlineExceeded: "
                                                   r"no whole answer within 1 s"):
            c.complete([ask("x"), ask("y")])
        took = time.perf_counter() - t0
    assert took < 3 * 1.0 + 1.0, took  # three attempts of at most a second each (was: ~70 s each)
    assert (c.stats.timeouts, c.stats.retries, c.stats.failures) == (3, 2, 1)
    assert "2 retries, 3 timed out (given up, connection closed" in capsys.readouterr().err.splitlines()[-1]


def test_one_deadline_bounds_a_judge_call_and_grows_for_a_batch_download():
    """The judge client's attempt and the batch executors' management calls share one deadline
    (``Deadline``): fixed at ``timeout`` for the first, grown by 1 s per ``min_rate`` bytes received
    for the second (batch_remote's ``MIN_RATE``: 100 kB). Arithmetic only, no clock read but its start."""
    from rmbench.models.judge.batch_remote import MIN_RATE

    call = Deadline(5.0)
    assert call.at() == call.start + 5.0 and call.at(10**9) == call.at()  # a judge call does not grow
    download = Deadline(5.0, min_rate=MIN_RATE)
    assert download.at(250_000) == pytest.approx(download.start + 7.5)  # 5 s + 250 kB at 100 kB/s
    assert Deadline(-1.0).passed() and not Deadline(3600.0).passed()


def test_request_within_bounds_a_synchronous_exchange_and_its_size():
    with ScriptedServer(reply="A") as server:
        url = server.base_url + "/chat/completions"
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        resp = request_within("POST", url, timeout=2.0, json=body)
        assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["content"] == "A"
        server.faults += [("drip", 0.5, True), ("big", 10_000_000), ("status", 500, {}, "x" * 200_000)]
        t0 = time.perf_counter()
        with pytest.raises(DeadlineExceeded):
            request_within("POST", url, timeout=1.0, json=body)
        assert time.perf_counter() - t0 < 2.0
        with pytest.raises(TooLarge, match="larger than 1,000 bytes"):
            request_within("POST", url, timeout=5.0, max_bytes=1000, json=body)
        error = request_within("POST", url, timeout=5.0, max_bytes=1000, json=body)  # an error body: its start
        assert error.status_code == 500 and len(error.content) == 65_536


# --- bad replies: one failed call each ------------------------------------------------------

@pytest.mark.parametrize("fault, reason", [
    (("usage", math.inf), "malformed usage: prompt_tokens is inf"),
    (("usage", -3), "prompt_tokens is -3"),
    (("usage", 2.5), "prompt_tokens is 2.5"),
    (("usage", 10**400), "prompt_tokens is 1000"),
    (("usage", [1]), "prompt_tokens is [1]"),
    (("nan_logprobs",), "malformed logprobs: a logprob of nan"),
    (("patch", lambda a: a["choices"][0].__setitem__("logprobs", NAN_LOGPROBS)), "a logprob of nan"),
    (("patch", lambda a: a["choices"][0]["message"].__setitem__("content", [{"text": 3}])), "content parts"),
    (("patch", lambda a: a["choices"][0]["message"].__setitem__("content", 7)), "content of type int"),
    (("patch", lambda a: a["choices"][0].__setitem__("finish_reason", {"x": 1})), "malformed message"),
    (("patch", lambda a: {"choices": "[" * 100_000}), "without choices"),
    (("patch", lambda a: b"[" * 100_000 + b"]" * 100_000), "with a body that is not JSON (maximum recursion"),
    (("big", 10_000_000), "larger than 1,000,000 bytes; reading stopped"),
    (("big", 10_000_000, True), "larger than 1,000,000 bytes (Content-Length 10,0"),
])
def test_a_bad_reply_is_one_failed_call_retried_and_counted(fault, reason):
    with ScriptedServer(reply="A") as server:
        server.faults.append(fault)
        c = client(server, timeout=5.0)
        [reply] = c.complete([ask("x", top_logprobs=1)])
        server.faults.append(fault)
        with pytest.raises(JudgeServerError) as err:  # a reply that is always bad: one line, after its retries
            client(server, timeout=5.0, max_retries=0).complete([ask("x", top_logprobs=1)])
    assert reply.text == "A" and reply.retries == 1 and (c.stats.malformed, c.stats.retries) == (1, 1)
    json.dumps(reply.to_json(), allow_nan=False)  # what the call cache stores is valid JSON
    assert reason in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_a_10mb_reply_is_never_held_whole():
    with ScriptedServer(reply="A") as server:
        c = client(server, timeout=10.0)
        c.complete([ask("warm-up")])  # the first call's imports are not the reply's memory
        server.faults.append(("big", 10_000_000))
        tracemalloc.start()
        try:
            [reply] = c.complete([ask("x")])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert reply.text == "A" and c.stats.malformed == 1
    assert peak < 3_000_000, peak  # the 1 MB limit and a chunk or two (measured: 1.65 MB), not 10 MB


def test_token_counts_by_hand():
    assert [token_count(v, "f") for v in (None, 0, 7, 7.0, "12", MAX_TOKEN_COUNT)] == [0, 0, 7, 7, 12, MAX_TOKEN_COUNT]
    for bad in (math.inf, -math.inf, math.nan, -1, 2.5, 1e300, True, "1.5", "x", [], {}, MAX_TOKEN_COUNT + 1):
        with pytest.raises(MalformedReply, match="malformed usage: f is"):
            token_count(bad, "f")


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                   max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(content=JSONISH, finish=JSONISH, usage=JSONISH, logprob=JSONISH, token=JSONISH, extra=JSONISH)
def test_parse_reply_gives_a_json_ready_reply_or_malformed_reply_and_nothing_else(content, finish, usage, logprob,
                                                                                  token, extra):
    data = {"choices": [{"message": {"content": content, "reasoning": extra}, "finish_reason": finish,
                         "logprobs": {"content": [{"top_logprobs": [{"token": token, "logprob": logprob}]}]}}],
            "usage": {"prompt_tokens": usage, "completion_tokens": extra}}
    try:
        reply = parse_reply(data, 0.1, 0)
    except MalformedReply:
        return
    json.dumps(reply.to_json(), allow_nan=False)
    assert 0 <= reply.prompt_tokens <= MAX_TOKEN_COUNT and isinstance(reply.text, str)
    assert reply.finish_reason is None or isinstance(reply.finish_reason, str)


# --- a judge run through every fault equals a clean run ---------------------------------------

def test_a_judge_run_through_every_fault_equals_a_clean_run_and_counts_them(tmp_path):
    faults = [("drip", 0.5), ("usage", math.inf), ("patch", lambda a: a["choices"][0].__setitem__("logprobs",
                                                                                                   NAN_LOGPROBS)),
              ("big", 10_000_000), ("drip", 0.5, True)]
    with ScriptedServer(reply=rating_reply) as server:
        clean, clean_dir = run(server, tmp_path / "clean", ("ties_sample",), limit=3)
        n = len(server.chat_requests())
        server.faults += faults
        t0 = time.perf_counter()
        faulty, faulty_dir = run(server, tmp_path / "faulty", ("ties_sample",), limit=3, timeout=1,
                                 max_reply_bytes=500_000)
        took = time.perf_counter() - t0
    stats = faulty.execution.stats.ran_with["judge_calls"]
    assert (stats["calls"], stats["retries"], stats["timeouts"], stats["malformed"], stats["failures"]) == \
        (n, len(faults), 2, 3, 0)
    assert rewards(faulty_dir) == rewards(clean_dir)
    assert took < 15, took  # timeouts of a second each (the drips alone would take minutes)


def test_bad_reply_settings_are_one_line(tmp_path):
    with ScriptedServer(reply="A") as server:
        for key, value, said in (("max_reply_bytes", 0, "max_reply_bytes must be a positive integer, got 0"),
                                 ("max_reply_bytes", "big", "max_reply_bytes must be a positive integer, got 'big'"),
                                 ("timeout", 0, "timeout must be a positive number of seconds, got 0")):
            with pytest.raises(ConfigError, match=said):
                run(server, tmp_path, ("ties_sample",), limit=1, **{key: value})
