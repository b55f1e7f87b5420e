"""The provider-independent half of batch execution (the design is in
:mod:`rmbench.models.judge.batch`): the outcome and the per-line result types, the base
:class:`BatchExecutor` (argument checks, handing results to the caller, the synchronous retry of
what failed) and :class:`RemoteBatch`, the submit / state file / poll / read loop shared by the
providers that run a batch on a server (OpenAI, Anthropic).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from rmbench.core.progress import progress_line
from rmbench.errors import ConfigError
from rmbench.files import atomic_write_text
from rmbench.models.judge.client import ChatClient
from rmbench.models.judge.wire import ChatReply, ChatRequest, JudgeServerError, Secret, one_line, server_message

OnReply = Callable[[int, ChatReply], None]
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what both OpenAI and Anthropic accept as a custom_id
HTTP_RETRIES = 5  # tries more of one batch-management call that failed in passing (5xx, 429, a dropped connection)


@dataclass
class BatchOutcome:
    """What one :meth:`BatchExecutor.complete` did. ``completed``: replies read from the batch;
    ``failed``/``expired``: requests the batch did not answer (``retried_sync`` of them were then
    answered by synchronous calls); tokens count both kinds of reply."""

    batch_ids: list[str] = field(default_factory=list)
    submitted: int = 0
    completed: int = 0
    failed: int = 0
    expired: int = 0
    retried_sync: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    reattached: bool = False

    def count(self, reply: ChatReply) -> None:
        """Add a reply's tokens."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens

    def to_json(self) -> dict:
        """The outcome as a dict."""
        return asdict(self)


@dataclass(frozen=True)
class BatchStatus:
    """One poll: the provider's state word, its counts, whether the batch has ended (and if it
    ended as a whole in error, the first error) and the provider's JSON."""

    state: str
    total: int
    completed: int
    failed: int
    finished: bool
    data: dict
    error: str | None = None


@dataclass(frozen=True)
class LineResult:
    """One line of a batch's results: the reply, or why there is none (``expired``: the batch ran
    out of time before the request ran)."""

    custom_id: str
    reply: ChatReply | None
    error: str | None = None
    expired: bool = False


class BatchExecutor(ABC):
    """Gets the replies to many chat requests through a batch API; see the module docstring of
    :mod:`rmbench.models.judge.batch`."""

    kind: str = ""
    price_factor: float = 1.0
    where: str = ""  # where the batch runs, for messages
    can_retry_sync = False  # whether requests the batch left unanswered can be retried synchronously

    def __init__(self, model: str, *, api_key: str | None = None, progress: bool = True, retry_sync: bool = True,
                 description: str | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{self.kind} batch: give the model's name")
        self.model, self.progress, self.retry_sync = model, bool(progress), bool(retry_sync)
        self._key = Secret.of(api_key, f"the {self.kind} batch")
        self.description = description or f"judge {model}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(model={self.model!r}, where={self.where!r}, "
                f"api_key={'set' if self._key else 'none'})")

    @abstractmethod
    def complete(self, requests: Sequence[ChatRequest], keys: Sequence[str], on_reply: OnReply) -> BatchOutcome:
        """Get a reply for every request; ``on_reply(i, reply)`` runs in this thread for each
        reply as it is read (the caller stores it at once). ``keys[i]``: the call-cache key of
        ``requests[i]``, the batch line's ``custom_id``. Requests the batch did not answer are
        retried synchronously where the provider allows (``retry_sync``); otherwise, once every
        reply has gone to ``on_reply``, a one-line :class:`JudgeServerError`."""

    # --- shared by the providers ------------------------------------------------------------
    @staticmethod
    def _check(requests: Sequence[ChatRequest], keys: Sequence[str]) -> tuple[list[ChatRequest], list[str]]:
        """The requests and keys as lists, checked: one key per request, unique, custom_id-shaped."""
        requests, keys = list(requests), [str(k) for k in keys]
        if not all(isinstance(r, ChatRequest) for r in requests):
            raise TypeError("a batch takes ChatRequest objects")
        if len(keys) != len(requests):
            raise ValueError(f"a batch needs one key per request: {len(requests)} requests, {len(keys)} keys")
        if len(set(keys)) != len(keys):
            raise ValueError("a batch's keys must be unique (one request per call-cache key)")
        bad = next((k for k in keys if not CUSTOM_ID.fullmatch(k)), None)
        if bad is not None:
            raise ValueError(f"batch key {bad[:80]!r}: expected 1 to 64 letters, digits, '_' or '-'")
        return requests, keys

    def _scrub(self, text: str) -> str:
        """``text`` with the API key masked (a server may echo it)."""
        return Secret.scrub(self._key, text)

    def _say(self, text: str) -> None:
        """One line on stderr."""
        print(self._scrub(text), file=sys.stderr, flush=True)

    def _error(self, detail: str) -> JudgeServerError:
        """The one-line error naming the batch's provider, place and model (never the key)."""
        text = f"the {self.description} {self.kind} batch ({self.where}, model {self.model!r}) {detail}"
        return JudgeServerError(self._scrub(one_line(text, 2000)))

    def _consume(self, lines: Iterable[LineResult], keys: list[str], on_reply: OnReply, outcome: BatchOutcome,
                 ended: str, ended_error: str | None = None) -> dict[int, tuple[str, bool]]:
        """Hand each reply in ``lines`` to ``on_reply``; what is left: request index -> (error,
        expired). A request with no line at all failed (expired when the batch ended ``expired``)."""
        index = {k: i for i, k in enumerate(keys)}
        done: set[int] = set()
        failures: dict[int, tuple[str, bool]] = {}
        for line in lines:
            i = index.get(line.custom_id)
            if i is None or i in done:
                continue
            if line.reply is not None:
                failures.pop(i, None)
                done.add(i)
                outcome.completed += 1
                outcome.count(line.reply)
                on_reply(i, line.reply)
            elif i not in failures:
                failures[i] = (line.error or "failed", line.expired)
        for i in range(len(keys)):
            if i not in done and i not in failures:
                failures[i] = (ended_error or f"no result (the batch ended {ended})", ended == "expired")
        outcome.expired = sum(expired for _, expired in failures.values())
        outcome.failed = len(failures) - outcome.expired
        return failures

    def _sync_client(self) -> ChatClient | None:
        """The client that answers failed requests synchronously; None: this provider has none."""
        return None

    def _finish(self, requests: list[ChatRequest], failures: dict[int, tuple[str, bool]], on_reply: OnReply,
                outcome: BatchOutcome) -> None:
        """Retry the failed requests synchronously, or raise naming them (every reply is kept by now)."""
        if not failures:
            return
        order = sorted(failures)
        client = self._sync_client() if self.retry_sync else None
        if client is None:
            why = " (retry_sync is off)" if self.can_retry_sync and not self.retry_sync else ""
            raise self._error(f"left {len(order)} of {outcome.submitted} requests unanswered ({outcome.expired} "
                              f"expired){why}; first: {failures[order[0]][0]}; the {outcome.completed} replies "
                              f"that came back were kept")
        self._say(f"{self.description}: {len(order)} batch requests failed or expired ({outcome.expired} expired); "
                  f"retrying them synchronously")

        def keep(j: int, reply: ChatReply) -> None:
            outcome.retried_sync += 1
            outcome.count(reply)
            on_reply(order[j], reply)

        try:
            client.complete([requests[i] for i in order], on_reply=keep)
        except JudgeServerError as exc:  # its count is of the retry's calls: the batch's replies were kept too
            raise JudgeServerError(f"{exc} (of the {len(order)} synchronous retries); with the batch's "
                                   f"{outcome.completed} replies, {outcome.completed + outcome.retried_sync} of "
                                   f"{outcome.submitted} requests were answered and kept") from None


class _Gone(Exception):
    """The server does not know the batch (404 on its status)."""


class RemoteBatch(BatchExecutor):
    """A batch run by a server: submitted once (its id kept in a state file), polled until it
    ends, its results read, then the state file removed. A provider supplies ``_headers``,
    ``_auth``, ``_submit``, ``_status`` and ``_results``."""

    def __init__(self, model: str, *, base_url: str, state_dir: Path | str, api_key: str | None = None,
                 poll_interval: float = 30.0, timeout: float = 120.0, wait_limit: float | None = None,
                 progress: bool = True, retry_sync: bool = True, description: str | None = None) -> None:
        super().__init__(model, api_key=api_key, progress=progress, retry_sync=retry_sync, description=description)
        self.base_url = self.where = str(base_url).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{self.kind} batch server {self.base_url!r}: expected an http:// or https:// URL")
        if not poll_interval > 0 or not timeout > 0 or (wait_limit is not None and not wait_limit >= 0):
            raise ConfigError(f"{self.kind} batch: poll_interval and timeout must be > 0, wait_limit >= 0")
        self.state_dir, self.poll_interval, self.timeout = Path(state_dir), float(poll_interval), float(timeout)
        self.wait_limit = None if wait_limit is None else float(wait_limit)

    # --- what a provider supplies -----------------------------------------------------------
    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The headers of every call, without the key."""

    @abstractmethod
    def _auth(self) -> dict[str, str]:
        """The headers that carry the key (sent to ``base_url``'s host only)."""

    @abstractmethod
    def _submit(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], state: dict,
                save: Callable[[], None]) -> None:
        """Create the batch (continuing from what ``state`` holds); sets ``state["batch_id"]``,
        calling ``save()`` after each step that made something on the server."""

    @abstractmethod
    def _status(self, http: httpx.Client, batch_id: str) -> BatchStatus:
        """One poll; :class:`_Gone` when the server does not know the batch."""

    @abstractmethod
    def _results(self, http: httpx.Client, status: BatchStatus) -> Iterable[LineResult]:
        """The result lines of the ended batch (may be fewer than its requests)."""

    # --- the loop ---------------------------------------------------------------------------
    def state_path(self, keys: Sequence[str]) -> Path:
        """The state file of a batch of ``keys`` (from the kind, model, server host and keys)."""
        ident = json.dumps([self.kind, self.model, urlsplit(self.base_url).netloc, sorted(keys)])
        return self.state_dir / f"batch-{self.kind}-{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"

    def complete(self, requests: Sequence[ChatRequest], keys: Sequence[str], on_reply: OnReply) -> BatchOutcome:
        requests, keys = self._check(requests, keys)
        outcome, start = BatchOutcome(submitted=len(requests)), time.perf_counter()
        if not requests:
            return outcome
        path = self.state_path(keys)
        with httpx.Client(headers=self._headers(), timeout=self.timeout) as http:
            status, state = self._run(http, requests, keys, path, self._load(path), outcome)
            outcome.batch_ids.append(str(state["batch_id"]))
            failures = self._consume(self._results(http, status), keys, on_reply, outcome, status.state, status.error)
        path.unlink(missing_ok=True)  # every reply went to on_reply: nothing left to re-attach to
        try:
            self._finish(requests, failures, on_reply, outcome)
        finally:
            outcome.seconds = time.perf_counter() - start
        return outcome

    def _run(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], path: Path,
             state: dict | None, outcome: BatchOutcome) -> tuple[BatchStatus, dict]:
        """Re-attach to the batch of ``state`` (or submit one), and wait for it to end."""
        if state is not None and state.get("batch_id"):
            outcome.reattached = True
            created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["created"]))
            self._say(f"{self.description}: re-attaching to batch {state['batch_id']} ({len(keys)} requests, "
                      f"submitted {created}); state in {path}")
            try:
                return self._wait(http, state, path), state
            except _Gone:
                self._say(f"{self.description}: the server does not know batch {state['batch_id']}; "
                          f"submitting a new one")
                path.unlink(missing_ok=True)
                outcome.reattached, state = False, None
        state = self._start(http, requests, keys, path, state)
        try:
            return self._wait(http, state, path), state
        except _Gone:
            raise self._error(f"lost batch {state['batch_id']} while it ran (HTTP 404 on its status)") from None

    def _start(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], path: Path,
               state: dict | None) -> dict:
        """Submit the batch (or finish submitting the one ``state`` began), saving its state."""
        state = state if state is not None else {"kind": self.kind, "model": self.model,
                                                 "host": urlsplit(self.base_url).netloc, "requests": len(keys),
                                                 "created": time.time()}
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._submit(http, requests, keys, state, lambda: self._save(path, state))
        except BaseException:
            if not state.get("batch_id"):  # no batch to re-attach to: the next run starts afresh
                path.unlink(missing_ok=True)
            raise
        self._say(f"{self.description}: submitted batch {state['batch_id']} ({len(keys)} requests); state in {path}")
        return state

    def _wait(self, http: httpx.Client, state: dict, path: Path) -> BatchStatus:
        """Poll every ``poll_interval`` s until the batch ends (a progress line each poll)."""
        limit = None if self.wait_limit is None else time.monotonic() + self.wait_limit
        while True:
            status = self._status(http, str(state["batch_id"]))
            if self.progress:
                self._report(status, state)
            if status.finished:
                return status
            if limit is not None and time.monotonic() >= limit:
                raise self._error(f"batch {state['batch_id']} is still {status.state} after {self.wait_limit:g} s; "
                                  f"it goes on running on the server: run again to re-attach (state in {path})")
            time.sleep(self.poll_interval)

    def _report(self, status: BatchStatus, state: dict) -> None:
        """``judge M batch ID [in_progress]: 3/10 requests (30%), ..., eta 0:00:07, 0 failed``."""
        total = status.total or int(state.get("requests") or 0)
        elapsed = max(time.time() - float(state.get("created") or time.time()), 0.0)
        line = progress_line(f"{self.description} batch {state['batch_id']} [{status.state}]", status.completed,
                             total, "requests", elapsed, finished=status.finished)
        self._say(f"{line}, {status.failed} failed")

    @staticmethod
    def _load(path: Path) -> dict | None:
        """The state file's content; None when there is none (or it is unreadable: submit anew)."""
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) and isinstance(state.get("created"), int | float) else None

    @staticmethod
    def _save(path: Path, state: dict) -> None:
        """Write the state file atomically (never half-written)."""
        atomic_write_text(path, json.dumps(state, indent=1) + "\n")

    # --- HTTP -------------------------------------------------------------------------------
    def _call(self, http: httpx.Client, method: str, url: str, what: str, *, missing_ok: bool = False,
              **kw: Any) -> httpx.Response:
        """One call to the server (``url`` relative to ``base_url``, or absolute), retried when it
        failed in passing; a one-line error naming ``what`` when it cannot be done; :class:`_Gone`
        on a 404 when ``missing_ok``. A POST is retried only where it surely did not run."""
        url = url if url.startswith(("http://", "https://")) else self.base_url + url
        if urlsplit(url)[:2] == urlsplit(self.base_url)[:2]:  # the key goes to the configured server only
            kw["headers"] = {**self._auth(), **kw.get("headers", {})}
        last = ""
        for attempt in range(HTTP_RETRIES + 1):
            if attempt:
                time.sleep(min(self.poll_interval, 0.5 * 2 ** (attempt - 1)))
            try:
                resp = http.request(method, url, **kw)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {one_line(str(exc)) or 'connection failed'}"
                if method == "GET" or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    continue
                break
            code = resp.status_code
            if 200 <= code < 300:
                return resp
            if code == 404 and missing_ok:
                raise _Gone
            last = f"HTTP {code}: {server_message(resp)}"
            if not (code in (408, 429, 503) or (method == "GET" and code >= 500)):
                break
        raise self._error(f"could not {what}: {last}")

    def _json(self, resp: httpx.Response, what: str) -> dict:
        """The JSON object of a response; a one-line error when it is none."""
        try:
            data = resp.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise self._error(f"answered {what} with something that is not a JSON object")
        return data

    def _id(self, resp: httpx.Response, what: str) -> str:
        """The ``id`` of a created object."""
        value = self._json(resp, what).get("id")
        if not isinstance(value, str) or not value:
            raise self._error(f"answered {what} without an id")
        return value


def read_jsonl(text: str) -> Iterable[Any]:
    """The JSON values of the non-empty lines of ``text`` (an unreadable line is skipped: its
    request then counts as having no result)."""
    for line in text.splitlines():
        if line.strip():
            try:
                yield json.loads(line)
            except ValueError:
                continue
