"""The batch providers (the design is in :mod:`rmbench.models.judge.batch`): OpenAI's Files +
Batches API (and any server that speaks it), Anthropic's Message Batches, and vLLM's offline
runner (``python -m vllm.entrypoints.openai.run_batch``), with the readers of their result lines.
"""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from rmbench.errors import ConfigError
from rmbench.models.judge.batch_core import (
    Answered,
    BatchExecutor,
    BatchOutcome,
    BatchStatus,
    LineResult,
    OnReply,
    read_lines,
)
from rmbench.models.judge.batch_remote import RemoteBatch
from rmbench.models.judge.client import ChatClient
from rmbench.models.judge.wire import ChatReply, ChatRequest, Failed, MalformedReply, one_line, parse_reply, token_count

CHAT_URL = "/v1/chat/completions"
ANTHROPIC_VERSION = "2023-06-01"
OPENAI_ENDED = ("completed", "failed", "expired", "cancelled")


def _obj(value: Any) -> dict:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _number(value: Any) -> float | None:
    """``value`` if it is a number (epoch seconds), else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _iso_time(value: Any) -> float | None:
    """An RFC 3339 time (``2024-09-24T18:37:24.100435Z``) as epoch seconds; None if unreadable."""
    try:
        when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.timestamp() if when.tzinfo is not None else None


def openai_input(requests: Sequence[ChatRequest], keys: Sequence[str], model: str) -> bytes:
    """The batch input JSONL: per request the exact body the synchronous client would POST."""
    return "".join(json.dumps({"custom_id": k, "method": "POST", "url": CHAT_URL, "body": r.body(model)}) + "\n"
                   for r, k in zip(requests, keys)).encode()


def _error_text(error: Any, response: Any) -> tuple[str | None, str]:
    """(code, message) of a failed OpenAI-format line: its ``error`` (an object, a nested
    ``{"error": ...}`` as vLLM writes, or a string), else the error in the response's body."""
    body = response.get("body") if isinstance(response, dict) else None
    for err in (error, body.get("error") if isinstance(body, dict) else None):
        if isinstance(err, str) and err:
            return None, err
        if isinstance(err, dict):
            inner = err["error"] if isinstance(err.get("error"), dict) else err
            code = inner.get("code")
            return (str(code) if code not in (None, "") else None), str(inner.get("message") or inner)
    status = response.get("status_code") if isinstance(response, dict) else None
    return None, f"HTTP {status} without a message" if status else "no response"


def openai_line(item: Any) -> LineResult:
    """One line of an OpenAI-format output or error file (vLLM's run_batch writes the same)."""
    if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
        return LineResult("", None, "a malformed result line")
    custom_id, response, error = item["custom_id"], item.get("response"), item.get("error")
    if isinstance(response, dict) and response.get("status_code") == 200 and not error:
        try:
            return LineResult(custom_id, parse_reply(response.get("body"), 0.0, 0))
        except Failed as exc:
            return LineResult(custom_id, None, exc.reason)
    code, message = _error_text(error, response)
    return LineResult(custom_id, None, one_line(f"{code}: {message}" if code else message), code == "batch_expired")


class OpenAIBatch(RemoteBatch):
    """OpenAI's Batches API: the input uploaded as a file, the batch created from it, polled, and
    its output and error files read. Requests it leaves unanswered go through :class:`ChatClient`."""

    kind, price_factor, can_retry_sync = "openai", 0.5, True

    def _headers(self) -> dict[str, str]:
        return {"Accept": "application/json"}

    def _auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key.value}"} if self._key is not None else {}

    def _sync_client(self) -> ChatClient | None:
        key = self._key.value if self._key is not None else None
        limit = {"max_reply_bytes": self.max_reply_bytes} if self.max_reply_bytes is not None else {}
        return ChatClient(self.base_url, self.model, key, timeout=self.timeout, progress=self.progress,
                          description=self.description, **limit)

    def _submit(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], state: dict,
                save: Callable[[], None]) -> None:
        rerun = bool(state.get("input_file_id"))  # an earlier run uploaded: it may have created the batch
        if not rerun:  # an upload whose answer was lost is made again: a file is not billed, a batch is
            name = f"rmbench-batch-{str(state.get('requests_sha256', ''))[:16]}.jsonl"
            files = {"file": (name, openai_input(requests, keys, self.model), "application/jsonl")}
            resp = self._call(http, "POST", "/files", "upload the batch input", data={"purpose": "batch"},
                              files=files)
            state["input_file_id"] = self._id(resp, "the upload")
            save()
        body = {"input_file_id": state["input_file_id"], "endpoint": CHAT_URL, "completion_window": "24h"}
        self._create(http, keys, state, save, lambda: self._call(http, "POST", "/batches", "create the batch",
                                                                 retry=False, json=body), look=rerun)

    def _find(self, http: httpx.Client, keys: list[str], state: dict) -> str | None:
        """The batch made from the state's ``input_file_id`` (``GET /batches``, newest first, back
        to a day before the first try): one still running or completed before one that failed."""
        file_id = state.get("input_file_id")
        since = float(state.get("creating") or state.get("created") or 0) - 86400
        found = [b for b in self._pages(http, "/batches?limit=100", "list the batches", "after", since,
                                        lambda b: _number(b.get("created_at")))
                 if b.get("input_file_id") == file_id and isinstance(b.get("id"), str)]
        found.sort(key=lambda b: (b.get("status") in ("failed", "cancelling", "cancelled"),
                                  _number(b.get("created_at")) or 0.0))
        return found[0]["id"] if found else None

    def _status(self, http: httpx.Client, batch_id: str) -> BatchStatus:
        data = self._json(self._call(http, "GET", f"/batches/{batch_id}", f"poll batch {batch_id}", missing_ok=True),
                          "a poll")
        counts = _obj(data.get("request_counts"))
        state = str(data.get("status"))
        errors = _obj(data.get("errors")).get("data")
        error = None
        if state in ("failed", "cancelled"):
            first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
            error = one_line(f"{first.get('code') or state}: {first.get('message') or 'the batch ' + state}")
        return BatchStatus(state, int(counts.get("total") or 0), int(counts.get("completed") or 0),
                           int(counts.get("failed") or 0), state in OPENAI_ENDED, data, error)

    def _results(self, http: httpx.Client, status: BatchStatus) -> Iterator[LineResult]:
        for name in ("output_file_id", "error_file_id"):
            file_id = status.data.get(name)
            if file_id:
                resp = self._call(http, "GET", f"/files/{file_id}/content", f"read the batch's {name[:-8]} file")
                yield from read_lines(resp.content.decode("utf-8", "replace"), openai_line)


def _anthropic_content(request: ChatRequest, i: int) -> str | list[dict[str, Any]]:
    """Message ``i``'s content for Anthropic: its text, or (when it carries images) a text block
    then one base64 image block per image, in the order OpenAI's content parts give them."""
    text, images = request.messages[i][1], request.message_images(i)
    if not images:
        return text
    return [{"type": "text", "text": text},
            *({"type": "image", "source": {"type": "base64", "media_type": image.mime,
                                           "data": image.data_url().partition(",")[2]}} for image in images)]


def anthropic_params(request: ChatRequest, model: str) -> dict:
    """The ``params`` of one Message Batches request: the system messages' text apart."""
    if request.top_logprobs is not None:
        raise ConfigError("an Anthropic batch cannot give logprobs (top_logprobs)")
    roles = {role for role, _ in request.messages} - {"system", "user", "assistant"}
    if roles:
        raise ConfigError(f"an Anthropic batch takes system, user and assistant messages, not {sorted(roles)}")
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens,
                              "messages": [{"role": r, "content": _anthropic_content(request, i)}
                                           for i, (r, _) in enumerate(request.messages) if r != "system"]}
    if request.temperature is not None:  # None: not sent (the provider's default)
        params["temperature"] = request.temperature
    if any(request.message_images(i) for i, (r, _) in enumerate(request.messages) if r == "system"):
        raise ConfigError("an Anthropic batch takes images in user messages, not in a system message")
    system = "\n\n".join(c for r, c in request.messages if r == "system")
    if system:
        params["system"] = system
    top_p = getattr(request, "top_p", None)  # where ChatRequest has one
    if top_p is not None:
        params["top_p"] = top_p
    return params


def anthropic_line(item: Any) -> LineResult:
    """One line of a Message Batch's results: text blocks joined as the text, thinking blocks as
    the reasoning; a ``max_tokens`` stop is finish_reason ``length``."""
    if not isinstance(item, dict) or not isinstance(item.get("custom_id"), str):
        return LineResult("", None, "a malformed result line")
    result = _obj(item.get("result"))
    kind = result.get("type")
    message = result.get("message")
    if kind != "succeeded" or not isinstance(message, dict):
        err = _obj(result.get("error"))
        err = _obj(err.get("error")) or err
        text = f"{err.get('type') or kind}: {err.get('message') or kind}" if err else str(kind)
        return LineResult(item["custom_id"], None, one_line(text), kind == "expired")
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    thinking = [str(b.get("thinking") or "") for b in blocks if b.get("type") == "thinking"]
    usage = _obj(message.get("usage"))
    try:
        tokens = token_count(usage.get("input_tokens"), "input_tokens"), token_count(usage.get("output_tokens"),
                                                                                      "output_tokens")
    except MalformedReply as exc:
        return LineResult(item["custom_id"], None, one_line(str(exc)))
    reply = ChatReply(text="".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text"),
                      reasoning="".join(thinking) if thinking else None,
                      finish_reason="length" if message.get("stop_reason") == "max_tokens" else "stop",
                      prompt_tokens=tokens[0], completion_tokens=tokens[1], latency_s=0.0, retries=0,
                      top_logprobs=None)
    return LineResult(item["custom_id"], reply)


class AnthropicBatch(RemoteBatch):
    """Anthropic's Message Batches: one POST with every request, polled until ``ended``, then its
    ``results_url`` read. Requests it leaves unanswered are reported, not retried (rmbench has no
    synchronous Anthropic client)."""

    kind, price_factor = "anthropic", 0.5

    def _headers(self) -> dict[str, str]:
        return {"Accept": "application/json", "anthropic-version": ANTHROPIC_VERSION}

    def _auth(self) -> dict[str, str]:
        return {"x-api-key": self._key.value} if self._key is not None else {}

    def _submit(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], state: dict,
                save: Callable[[], None]) -> None:
        body = {"requests": [{"custom_id": k, "params": anthropic_params(r, self.model)}
                             for r, k in zip(requests, keys)]}
        self._create(http, keys, state, save, lambda: self._call(http, "POST", "/messages/batches",
                                                                 "create the batch", retry=False, json=body))

    def _find(self, http: httpx.Client, keys: list[str], state: dict) -> str | None:
        """The batch an earlier try created: Anthropic's listing (newest first) shows no custom
        ids, so a candidate is a batch created since five minutes before the first try with as
        many requests; one that has ended is confirmed by its results' custom ids. Two candidates
        still running: a one-line error (which one is this run's cannot be told yet)."""
        since = float(state.get("creating") or state.get("created") or 0) - 300
        candidates = []
        for b in self._pages(http, "/messages/batches?limit=100", "list the message batches", "after_id", since,
                             lambda b: _iso_time(b.get("created_at"))):
            counts = _obj(b.get("request_counts"))
            total = sum(int(v) for v in counts.values() if isinstance(v, int))
            if isinstance(b.get("id"), str) and total == len(keys) and (_iso_time(b.get("created_at")) or 0) >= since:
                candidates.append(b)
        wanted, running = set(keys), []
        for b in candidates:
            if b.get("processing_status") != "ended" or not b.get("results_url"):
                running.append(b["id"])
                continue
            resp = self._call(http, "GET", str(b["results_url"]), f"read the results of batch {b['id']}")
            if {line.custom_id for line in read_lines(resp.content.decode("utf-8", "replace"),
                                                      anthropic_line)} == wanted:
                return str(b["id"])
        if len(running) > 1:
            raise self._error(f"cannot tell which of the running batches {', '.join(running)} an earlier try of "
                              f"this run created (its answer was lost); once they have ended, run again (state in "
                              f"{self._path})")
        return running[0] if running else None

    def _status(self, http: httpx.Client, batch_id: str) -> BatchStatus:
        data = self._json(self._call(http, "GET", f"/messages/batches/{batch_id}", f"poll batch {batch_id}",
                                     missing_ok=True), "a poll")
        counts = _obj(data.get("request_counts"))
        n = {k: int(counts.get(k) or 0) for k in ("processing", "succeeded", "errored", "canceled", "expired")}
        state = str(data.get("processing_status"))
        return BatchStatus(state, sum(n.values()), n["succeeded"], n["errored"] + n["canceled"] + n["expired"],
                           state == "ended", data)

    def _results(self, http: httpx.Client, status: BatchStatus) -> Iterator[LineResult]:
        url = status.data.get("results_url")
        if not isinstance(url, str) or not url:
            raise self._error("ended a batch without a results_url")
        resp = self._call(http, "GET", url, "read the results")
        yield from read_lines(resp.content.decode("utf-8", "replace"), anthropic_line)


class VLLMBatch(BatchExecutor):
    """vLLM's offline batch runner in a subprocess: the OpenAI-format input written to a temporary
    folder, ``run_batch`` loads ``model`` and writes the output file, read as OpenAI's. Nothing to
    re-attach to (the run ends with the process); failed lines are reported, not retried."""

    kind, price_factor, where = "vllm", 1.0, "vllm run_batch"

    def __init__(self, model: str, *, state_dir: Path | str | None = None, served_name: str | None = None,
                 python: str | None = None, extra_args: Sequence[str] = (), progress: bool = True,
                 description: str | None = None) -> None:
        super().__init__(model, progress=progress, retry_sync=False, description=description or
                         f"judge {served_name or model}")
        self.served_name, self.python = served_name or model, python or sys.executable
        self.extra_args, self.state_dir = [str(a) for a in extra_args], state_dir

    def command(self, input_path: Path, output_path: Path) -> list[str]:
        """The run_batch command line."""
        served = ["--served-model-name", self.served_name] if self.served_name != self.model else []
        return [self.python, "-m", "vllm.entrypoints.openai.run_batch", "-i", str(input_path), "-o",
                str(output_path), "--model", self.model, *served, *self.extra_args]

    def complete(self, requests: Sequence[ChatRequest], keys: Sequence[str], on_reply: OnReply,
                 answered: Answered | None = None) -> BatchOutcome:
        requests, keys = self._check(requests, keys)
        outcome, start = BatchOutcome(submitted=len(requests)), time.perf_counter()
        if not requests:
            return outcome
        if self.state_dir is not None:
            Path(self.state_dir).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="rmbench-vllm-batch-", dir=self.state_dir) as tmp:
            inp, out = Path(tmp) / "input.jsonl", Path(tmp) / "output.jsonl"
            inp.write_bytes(openai_input(requests, keys, self.served_name))
            self._say(f"{self.description}: running vLLM run_batch on {len(requests)} requests ({self.model})")
            self._run(self.command(inp, out))
            text = out.read_text() if out.exists() else ""
        failures = self._consume(read_lines(text, openai_line), keys, on_reply, outcome, "completed")
        outcome.seconds = time.perf_counter() - start
        self._finish(requests, failures, on_reply, outcome)
        return outcome

    def _run(self, cmd: list[str]) -> None:
        """Run ``cmd`` in its own session, its output passed through as progress; its whole process
        group ends with it on an error or Ctrl-C here. A non-zero exit: one line, its last error."""
        tail = collections.deque[str](maxlen=200)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", bufsize=1, start_new_session=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.strip():
                    tail.append(line.rstrip())
                    if self.progress:
                        print(f"[vllm] {line.rstrip()}", file=sys.stderr, flush=True)
            code = proc.wait()
        finally:
            if proc.poll() is None:
                _stop_group(proc)
        if code != 0:
            raise self._error(f"failed: run_batch exited with status {code}: {_last_error(tail)}")


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group of ``proc`` (its session), then SIGKILL after 15 s."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _last_error(lines: Iterable[str]) -> str:
    """The last line that names an error or exception, else the last line."""
    lines = list(lines)
    named = [ln for ln in lines if re.search(r"\b\w*(Error|Exception)\b", ln)]
    return one_line((named or lines or ["(no output)"])[-1])
