"""Faults of a batch run that used to cost money or the run (issue 53), against the scripted batch
server on 127.0.0.1 (tests/support/batch_server.py): a creation whose answer is lost, a process SIGKILLed
while it creates its batch, two runs of the same requests at once, a result line with
``Infinity`` or ``NaN`` in it, storms of 429 with ``Retry-After``, a state file that cannot be
written. Each asserts how many batches were created, how many requests were billed and that the
replies equal a clean run's."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rmbench.models.judge.client import JudgeServerError
from tests.models.judge.test_judge_batch import KEY, MODEL, executor, keys_of, reply, requests, run, same
from tests.support.batch_server import BatchServer

ROOT = Path(__file__).parents[3]


def reqs_for(kind: str):
    return requests(6) if kind == "openai" else requests(4)  # no logprobs for Anthropic


def clean(kind: str, tmp_path: Path) -> dict:
    """The replies of a clean run of the same requests."""
    with BatchServer(reply=reply) as server:
        got, _ = run(executor(server, tmp_path / "clean", kind=kind), reqs_for(kind))
    return got


def equal_to_clean(got: dict, kind: str, tmp_path: Path) -> None:
    want = clean(kind, tmp_path)
    assert sorted(got) == sorted(want) and all(same(got[i], want[i]) for i in want)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_lost_creation_answer_is_found_on_the_server_not_created_again(tmp_path, kind, capsys):
    reqs = reqs_for(kind)
    with BatchServer(reply=reply, create_drop=1) as server:  # makes the batch, then hangs up
        got, outcome = run(executor(server, tmp_path, kind=kind), reqs)
        assert (server.batches_created, server.billed, server.chat_requests()) == (1, len(reqs), [])
        assert server.listings >= 1
    err = capsys.readouterr().err
    assert "could not create the batch" in err and "found batch" in err and "re-attaching" in err
    assert outcome.completed == len(reqs) and not list((tmp_path / "state").glob("*"))
    equal_to_clean(got, kind, tmp_path)


def test_a_creation_refused_in_passing_is_tried_again_after_a_look(tmp_path):
    reqs = requests(6)
    with BatchServer(reply=reply, create_faults=[429, 503]) as server:
        got, _ = run(executor(server, tmp_path), reqs)
        assert (server.batches_created, server.billed, server.listings) == (1, 6, 2)
    equal_to_clean(got, "openai", tmp_path)


CHILD = """
import sys
sys.path.insert(0, {tests!r})
from tests.models.judge.test_judge_batch import KEY, MODEL, keys_of, requests
from rmbench.models.judge.batch import make_batch_executor
kind, base_url, state = sys.argv[1:4]
reqs = requests(6) if kind == "openai" else requests(4)
ex = make_batch_executor(kind, base_url=base_url, model=MODEL, state_dir=state, api_key=KEY, poll_interval=0.02,
                         timeout=60.0, progress=False)
ex.complete(reqs, keys_of(reqs), lambda i, r: None)
"""


@pytest.mark.slow  # a subprocess, SIGKILLed
@pytest.mark.parametrize("kind,ended", [("openai", False), ("anthropic", False), ("anthropic", True)])
def test_sigkill_during_creation_then_a_rerun_re_attaches(tmp_path, kind, ended):
    reqs = reqs_for(kind)
    state = tmp_path / "state"
    with BatchServer(reply=reply, create_hold=30.0) as server:
        child = subprocess.Popen([sys.executable, "-c", CHILD.format(tests=str(ROOT)), kind, server.base_url,
                                  str(state)], env={**os.environ, "PYTHONPATH": str(ROOT)},
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while server.batches_created == 0 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)  # the batch exists; its id never reached the state file
        child.wait()
        assert server.batches_created == 1, child.stderr.read().decode()
        [path] = state.glob("*.json")
        assert "batch_id" not in json.loads(path.read_text()) and json.loads(path.read_text())["creating"]
        server.create_hold = 0.0
        if ended:  # a batch that has ended is confirmed by its results' custom ids
            next(iter(server.batches.values()))["polls"] = 99
        got, outcome = run(executor(server, tmp_path, kind=kind), reqs)
        assert (server.batches_created, server.billed, server.chat_requests()) == (1, len(reqs), [])
    assert outcome.batch_ids == [next(iter(server.batches))] and not path.exists()
    equal_to_clean(got, kind, tmp_path)


def test_two_runs_of_the_same_requests_at_once_make_one_batch(tmp_path, capsys):
    reqs = requests(6)
    store: dict = {}
    lock = threading.Lock()
    outcomes: list = []
    replies: list[dict] = [{}, {}]

    def answered(keys):
        with lock:
            return {k for k in keys if k in store}

    def one_run(n: int) -> None:
        keys = keys_of(reqs)

        def keep(i, r):
            with lock:
                store[keys[i]] = r
            replies[n][i] = r

        outcomes.append(executor(server, tmp_path).complete(reqs, keys, keep, answered=answered))

    with BatchServer(reply=reply, in_progress_polls=10) as server:
        threads = [threading.Thread(target=one_run, args=(n,)) for n in (0, 1)]
        for t in threads:
            t.start()
            time.sleep(0.05)
        for t in threads:
            t.join(60)
        assert (server.batches_created, server.billed) == (1, 6)
    assert sorted(o.answered_elsewhere for o in outcomes) == [0, 6]
    first = replies[0] or replies[1]
    assert not (replies[0] and replies[1])  # the second run was handed nothing: the store has it all
    assert "holds the batch of these 6 requests" in capsys.readouterr().err
    equal_to_clean(first, "openai", tmp_path)


@pytest.mark.parametrize("fault,line", [("infinity_usage", 0), ("huge_usage", 1), ("nan_logprobs", 4),
                                        ("garbage", 2)])
def test_a_bad_output_line_is_one_failed_call_retried_synchronously(tmp_path, fault, line, capsys):
    reqs = requests(6)
    with BatchServer(reply=reply, output_faults={line: fault}) as server:
        got, outcome = run(executor(server, tmp_path), reqs)
        retried = server.chat_requests()
        assert (server.batches_created, server.billed) == (1, 7)  # 6 batch lines, 1 synchronous retry
    assert retried == [reqs[line].body(MODEL)]
    assert (outcome.completed, outcome.failed, outcome.retried_sync) == (5, 1, 1)
    assert outcome.sync_prompt_tokens == got[line].prompt_tokens > 0
    assert not list((tmp_path / "state").glob("*"))
    assert "retrying them synchronously" in capsys.readouterr().err
    equal_to_clean(got, "openai", tmp_path)


def test_a_bad_output_line_without_retry_sync_keeps_every_other_reply(tmp_path):
    reqs = requests(6)
    with BatchServer(reply=reply, output_faults={0: "infinity_usage", 5: "garbage"}) as server:
        got: dict = {}
        with pytest.raises(JudgeServerError, match=r"2 of 6 requests unanswered.*not finite|2 of 6.*malformed"):
            executor(server, tmp_path, retry_sync=False).complete(reqs, keys_of(reqs), got.__setitem__)
    assert sorted(got) == [1, 2, 3, 4]


def test_polling_honours_retry_after_through_a_429_storm(tmp_path, capsys):
    reqs = requests(6)
    storm = [(429, {"Retry-After": "0.05"})] * 6 + [503] * 3
    with BatchServer(reply=reply, status_faults=storm) as server:
        start = time.monotonic()
        got, outcome = run(executor(server, tmp_path, backoff_first=0.01, backoff_cap=0.02), reqs)
        took = time.monotonic() - start
        assert (server.batches_created, server.billed, server.chat_requests()) == (1, 6, [])
    assert took >= 6 * 0.05  # every Retry-After waited out, though the backoff alone is shorter
    err = capsys.readouterr().err
    assert err.count("HTTP 429") == 6 and err.count("the server's Retry-After") == 6
    assert err.count("HTTP 503") == 3 and "backing off" in err
    equal_to_clean(got, "openai", tmp_path)


def test_backoff_doubles_to_its_cap():
    from rmbench.models.judge.batch_core import Backoff

    b = Backoff(1.0, 8.0, 1e9)
    assert [b.next(None) for _ in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert b.next(30.0) == 30.0  # the server's Retry-After above the cap
    assert Backoff(1.0, 8.0, 0.5).next(None) is None  # past the outage limit: give up


def test_an_outage_longer_than_outage_limit_is_one_line_and_the_rerun_re_attaches(tmp_path):
    reqs = requests(6)
    with BatchServer(reply=reply, status_faults=[503] * 1000) as server:
        with pytest.raises(JudgeServerError, match=r"could not poll batch batch_1: the server failed for .* in a "
                                                   r"row \(outage_limit 0.2 s\); last: HTTP 503") as info:
            run(executor(server, tmp_path, outage_limit=0.2, backoff_first=0.01, backoff_cap=0.05), reqs)
        assert "\n" not in str(info.value)
        server.status_faults.clear()
        got, outcome = run(executor(server, tmp_path), reqs)
        assert (server.batches_created, server.billed) == (1, 6) and outcome.reattached
    equal_to_clean(got, "openai", tmp_path)


def test_batch_wait_bounds_a_wait_for_retry_after(tmp_path, monkeypatch):
    import rmbench.models.judge.batch_remote as remote

    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(remote.time, "sleep", lambda s: (slept.append(s), real_sleep(s))[1])
    with BatchServer(reply=reply, status_faults=[(429, {"Retry-After": "60"})] * 5) as server:
        with pytest.raises(JudgeServerError, match=r"could not poll batch batch_1 within batch_wait 0.5 s"):
            run(executor(server, tmp_path, wait_limit=0.5), requests(3))
        assert server.batches_created == 1
    assert max(slept, default=0.0) <= 0.5  # the server's 60 s never waited: given up at once


def test_a_state_file_that_cannot_be_written_stops_before_the_upload(tmp_path, monkeypatch):
    import rmbench.models.judge.batch_remote as remote

    def full(path, text):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(remote, "atomic_write_text", full)
    with BatchServer(reply=reply) as server:
        with pytest.raises(JudgeServerError, match=r"cannot write its state file .*No space left on device; no "
                                                   r"batch was created"):
            run(executor(server, tmp_path), requests(3))
        assert (server.uploads, server.batches_created, server.billed) == (0, 0, 0)


def test_the_state_file_is_written_before_the_upload(tmp_path, monkeypatch):
    """What the state file holds at each call that could cost: the request set's hash before the
    upload, the input_file_id (and the creating mark) before the creation."""
    import rmbench.models.judge.batch_remote as remote

    seen: list[dict] = []
    real = remote.RemoteBatch._call

    def look(self, http, method, url, what, **kw):
        if method == "POST":
            seen.append(json.loads(self._path.read_text()))
        return real(self, http, method, url, what, **kw)

    monkeypatch.setattr(remote.RemoteBatch, "_call", look)
    with BatchServer(reply=reply) as server:
        run(executor(server, tmp_path), requests(3))
    assert [sorted(s) for s in seen] == [
        ["created", "host", "kind", "model", "requests", "requests_sha256"],
        ["created", "creating", "host", "input_file_id", "kind", "model", "requests", "requests_sha256"]]
    assert all(KEY not in json.dumps(s) for s in seen)


def test_a_dripping_download_is_cut_at_timeout_and_tried_again(tmp_path, capsys):
    reqs = requests(6)
    with BatchServer(reply=reply, drip_downloads=1, drip=0.02) as server:
        got, outcome = run(executor(server, tmp_path, timeout=0.5), reqs)
        assert (server.batches_created, server.billed) == (1, 6)
    # the dripping file (hundreds of bytes, each well within the timeout) given up as a whole, then read again
    err = capsys.readouterr().err
    assert "could not read the batch's output file (ReadTimeout: no whole answer within timeout 0.5 s)" in err
    equal_to_clean(got, "openai", tmp_path)


def test_read_lines_makes_each_bad_line_one_failed_line_and_keeps_the_rest():
    from rmbench.models.judge.batch_core import read_lines
    from rmbench.models.judge.batch_providers import openai_line

    def line(cid: str, usage: str, extra: str = "") -> str:
        return ('{"custom_id": "' + cid + '", "error": null, "response": {"status_code": 200, "body": {"choices": '
                '[{"message": {"content": "A"}, "finish_reason": "stop"' + extra + '}], "usage": ' + usage + '}}}')

    text = "\n".join([
        line("good1", '{"prompt_tokens": 3, "completion_tokens": 1}'),
        line("inf", '{"prompt_tokens": Infinity, "completion_tokens": 1}'),
        line("neg", '{"prompt_tokens": -4, "completion_tokens": 1}'),
        line("absurd", '{"prompt_tokens": 1000000000000, "completion_tokens": 1}'),
        line("nan", '{"prompt_tokens": 3, "completion_tokens": 1}',
             ', "logprobs": {"content": [{"token": "A", "logprob": NaN, "top_logprobs": []}]}'),
        line("digits", '{"prompt_tokens": ' + "9" * 5000 + ', "completion_tokens": 1}'),
        '{"custom_id": "deep", "x": ' + "[" * 100000 + "]" * 100000 + "}",
        '{"custom_id": "cut", "response": {"status_co',
        "garbage without an id",
        line("good2", '{"prompt_tokens": 5, "completion_tokens": 2}'),
    ])
    got = list(read_lines(text, openai_line))
    assert [(r.custom_id, r.reply is not None) for r in got] == [
        ("good1", True), ("inf", False), ("neg", False), ("absurd", False), ("nan", False), ("digits", False),
        ("deep", False), ("cut", False), ("", False), ("good2", True)]
    assert "not finite (Infinity)" in got[1].error and "not finite (NaN)" in got[4].error
    assert "absurd" in got[3].error and "not JSON" in got[7].error
    assert got[-1].reply.prompt_tokens == 5
