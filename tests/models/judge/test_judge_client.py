"""The OpenAI-compatible chat client against a real loopback server with scripted faults."""

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from email.utils import formatdate
from pathlib import Path

import pytest

from rmbench.errors import ConfigError
from rmbench.models.judge.client import ChatClient, ChatReply, ChatRequest, JudgeServerError
from rmbench.models.judge.wire import retry_after as _retry_after
from tests.support.judge_server import ScriptedServer

KEY = "sk-test-PLANTED-123"
REPO = Path(__file__).resolve().parents[3]


def ask(text: str, **kw) -> ChatRequest:
    return ChatRequest(messages=(("system", "You judge."), ("user", text)), **kw)


def echo(body: dict) -> str:
    return "re: " + body["messages"][-1]["content"]


def client(server: ScriptedServer, **kw) -> ChatClient:
    kw = {"backoff_base": 0.01, "timeout": 5.0, "progress": False, **kw}
    return ChatClient(server.base_url, "judge-model", **kw)


def test_replies_in_order_with_usage_and_the_request_body():
    with ScriptedServer(reply=echo) as server:
        c = client(server)
        seen = []
        replies = c.complete([ask(f"q{i}", seed=7, max_tokens=5) for i in range(30)],
                             on_reply=lambda i, r: seen.append(i))
    assert [r.text for r in replies] == [f"re: q{i}" for i in range(30)] and sorted(seen) == list(range(30))
    r = replies[0]
    assert (r.finish_reason, r.prompt_tokens, r.completion_tokens, r.retries, r.reasoning, r.top_logprobs) == \
        ("stop", 3, 2, 0, None, None)
    body = server.chat_requests()[0]
    assert body["model"] == "judge-model" and body["seed"] == 7 and body["max_tokens"] == 5
    assert body["messages"][0] == {"role": "system", "content": "You judge."} and "logprobs" not in body
    assert c.stats.calls == 30 and c.stats.completion_tokens == 60 and c.stats.failures == 0
    assert c.complete([]) == []


def test_concurrency_limit_is_respected():
    with ScriptedServer(reply="A", latency=0.05) as server:
        client(server, concurrency=4).complete([ask(str(i)) for i in range(24)])
    assert 3 <= server.max_in_flight <= 4


def test_429_waits_for_retry_after():
    with ScriptedServer(reply="A") as server:
        server.faults.append(("status", 429, {"Retry-After": "1"}))
        t0 = time.perf_counter()
        [reply] = client(server).complete([ask("x")])
        waited = time.perf_counter() - t0
    assert waited >= 1.0 and reply.retries == 1 and reply.text == "A"


def test_retry_after_as_an_http_date_and_capped():
    assert 30.0 <= _retry_after(formatdate(time.time() + 60, usegmt=True)) <= 60.0  # what is left of a minute
    assert _retry_after("1e9") == 120.0 and _retry_after("soon") is None and _retry_after(None) is None


@pytest.mark.parametrize("faults", [[("status", 500)] * 3, [("malformed",)], [("empty_choices",)], [("drop",)],
                                    [("status", 503), ("drop",), ("malformed",), ("status", 502)]])
def test_transient_faults_are_retried(faults):
    with ScriptedServer(reply="A") as server:
        server.faults += faults
        c = client(server)
        [reply] = c.complete([ask("x")])
    assert reply.text == "A" and reply.retries == len(faults) and c.stats.retries == len(faults)


def test_a_hang_past_the_timeout_is_retried_and_the_progress_line_says_it_gave_up(capsys):
    with ScriptedServer(reply="A") as server:
        server.faults.append(("hang", 3.0))
        c = client(server, timeout=0.3, progress=True)
        first, second = c.complete([ask("y"), ask("x")])
    # given up at the timeout (counted as one), not waited out until the hang's close (a dropped connection)
    assert first.retries + second.retries == 1 and c.stats.timeouts == 1
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "1 retries, 1 timed out (given up, connection closed" in last and "raise timeout" in last


def test_400_is_not_retried():
    with ScriptedServer(reply="A") as server:
        server.faults.append(("status", 400, {}, "max_tokens is too large:\n   4096 > 2048"))
        with pytest.raises(JudgeServerError) as err:
            client(server).complete([ask("x")])
    text = str(err.value)
    assert "\n" not in text and "HTTP 400" in text and "max_tokens is too large: 4096 > 2048" in text
    assert server.base_url in text and "'judge-model'" in text and len(server.chat_requests()) == 1


def test_a_request_that_exhausts_its_retries():
    with ScriptedServer(reply="A") as server:
        server.faults += [("status", 500)] * 3
        c = client(server, max_retries=2, concurrency=1)
        with pytest.raises(JudgeServerError, match=r"failed request 0 after 3 attempts; last: HTTP 500: scripted"):
            c.complete([ask("x"), ask("y")])
    assert c.stats.failures == 1 and c.stats.retries == 2


def test_a_server_that_dies_stops_the_run_and_keeps_finished_calls():
    kept = {}
    with ScriptedServer(reply=echo, die_after=5) as server:
        c = client(server, concurrency=2, max_consecutive_failures=4)
        with pytest.raises(JudgeServerError) as err:
            c.complete([ask(f"q{i}") for i in range(40)], on_reply=kept.__setitem__)
    text = str(err.value)
    assert "\n" not in text
    assert "failed 4 times in a row; last: " in text and "5 finished calls were kept" in text, text
    assert len(kept) == 5 and all(r.text == f"re: q{i}" for i, r in kept.items())
    assert c.stats.calls == 5


def test_an_unreachable_server():
    with ScriptedServer() as server:
        url = server.base_url
    c = ChatClient(url, "m", backoff_base=0.01, max_consecutive_failures=3, progress=False)
    with pytest.raises(JudgeServerError, match=r"failed 3 times in a row; last: ConnectError"):
        c.complete([ask("a"), ask("b")])
    with pytest.raises(JudgeServerError, match="is unreachable: ConnectError"):
        c.served_models()


def test_reply_json_round_trip_with_reasoning_and_top_logprobs():
    def reply(body):
        return {"content": "B", "reasoning_content": "A is wrong.", "finish_reason": "length",
                "top_logprobs": [[("B", -0.25), ("A", -1.5), ("C", -1e-9)]]}

    with ScriptedServer(reply=reply) as server:
        [r] = client(server).complete([ask("which?", top_logprobs=3)])
    assert server.chat_requests()[0]["logprobs"] is True and server.chat_requests()[0]["top_logprobs"] == 3
    assert r.text == "B" and r.reasoning == "A is wrong." and r.finish_reason == "length"
    assert r.top_logprobs == ((("B", -0.25), ("A", -1.5), ("C", -1e-9)),)
    assert ChatReply.from_json(json.loads(json.dumps(r.to_json()))) == r
    plain = ChatReply("x", None, None, 0, 0, 0.1, 2, None)
    assert ChatReply.from_json(json.loads(json.dumps(plain.to_json()))) == plain


def test_reasoning_field_and_null_content():
    with ScriptedServer(reply=lambda b: {"content": None, "reasoning": "thinking..."}) as server:
        [r] = client(server).complete([ask("x", top_logprobs=1)])
    assert r.text == "" and r.reasoning == "thinking..." and r.top_logprobs == ()


def test_served_models_and_the_key():
    with ScriptedServer(model_id="qwen-judge", require_key=KEY) as server:
        assert client(server, api_key=KEY).served_models() == ["qwen-judge"]
        [r] = client(server, api_key=KEY).complete([ask("x")])
        assert r.text == "ok" and server.requests[-1]["headers"]["Authorization"] == f"Bearer {KEY}"
        with pytest.raises(JudgeServerError, match="HTTP 401: invalid API key"):
            client(server, api_key="sk-wrong").complete([ask("x")])
        with pytest.raises(JudgeServerError, match="HTTP 401"):
            client(server).complete([ask("x")])  # no key: no header
        assert "Authorization" not in server.requests[-1]["headers"]


def test_the_key_appears_in_no_error_repr_or_progress(capsys, monkeypatch, caplog):
    monkeypatch.setenv("RMBENCH_PROGRESS_EVERY", "0.05")
    caplog.set_level(logging.DEBUG)
    texts = []
    with ScriptedServer(reply="A", latency=0.03) as server:
        c = client(server, api_key=KEY, progress=True, max_consecutive_failures=2)
        texts += [repr(c), str(c), str(vars(c)), json.dumps(c.stats.to_json())]
        c.complete([ask(str(i)) for i in range(8)])
        server.faults.append(("status", 400, {}, f"bad key {KEY} given"))  # a server that echoes it
        with pytest.raises(JudgeServerError) as err:
            c.complete([ask("x"), ask("y")])
        texts.append(str(err.value))
        assert "bad key *** given" in str(err.value)
        url = server.base_url
    down = ChatClient(url, "m", api_key=KEY, backoff_base=0.01, max_consecutive_failures=2)
    for call in (lambda: down.complete([ask("a"), ask("b")]), down.served_models):
        with pytest.raises(JudgeServerError) as err:
            call()
        texts.append(str(err.value))
    captured = capsys.readouterr()
    texts += [captured.out, captured.err, caplog.text, repr(c), json.dumps(c.stats.to_json())]
    assert "judge: done, 8/8 requests (100%)" in captured.err and "tokens/s, 0 retries" in captured.err
    assert not [t for t in texts if KEY in t or "PLANTED" in t]


def test_openai_rewriter_runs_on_the_client(monkeypatch):
    from rmbench.rewrite.shift import openai_rewriter

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with ScriptedServer(reply=lambda b: "  " + b["messages"][0]["content"].upper() + " \n", require_key=KEY) as server:
        rewrite = openai_rewriter(server.base_url, "rw-model", "Rewrite: {text}", max_tokens=64)
        assert rewrite([f"text {i}" for i in range(20)]) == [f"REWRITE: TEXT {i}" for i in range(20)]
        server.faults.append(("status", 404, {}, "model 'rw-model' not found"))
        with pytest.raises(ConfigError, match=r"rewriter server http://127\.0\.0\.1:\d+/v1 \(model 'rw-model'\) "
                                              r"failed request 0 \(not retried\): HTTP 404"):
            rewrite(["x"])
    body = server.chat_requests()[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 64 and body["model"] == "rw-model"


def test_works_inside_a_running_event_loop():
    async def main():
        with ScriptedServer(reply=echo) as server:
            return client(server).complete([ask("a"), ask("b")])

    assert [r.text for r in asyncio.run(main())] == ["re: a", "re: b"]


def test_an_error_in_on_reply_cancels_the_rest_cleanly(caplog):
    def fail(i, reply):
        raise KeyboardInterrupt

    with ScriptedServer(reply="A", latency=0.3) as server:
        with pytest.raises(KeyboardInterrupt):
            client(server, concurrency=2).complete([ask(str(i)) for i in range(10)], on_reply=fail)
        assert len(server.chat_requests()) < 10  # the rest cancelled, never sent
    assert not [t for t in threading.enumerate() if t.name == "rmbench-chat-client"] and "destroyed" not in caplog.text


def test_ctrl_c_in_a_process_stops_at_once_without_warnings():
    code = ("import sys\nfrom rmbench.models.judge.client import ChatClient, ChatRequest\n"
            "c = ChatClient(sys.argv[1], 'm', progress=False)\n"
            "c.complete([ChatRequest((('user', str(i)),)) for i in range(50)],"
            " on_reply=lambda i, r: print('got', i, flush=True))\n")
    with ScriptedServer(reply="A", latency=0.2) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        # SIGINT as a terminal sends it, whatever this process inherited (a shell's background job ignores
        # it, and a Python started so never raises KeyboardInterrupt)
        proc = subprocess.Popen([sys.executable, "-X", "dev", "-c", code, server.base_url], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.stdout.readline().startswith("got")  # calls are flowing; now make them never come back
        server.latency = 3600.0
        time.sleep(0.3)
        proc.send_signal(2)
        try:
            _, err = proc.communicate(timeout=120)  # a hang guard: waiting for the calls in flight never ends
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err and "destroyed" not in err and "never awaited" not in err, err


def test_bad_settings():
    with pytest.raises(ConfigError, match="http:// or https://"):
        ChatClient("localhost:8000/v1", "m")
    with pytest.raises(ConfigError, match="concurrency"):
        ChatClient("http://127.0.0.1:1/v1", "m", concurrency=0)
    with pytest.raises(ConfigError, match="cannot carry") as err:
        ChatClient("http://127.0.0.1:1/v1", "m", api_key="sk-x\nInjected: 1")
    assert "sk-x" not in str(err.value)
    with pytest.raises(ConfigError, match="pairs of strings"):
        ChatRequest(messages=(("user",),))
