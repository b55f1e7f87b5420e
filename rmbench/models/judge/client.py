"""An asynchronous client for OpenAI-compatible ``/chat/completions`` servers (vLLM, llama.cpp,
SGLang, OpenAI...), called from plain synchronous code.

:meth:`ChatClient.complete` sends many :class:`ChatRequest` at once (at most ``concurrency`` in
flight) and hands each :class:`ChatReply` to the caller as it finishes, so a caller that stores
finished calls keeps them through a later failure or Ctrl-C. The retry policy is our own:

* ``timeout`` bounds a whole attempt (connect, send, every byte of the reply), not one read: an
  attempt not whole by then is given up, its connection closed
  (:func:`rmbench.models.judge.transfer.exchange`); a reply body over ``max_reply_bytes`` is
  given up as it streams in, never held whole;
* retried, with exponential backoff and full jitter (``uniform(0, min(backoff_max,
  backoff_base * 2**attempt))``): HTTP 408, 429 and 5xx, timeouts, refused and dropped
  connections, a body that is not JSON or over ``max_reply_bytes``, and a 200 that
  :func:`~rmbench.models.judge.wire.parse_reply` cannot use (no ``choices``, a malformed field,
  non-finite usage or logprobs: :class:`~rmbench.models.judge.wire.MalformedReply`); on 429 and
  503 the server's ``Retry-After`` (seconds or an HTTP date, at most :data:`RETRY_AFTER_MAX`)
  replaces the backoff; timeouts and unusable replies are counted (``stats.timeouts``,
  ``stats.malformed``) and shown in the progress line;
* not retried: any other 4xx (400, 401, 403, 404, 422...): :class:`JudgeServerError` at once,
  with the status and the start of the server's message;
* a request that fails ``max_retries + 1`` times raises :class:`JudgeServerError`, and so does
  the whole call after ``max_consecutive_failures`` failed attempts in a row across requests
  (the server is down); the requests still in flight are cancelled.

The API key is a secret: it is sent in the ``Authorization`` header and appears in no message,
repr, progress line or statistic (any text a server echoes back has it masked).
"""

from __future__ import annotations

import asyncio
import json
import queue
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from rmbench.core.progress import progress_every, progress_line
from rmbench.errors import ConfigError
from rmbench.models.judge.transfer import DONE, DeadlineExceeded, LoopThread, TooLarge, exchange, request_within
from rmbench.models.judge.wire import (
    MAX_REPLY_BYTES,
    RETRY_AFTER_MAX,
    ChatReply,
    ChatRequest,
    ClientStats,
    Failed,
    JudgeServerError,
    MalformedReply,
    Secret,
    body_message,
    one_line,
    parse_reply,
    retry_after,
    server_message,
)

Follow = Callable[[int, ChatRequest, ChatReply], "ChatRequest | None"]
"""``follow(i, request, reply)``: the follow-up to send after ``reply`` to request ``i``, or None."""


@dataclass
class _Run:
    """The state of one ``complete`` call, shared by its workers (one event loop, no locks)."""

    total: int
    keeping: bool
    start: float
    done: int = 0
    consecutive: int = 0
    retries: int = 0
    timeouts: int = 0  # attempts given up after ``timeout`` s (the connection closed; a server may go on generating)
    malformed: int = 0  # replies that could not be used (MalformedReply, an oversized one included)
    tokens: int = 0
    error: JudgeServerError | None = None  # the first one raised


class ChatClient:
    """Sends chat completions to one model of an OpenAI-compatible server, concurrently, with
    retries (see the module docstring). ``stats`` accumulates over calls."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, *, concurrency: int = 16,
                 timeout: float = 120.0, max_retries: int = 6, max_consecutive_failures: int = 8,
                 backoff_base: float = 0.5, backoff_max: float = 30.0, progress: bool = True,
                 description: str = "judge", max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        """``base_url`` ends before ``/chat/completions`` (``http://127.0.0.1:8000/v1``);
        ``timeout``: seconds for a whole attempt; ``max_reply_bytes``: the largest reply body."""
        self.base_url, self.model, self.description = str(base_url).rstrip("/"), str(model), description
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{description} server {self.base_url!r}: expected an http:// or https:// URL")
        if (concurrency < 1 or max_retries < 0 or max_consecutive_failures < 1 or not 0 < timeout < float("inf")
                or backoff_base < 0):
            raise ConfigError(f"{description} client: concurrency and max_consecutive_failures must be >= 1, "
                              "max_retries and backoff_base >= 0, timeout > 0 (finite)")
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
            raise ConfigError(f"{description} client: max_reply_bytes must be a positive integer, got "
                              f"{max_reply_bytes!r}")
        self.max_reply_bytes = max_reply_bytes
        self._key = Secret.of(api_key, self.base_url)
        self.concurrency, self.timeout, self.max_retries = int(concurrency), float(timeout), int(max_retries)
        self.max_consecutive_failures = int(max_consecutive_failures)
        self.backoff_base, self.backoff_max, self.progress = float(backoff_base), float(backoff_max), progress
        self.stats = ClientStats()
        self._rng = random.Random()
        self._ssl = httpx.create_ssl_context()  # httpx's default check, made once (about 20 ms each)

    def __repr__(self) -> str:
        return (f"ChatClient(base_url={self.base_url!r}, model={self.model!r}, concurrency={self.concurrency}, "
                f"api_key={'set' if self._key else 'none'})")

    def _headers(self) -> dict[str, str]:
        """The request headers: JSON, and the key when there is one."""
        headers = {"Accept": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key.value}"
        return headers

    def _scrub(self, text: str) -> str:
        """``text`` with the API key masked (a server may echo it)."""
        return Secret.scrub(self._key, text)

    def _error(self, detail: str, run: _Run | None = None) -> JudgeServerError:
        """The one-line error naming the server and the model, and what was kept of ``run`` (the
        run's first error is kept as ``run.error``)."""
        kept = ""
        if run is not None:
            kept = f"; {run.done} finished calls were kept" if run.keeping else f"; {run.done} calls had finished"
        text = f"the {self.description} server {self.base_url} (model {self.model!r}) {detail}{kept}"
        error = JudgeServerError(self._scrub(one_line(text, 2000)))
        if run is not None and run.error is None:
            run.error = error
        return error

    def served_models(self) -> list[str]:
        """The model ids of ``GET {base_url}/models``; :class:`JudgeServerError` when unreachable."""
        return [str(m["id"]) for m in self.model_entries()]

    def model_entries(self) -> list[dict]:
        """The entries of ``GET {base_url}/models`` (each with an ``id``; vLLM adds ``root``, the
        weights it serves); :class:`JudgeServerError` when unreachable or malformed."""
        try:
            resp = request_within("GET", f"{self.base_url}/models", timeout=min(self.timeout, 30.0),
                                  max_bytes=max(self.max_reply_bytes, 16_000_000), headers=self._headers(),
                                  verify=self._ssl)
        except (httpx.HTTPError, TooLarge) as exc:
            raise self._error(f"is unreachable: {type(exc).__name__}: {one_line(str(exc))}") from None
        if resp.status_code != 200:
            raise self._error(f"answered GET /models with HTTP {resp.status_code}: {server_message(resp)}") from None
        try:
            entries = resp.json()["data"]
            if not all(isinstance(m, dict) and "id" in m for m in entries):
                raise TypeError("an entry without an id")
            return list(entries)
        except (ValueError, KeyError, TypeError, RecursionError):
            raise self._error("answered GET /models without a list of models") from None

    def complete(self, requests: Sequence[ChatRequest],
                 on_reply: Callable[[int, ChatReply], None] | None = None,
                 follow: Follow | None = None,
                 on_follow: Callable[[int, ChatRequest, ChatReply], None] | None = None) -> list[ChatReply]:
        """The replies to ``requests``, in order; ``on_reply(i, reply)`` runs in this thread as each
        finishes. The requests run on a private event loop in a worker thread (so this works with
        or without an event loop running here); an error or Ctrl-C cancels those in flight.

        ``follow(i, request, reply)``, when given, may return a follow-up request (a judge asked
        again): it runs at once in the same slot, as a client that awaits its follow-up inside the
        request's task does, and its reply goes to ``on_follow(i, follow_up, reply)``; ``follow``
        is asked again about the follow-up's reply. ``follow`` runs in the worker thread: keep it
        pure."""
        requests = list(requests)
        if not all(isinstance(r, ChatRequest) for r in requests):
            raise TypeError("ChatClient.complete takes ChatRequest objects")
        if not requests:
            return []
        every = progress_every() if self.progress and len(requests) > 1 else None
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        start = time.perf_counter()
        keeping = on_reply is not None or on_follow is not None
        runner = LoopThread(lambda: self._complete_async(requests, inbox, every, keeping, follow), inbox)
        try:
            while (item := inbox.get()) is not DONE:
                i, request, reply, first = item
                if first and on_reply is not None:
                    on_reply(i, reply)
                elif not first and on_follow is not None:
                    on_follow(i, request, reply)
            if runner.error is not None:
                raise runner.error
            return runner.value
        except BaseException:
            runner.cancel()
            raise
        finally:
            runner.thread.join(30.0)  # bounded: a stuck name lookup must not hang the caller
            self.stats.seconds += time.perf_counter() - start

    async def _complete_async(self, requests: list[ChatRequest], inbox: queue.SimpleQueue, every: float | None,
                              keeping: bool, follow: Follow | None = None) -> list[ChatReply]:
        """All requests through ``concurrency`` workers sharing one connection pool; each reply
        goes to ``inbox`` as it finishes. The first error cancels the rest."""
        run = _Run(total=len(requests), keeping=keeping, start=time.perf_counter())
        replies: list[Any] = [None] * len(requests)
        todo = iter(range(len(requests)))
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)

        async def worker(http: httpx.AsyncClient) -> None:
            """Take the next request until none is left."""
            for i in todo:  # shared: each index goes to one worker
                replies[i] = reply = await self._call(http, i, requests[i], run)
                inbox.put((i, requests[i], reply, True))
                request = requests[i]
                while follow is not None and (more := follow(i, request, reply)) is not None:
                    run.total += 1  # a follow-up in the same slot: no second round
                    request, reply = more, await self._call(http, i, more, run)
                    inbox.put((i, request, reply, False))

        async with httpx.AsyncClient(headers=self._headers(), timeout=self.timeout, limits=limits,
                                     verify=self._ssl) as http:
            workers = [asyncio.create_task(worker(http)) for _ in range(min(self.concurrency, len(requests)))]
            extra = [asyncio.create_task(self._report_every(run, every))] if every is not None else []
            try:
                await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
                errors = [e for t in workers if t.done() and not t.cancelled() and (e := t.exception())]
                if errors:  # the first failure in time (others may have followed in the same loop turn)
                    raise run.error or errors[0]
            finally:
                for task in workers + extra:
                    task.cancel()
                await asyncio.gather(*workers, *extra, return_exceptions=True)
                if every is not None:
                    self._report(run, finished=run.done == run.total)
        return replies

    async def _call(self, http: httpx.AsyncClient, i: int, request: ChatRequest, run: _Run) -> ChatReply:
        """Request ``i`` with its retries; counts it in ``stats`` and ``run``."""
        body, last = request.body(self.model), ""
        for attempt in range(self.max_retries + 1):
            start = time.perf_counter()
            try:
                reply = parse_reply(await self._attempt(http, body), time.perf_counter() - start, attempt)
            except Failed as exc:
                last = self._scrub(exc.reason)
                run.consecutive += 1
                run.timeouts += exc.timed_out
                self.stats.timeouts += exc.timed_out
                malformed = isinstance(exc, MalformedReply)
                run.malformed += malformed
                self.stats.malformed += malformed
                if not exc.retry or run.consecutive >= self.max_consecutive_failures:
                    self.stats.failures += 1
                    detail = (f"failed request {i} (not retried): {last}" if not exc.retry
                              else f"failed {run.consecutive} times in a row; last: {last}")
                    raise self._error(detail, run) from None
                if attempt < self.max_retries:
                    run.retries += 1
                    self.stats.retries += 1
                    await asyncio.sleep(self._wait(attempt, exc.wait))
                continue
            run.consecutive, run.done, run.tokens = 0, run.done + 1, run.tokens + reply.completion_tokens
            stats = self.stats
            stats.calls, stats.prompt_tokens = stats.calls + 1, stats.prompt_tokens + reply.prompt_tokens
            stats.completion_tokens += reply.completion_tokens
            return reply
        self.stats.failures += 1
        raise self._error(f"failed request {i} after {self.max_retries + 1} attempts; last: {last}", run) from None

    async def _attempt(self, http: httpx.AsyncClient, body: dict) -> Any:
        """One POST within ``timeout`` in all: the JSON of a 2xx, else :class:`Failed` (retry or
        not; :class:`MalformedReply` for a body that is over ``max_reply_bytes`` or not JSON)."""
        try:
            done = await exchange(http, "POST", f"{self.base_url}/chat/completions", timeout=self.timeout,
                                  max_bytes=self.max_reply_bytes, json=body)
        except httpx.TimeoutException as exc:  # DeadlineExceeded, or one of httpx's own
            why = str(exc) if isinstance(exc, DeadlineExceeded) else \
                f"no answer within {self.timeout:g} s (gave up: connection closed)"
            raise Failed(f"{type(exc).__name__}: {why}", timed_out=True) from None
        except TooLarge as exc:
            raise MalformedReply(f"{exc} (max_reply_bytes={self.max_reply_bytes})") from None
        except httpx.RequestError as exc:  # refused, dropped, reset; a bad URL is not worth retrying
            retry = not isinstance(exc, (httpx.UnsupportedProtocol, httpx.LocalProtocolError))
            raise Failed(f"{type(exc).__name__}: {one_line(str(exc)) or 'connection failed'}", retry) from None
        code = done.status_code
        if not 200 <= code < 300:
            wait = retry_after(done.headers.get("retry-after")) if code in (429, 503) else None
            raise Failed(f"HTTP {code}: {body_message(done.content)}", code in (408, 429) or code >= 500, wait)
        try:
            return json.loads(done.content)
        except (ValueError, RecursionError) as exc:
            raise MalformedReply(f"HTTP {code} with a body that is not JSON ({one_line(str(exc), 80)})") from None

    def _wait(self, attempt: int, hint: float | None) -> float:
        """Seconds before the next attempt: the server's hint, else full-jitter backoff."""
        if hint is not None:
            return hint
        return self._rng.uniform(0.0, min(self.backoff_max, self.backoff_base * 2 ** attempt))

    async def _report_every(self, run: _Run, every: float) -> None:
        """A progress line every ``every`` seconds until cancelled."""
        while True:
            await asyncio.sleep(every)
            self._report(run, finished=False)

    def _report(self, run: _Run, finished: bool) -> None:
        """One plain progress line on stderr: requests/s and ETA, tokens/s (completion), retries,
        and the attempts given up after ``timeout`` (their connections closed), when any."""
        elapsed = time.perf_counter() - run.start
        line = progress_line(self.description, run.done, run.total, "requests", elapsed, finished=finished)
        rate = run.tokens / elapsed if elapsed > 0 else 0.0
        gave_up = (f", {run.timeouts} timed out (given up, connection closed: a server that goes on generating "
                   f"for them is slower than its timeout; raise timeout or lower max_tokens)") if run.timeouts else ""
        bad = f", {run.malformed} unusable replies" if run.malformed else ""
        print(self._scrub(f"{line}, {rate:,.0f} tokens/s, {run.retries} retries{gave_up}{bad}"), file=sys.stderr,
              flush=True)


__all__ = ["ChatClient", "ChatReply", "ChatRequest", "ClientStats", "JudgeServerError", "MalformedReply",
           "RETRY_AFTER_MAX", "request_within"]
