"""The batch executors (rmbench/models/judge/batch.py) against a real loopback batch server
(tests/support/batch_server.py): the OpenAI Files+Batches path gives the replies the synchronous client
gets, failed and expired lines are retried synchronously (or reported after every reply is kept),
an interrupted run re-attaches to its batch, and the Anthropic Message Batches path maps its
messages; the API key stays out of the state file and of stderr."""

import hashlib
import json
import time

import httpx
import pytest

from rmbench.errors import ConfigError
from rmbench.models.judge.batch import BatchExecutor, make_batch_executor, openai_input
from rmbench.models.judge.client import ChatClient, ChatRequest, JudgeServerError
from tests.support.batch_server import BatchServer
from tests.support.judge_server import ScriptedServer

KEY = "sk-test-PLANTED-batch-456"
MODEL = "judge-model"


def reply(body: dict) -> dict | str:
    """A reply that depends on the request: a reasoning model's, a truncated one, a plain one."""
    text = body["messages"][-1]["content"]
    if "think" in text:
        return {"content": "verdict A", "reasoning_content": "let me weigh " + text}
    if "long" in text:
        return {"content": "cut off here", "finish_reason": "length"}
    return "re: " + text


def requests(n: int = 6) -> list[ChatRequest]:
    words = ["plain", "think hard", "long one", "seeded", "logprobs", "last"]
    out = []
    for i in range(n):
        kw = {"seed": 7} if i == 3 else {"top_logprobs": 2} if i == 4 else {}
        out.append(ChatRequest(messages=(("system", "You judge."), ("user", f"q{i} {words[i % len(words)]}")),
                               max_tokens=16, **kw))
    return out


def keys_of(reqs) -> list[str]:
    return [hashlib.sha256(json.dumps(r.body(MODEL), sort_keys=True).encode()).hexdigest() for r in reqs]


def executor(server, tmp_path, kind="openai", **kw) -> BatchExecutor:
    kw = {"api_key": KEY, "poll_interval": 0.02, "timeout": 5.0, "progress": False, **kw}
    return make_batch_executor(kind, base_url=server.base_url, model=MODEL, state_dir=tmp_path / "state", **kw)


def run(ex: BatchExecutor, reqs) -> tuple[dict, object]:
    got: dict = {}

    def keep(i, r):
        assert i not in got, f"request {i} answered twice"
        got[i] = r

    outcome = ex.complete(reqs, keys_of(reqs), keep)
    return got, outcome


def same(a, b) -> bool:
    return (a.text, a.reasoning, a.finish_reason, a.prompt_tokens, a.completion_tokens, a.top_logprobs) == \
        (b.text, b.reasoning, b.finish_reason, b.prompt_tokens, b.completion_tokens, b.top_logprobs)


def test_openai_batch_gives_the_replies_of_the_synchronous_client(tmp_path, capsys):
    reqs = requests()
    with ScriptedServer(reply=reply) as sync_server:
        sync = ChatClient(sync_server.base_url, MODEL, progress=False).complete(reqs)
        sync_bodies = sync_server.chat_requests()
    states = []

    def reply_and_look(body):  # runs while the batch is live: its state file exists
        states.extend(p.read_text() for p in (tmp_path / "state").glob("*.json"))
        return reply(body)

    with BatchServer(reply=reply_and_look, require_key=KEY, in_progress_polls=3) as server:
        ex = executor(server, tmp_path, progress=True)
        assert ex.kind == "openai" and ex.price_factor == 0.5 and KEY not in repr(ex)
        got, outcome = run(ex, reqs)
    assert sorted(got) == list(range(6)) and all(same(got[i], sync[i]) for i in range(6))
    assert got[1].reasoning == "let me weigh q1 think hard" and got[2].finish_reason == "length"
    assert got[4].top_logprobs is not None
    # the input file: one line per request, custom_id = key, the synchronous client's body exactly
    upload = next(r["body"] for r in server.requests if r["path"] == "/v1/files")
    lines = [json.loads(ln) for ln in upload["file"].splitlines()]
    assert upload["purpose"] == "batch" and [ln["custom_id"] for ln in lines] == keys_of(reqs)
    # (the synchronous server saw them in the order they arrived, not the requests' order)
    assert [ln["body"] for ln in lines] == [r.body(MODEL) for r in reqs] and {ln["url"] for ln in lines} == \
        {"/v1/chat/completions"}
    assert sorted(json.dumps(b, sort_keys=True) for b in sync_bodies) == \
        sorted(json.dumps(ln["body"], sort_keys=True) for ln in lines)
    assert server.batches_created == 1 and server.chat_requests() == []
    assert (outcome.submitted, outcome.completed, outcome.failed, outcome.expired, outcome.retried_sync) == \
        (6, 6, 0, 0, 0)
    assert outcome.batch_ids == ["batch_1"] and not outcome.reattached and outcome.seconds > 0
    assert outcome.completion_tokens == sum(r.completion_tokens for r in sync)
    assert outcome.prompt_tokens == sum(r.prompt_tokens for r in sync)
    # the state file lived while the batch ran, without the key, and is gone now
    assert states and all(KEY not in s for s in states)
    state = json.loads(states[-1])
    assert state["batch_id"] == "batch_1" and state["input_file_id"] == "file-1" and state["requests"] == 6
    assert not list((tmp_path / "state").glob("*"))
    err = capsys.readouterr().err
    assert KEY not in err
    path = ex.state_path(keys_of(reqs))
    assert f"judge {MODEL}: submitted batch batch_1 (6 requests); state in {path}" in err
    polls = [ln for ln in err.splitlines() if "batch batch_1 [" in ln]
    assert len(polls) == server.polls == 6 and "[validating]" in polls[0]
    assert any("[in_progress]" in ln and "eta" in ln and "failed" in ln for ln in polls)
    assert "[completed]" in polls[-1] and "6/6 requests" in polls[-1]


@pytest.mark.parametrize("expired_lines", [True, False])
def test_expired_and_failed_lines_are_retried_synchronously(tmp_path, expired_lines):
    reqs = requests()
    with BatchServer(reply=reply, expire=[1], fail=[3], expired_lines=expired_lines) as server:
        got, outcome = run(executor(server, tmp_path), reqs)
        retried = server.chat_requests()
    assert sorted(got) == list(range(6)) and got[1].reasoning == "let me weigh q1 think hard"
    assert got[3].text == "re: q3 seeded"
    # the same bodies, synchronously (concurrently: in any order)
    assert sorted(retried, key=json.dumps) == sorted([reqs[1].body(MODEL), reqs[3].body(MODEL)], key=json.dumps)
    assert (outcome.completed, outcome.failed, outcome.expired, outcome.retried_sync) == (4, 1, 1, 2)
    assert not list((tmp_path / "state").glob("*"))


def test_without_retry_sync_one_line_after_every_reply_is_kept(tmp_path, capsys):
    reqs = requests()
    with BatchServer(reply=reply, fail=[2, 4], require_key=KEY) as server:
        ex = executor(server, tmp_path, retry_sync=False)
        got: dict = {}
        with pytest.raises(JudgeServerError) as info:
            ex.complete(reqs, keys_of(reqs), got.__setitem__)
        assert server.chat_requests() == []
    msg = str(info.value)
    assert sorted(got) == [0, 1, 3, 5] and "\n" not in msg and KEY not in msg
    assert "2 of 6" in msg and "scripted failure of line 2" in msg and "4 replies" in msg and "retry_sync" in msg
    assert not list((tmp_path / "state").glob("*"))  # the results were read: nothing to re-attach to
    assert KEY not in capsys.readouterr().err


def test_a_batch_that_fails_as_a_whole(tmp_path):
    reqs = requests(4)
    with BatchServer(reply=reply, fail_batch=True) as server:
        with pytest.raises(JudgeServerError, match="4 of 4 requests.*scripted: the whole batch failed"):
            run(executor(server, tmp_path, retry_sync=False), reqs)
        got, outcome = run(executor(server, tmp_path), reqs)  # a new batch (the first one ended), then sync
    assert sorted(got) == [0, 1, 2, 3] and got[0].text == "re: q0 plain"
    assert (outcome.completed, outcome.failed, outcome.retried_sync, server.batches_created) == (0, 4, 4, 2)


def test_an_interrupted_run_re_attaches_to_its_batch(tmp_path, capsys):
    reqs = requests()
    with BatchServer(reply=reply, in_progress_polls=4, require_key=KEY) as server:
        first = executor(server, tmp_path)
        polls = []
        status = first._status

        def interrupted(http, batch_id):
            polls.append(batch_id)
            if len(polls) == 3:
                raise KeyboardInterrupt
            return status(http, batch_id)

        first._status = interrupted  # Ctrl-C while waiting
        with pytest.raises(KeyboardInterrupt):
            run(first, reqs)
        path = first.state_path(keys_of(reqs))
        assert path.exists() and KEY not in path.read_text()
        assert json.loads(path.read_text())["batch_id"] == "batch_1"
        # a wait_limit also stops waiting, with the way back in its one line; the batch runs on
        with pytest.raises(JudgeServerError, match=r"still in_progress after 0 s.*re-attach \(state in .*\)"):
            run(executor(server, tmp_path, wait_limit=0), reqs)
        got, outcome = run(executor(server, tmp_path), reqs)  # a new process would do the same
        assert server.batches_created == 1 and server.uploads == 1
    assert sorted(got) == list(range(6)) and outcome.reattached and outcome.batch_ids == ["batch_1"]
    assert not path.exists()
    err = capsys.readouterr().err
    assert err.count("submitted batch") == 1 and err.count("re-attaching to batch batch_1") == 2
    assert KEY not in err


def test_a_state_file_of_a_batch_the_server_forgot_submits_anew(tmp_path):
    reqs = requests(3)
    with BatchServer(reply=reply, in_progress_polls=3) as server:
        with pytest.raises(JudgeServerError, match="still"):
            run(executor(server, tmp_path, wait_limit=0), reqs)
        server.batches.clear()  # the server restarted
        got, outcome = run(executor(server, tmp_path), reqs)
    assert sorted(got) == [0, 1, 2] and server.batches_created == 2 and not outcome.reattached


def test_a_batch_that_could_not_be_created_keeps_its_state_and_the_rerun_looks_first(tmp_path):
    reqs = requests(3)
    with BatchServer(reply=reply, create_faults=[400]) as server:
        with pytest.raises(JudgeServerError, match="could not create the batch: HTTP 400: scripted 400"):
            run(executor(server, tmp_path), reqs)
        [path] = (tmp_path / "state").glob("*.json")
        state = json.loads(path.read_text())
        assert state["input_file_id"] == "file-1" and state["creating"] and "batch_id" not in state
        assert len(state["requests_sha256"]) == 64 and server.listings == 0
        got, _ = run(executor(server, tmp_path), reqs)
        assert sorted(got) == [0, 1, 2] and server.uploads == 1 and server.batches_created == 1
        assert server.listings == 1  # looked the batch up before creating it


def test_a_run_killed_between_upload_and_creation_reuses_its_upload(tmp_path):
    """The state file of a process killed after the upload holds the file id, not a batch id."""
    reqs = requests(3)
    with BatchServer(reply=reply) as server:
        ex = executor(server, tmp_path)
        upload = httpx.post(f"{server.base_url}/files", data={"purpose": "batch"},
                            files={"file": ("in.jsonl", openai_input(reqs, keys_of(reqs), MODEL))}).json()
        path = ex.state_path(keys_of(reqs))
        path.parent.mkdir()
        path.write_text(json.dumps({"kind": "openai", "model": MODEL, "requests": 3, "created": time.time(),
                                    "input_file_id": upload["id"]}))
        got, outcome = run(ex, reqs)
        assert sorted(got) == [0, 1, 2] and server.uploads == 1 and server.batches_created == 1
    assert not path.exists() and not outcome.reattached


def test_a_poll_that_fails_in_passing_is_retried(tmp_path):
    reqs = requests(3)
    with BatchServer(reply=reply, status_faults=[503, 500]) as server:
        got, outcome = run(executor(server, tmp_path), reqs)
    assert sorted(got) == [0, 1, 2] and outcome.completed == 3


def test_a_refused_key_is_one_line_without_the_key(tmp_path):
    with BatchServer(reply=reply, require_key="the-right-key") as server:
        with pytest.raises(JudgeServerError, match="could not upload the batch input: HTTP 401") as info:
            run(executor(server, tmp_path), requests(2))
    assert KEY not in str(info.value) and not list((tmp_path / "state").glob("*"))


def test_anthropic_message_batches(tmp_path, capsys):
    reqs = requests(4)
    with BatchServer(reply=reply, require_key=KEY, in_progress_polls=2) as server:
        ex = executor(server, tmp_path, kind="anthropic", progress=True)
        assert ex.kind == "anthropic" and ex.price_factor == 0.5
        got, outcome = run(ex, reqs[:4])
        sent = next(r for r in server.requests if r["path"] == "/v1/messages/batches")
    assert sent["headers"]["x-api-key"] == KEY and sent["headers"]["anthropic-version"] == "2023-06-01"
    first = sent["body"]["requests"][0]
    assert first["custom_id"] == keys_of(reqs)[0]
    assert first["params"] == {"model": MODEL, "max_tokens": 16, "system": "You judge.", "temperature": 0.0,
                               "messages": [{"role": "user", "content": "q0 plain"}]}
    assert got[0].text == "re: q0 plain" and got[0].finish_reason == "stop" and got[0].reasoning is None
    assert (got[1].text, got[1].reasoning) == ("verdict A", "let me weigh q1 think hard")
    assert (got[2].text, got[2].finish_reason) == ("cut off here", "length")
    assert got[0].prompt_tokens == 4 and got[0].completion_tokens == 3
    assert (outcome.completed, outcome.batch_ids, server.batches_created) == (4, ["msgbatch_1"], 1)
    err = capsys.readouterr().err
    assert "submitted batch msgbatch_1 (4 requests)" in err and "[ended]" in err and KEY not in err
    assert not list((tmp_path / "state").glob("*"))


def test_anthropic_failures_are_reported_after_the_successes(tmp_path):
    reqs = requests(5)[:3] + requests(6)[5:]  # no logprobs: Anthropic has none
    with BatchServer(reply=reply, fail=[0], expire=[2]) as server:
        got: dict = {}
        with pytest.raises(JudgeServerError, match=r"2 of 4 requests unanswered \(1 expired\).*scripted failure"):
            executor(server, tmp_path, kind="anthropic").complete(reqs, keys_of(reqs), got.__setitem__)
        assert server.chat_requests() == []  # no synchronous Anthropic client: nothing retried
    assert sorted(got) == [1, 3]


def test_anthropic_refuses_logprobs(tmp_path):
    with BatchServer(reply=reply) as server, pytest.raises(ConfigError, match="logprobs"):
        run(executor(server, tmp_path, kind="anthropic"), requests(5)[4:])


def test_arguments_are_checked(tmp_path):
    with BatchServer() as server:
        ex = executor(server, tmp_path)
        reqs = requests(2)
        with pytest.raises(ValueError, match="one key per request"):
            ex.complete(reqs, keys_of(reqs)[:1], lambda i, r: None)
        with pytest.raises(ValueError, match="unique"):
            ex.complete(reqs, [keys_of(reqs)[0]] * 2, lambda i, r: None)
        with pytest.raises(ValueError, match="letters, digits"):
            ex.complete(reqs, ["a b", "c"], lambda i, r: None)
        assert ex.complete([], [], lambda i, r: None).submitted == 0 and server.requests == []
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        make_batch_executor("opneai", base_url="http://x/v1", model="m", state_dir=tmp_path)
    with pytest.raises(ConfigError, match="for the vllm batch"):
        make_batch_executor("openai", base_url="http://x/v1", model="m", state_dir=tmp_path, served_name="s")
    vllm = make_batch_executor("vllm", model="/models/smol", served_name="smol", state_dir=tmp_path,
                               extra_args=["--dtype", "float32"])
    assert vllm.kind == "vllm" and vllm.price_factor == 1.0
    cmd = vllm.command(tmp_path / "in.jsonl", tmp_path / "out.jsonl")
    assert cmd[1:] == ["-m", "vllm.entrypoints.openai.run_batch", "-i", str(tmp_path / "in.jsonl"), "-o",
                       str(tmp_path / "out.jsonl"), "--model", "/models/smol", "--served-model-name", "smol",
                       "--dtype", "float32"]
