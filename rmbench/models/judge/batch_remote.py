"""The loop of a batch run by a server (OpenAI, Anthropic; the design is in
:mod:`rmbench.models.judge.batch`): a lock on the request set's state file, the state written
before anything is paid for, creation that looks the batch up on the server before it creates
one (never a blind retry of a POST whose answer was lost), polling that outlasts an outage, and
the results read line by line.

The order of one :meth:`RemoteBatch.complete`:

1. take the state file's lock (``batch-….lock`` beside it; another run of the same requests
   holds it while its batch runs: wait, then take what it answered from the caller's store);
2. read the state file; without one, write it (the request set's hash, no id yet) before any
   call that costs;
3. the provider's ``_submit``: OpenAI uploads the input (its ``input_file_id`` saved at once);
   then :meth:`RemoteBatch._create` marks the state ``creating`` (saved), and, when an earlier
   try may have created the batch (``creating`` was already set, or the last POST's answer was
   lost), asks the provider's ``_find`` for it on the server first; only when none is found does
   it POST. The id is saved as soon as it is known;
4. poll until the batch ends, read its lines (:func:`~rmbench.models.judge.batch_core.read_lines`),
   hand each reply over, remove the state file, retry the rest synchronously (still holding the
   lock, so a waiting run finds them answered).

Every management call that fails in passing (a dropped connection, 408, 409, 425, 429, 5xx) is
tried again after ``backoff_first`` seconds, doubling up to ``backoff_cap``, never sooner than the
server's ``Retry-After``, with one line per wait on stderr, until it has failed for
``outage_limit`` seconds in a row or ``wait_limit`` is reached.
"""

from __future__ import annotations

import hashlib
import json
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from rmbench.core.progress import progress_line
from rmbench.errors import ConfigError
from rmbench.files import LockWaitExpired, atomic_write_text, waiting_lock
from rmbench.models.judge.batch_core import (
    PASSING,
    Answered,
    Backoff,
    BatchExecutor,
    BatchOutcome,
    BatchStatus,
    FailedInPassing,
    Gone,
    LineResult,
    OnReply,
)
from rmbench.models.judge.transfer import Deadline
from rmbench.models.judge.wire import ChatRequest, one_line, retry_after, server_message

MIN_RATE = 100_000  # bytes/s: an answer's whole-read deadline grows by 1 s per this many bytes received


class RemoteBatch(BatchExecutor):
    """A batch run by a server (see the module docstring). A provider supplies ``_headers``,
    ``_auth``, ``_submit`` (which ends in :meth:`_create`), ``_find``, ``_status`` and ``_results``."""

    def __init__(self, model: str, *, base_url: str, state_dir: Path | str, api_key: str | None = None,
                 poll_interval: float = 30.0, timeout: float = 120.0, wait_limit: float | None = None,
                 outage_limit: float = 1800.0, backoff_first: float = 1.0, backoff_cap: float = 60.0,
                 progress: bool = True, retry_sync: bool = True, description: str | None = None,
                 max_reply_bytes: int | None = None) -> None:
        super().__init__(model, api_key=api_key, progress=progress, retry_sync=retry_sync, description=description)
        self.max_reply_bytes = max_reply_bytes
        """The synchronous retries' reply limit (None: the client's default)."""
        self.base_url = self.where = str(base_url).rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{self.kind} batch server {self.base_url!r}: expected an http:// or https:// URL")
        if not (poll_interval > 0 and timeout > 0 and outage_limit >= 0 and backoff_first > 0
                and backoff_cap >= backoff_first) or (wait_limit is not None and not wait_limit >= 0):
            raise ConfigError(f"{self.kind} batch: poll_interval, timeout and backoff_first must be > 0, "
                              f"backoff_cap >= backoff_first, wait_limit and outage_limit >= 0")
        self.state_dir, self.poll_interval, self.timeout = Path(state_dir), float(poll_interval), float(timeout)
        self.wait_limit = None if wait_limit is None else float(wait_limit)
        self.outage_limit, self.backoff_first, self.backoff_cap = float(outage_limit), float(backoff_first), \
            float(backoff_cap)
        self._deadline: float | None = None
        self._path = Path()

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
        """Create the batch (continuing from what ``state`` holds) through :meth:`_create`, which
        sets ``state["batch_id"]``; ``save()`` after each step that made something on the server."""

    @abstractmethod
    def _find(self, http: httpx.Client, keys: list[str], state: dict) -> str | None:
        """The id of the batch an earlier try created for ``state`` on the server, if any."""

    @abstractmethod
    def _status(self, http: httpx.Client, batch_id: str) -> BatchStatus:
        """One poll; :class:`Gone` when the server does not know the batch."""

    @abstractmethod
    def _results(self, http: httpx.Client, status: BatchStatus) -> Iterable[LineResult]:
        """The result lines of the ended batch (may be fewer than its requests); never raises
        for one bad line (:func:`~rmbench.models.judge.batch_core.read_lines`)."""

    # --- the loop ---------------------------------------------------------------------------
    def state_path(self, keys: Sequence[str]) -> Path:
        """The state file of a batch of ``keys`` (from the kind, model, server host and keys)."""
        ident = json.dumps([self.kind, self.model, urlsplit(self.base_url).netloc, sorted(keys)])
        return self.state_dir / f"batch-{self.kind}-{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"

    def request_set_sha256(self, requests: Sequence[ChatRequest], keys: Sequence[str]) -> str:
        """The sha256 of the request set: every custom_id with the body its line carries."""
        lines = sorted(json.dumps([k, r.body(self.model)], sort_keys=True) for r, k in zip(requests, keys))
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()

    def complete(self, requests: Sequence[ChatRequest], keys: Sequence[str], on_reply: OnReply,
                 answered: Answered | None = None) -> BatchOutcome:
        requests, keys = self._check(requests, keys)
        outcome, start = BatchOutcome(submitted=len(requests)), time.perf_counter()
        if not requests:
            return outcome
        self._deadline = None if self.wait_limit is None else time.monotonic() + self.wait_limit
        path = self._path = self.state_path(keys)
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error(f"cannot create its state folder {self.state_dir}: {exc.strerror or exc}; "
                              f"nothing was submitted") from None
        try:
            with waiting_lock(path.with_suffix(".lock"), wait_limit=self.wait_limit,
                              on_wait=lambda pid: self._say(
                                  f"{self.description}: another run{f' (pid {pid})' if pid else ''} holds the "
                                  f"batch of these {len(keys)} requests (state {path}); waiting for it")):
                state = self._load(path)
                done = answered(keys) if answered is not None and state is None else set()
                if done:
                    return self._rest(requests, keys, done, on_reply, answered, outcome)
                with httpx.Client(headers=self._headers(), timeout=self.timeout) as http:
                    status, state = self._run(http, requests, keys, state, outcome)
                    outcome.batch_ids.append(str(state["batch_id"]))
                    failures = self._consume(self._results(http, status), keys, on_reply, outcome, status.state,
                                             status.error)
                path.unlink(missing_ok=True)  # every reply went to on_reply: nothing left to re-attach to
                try:
                    self._finish(requests, failures, on_reply, outcome)
                finally:
                    outcome.seconds = time.perf_counter() - start
        except LockWaitExpired:
            raise self._error(f"stopped waiting after batch_wait {self.wait_limit:g} s for another run of the same "
                              f"requests, whose batch goes on (state in {path}); run again once it has ended: its "
                              f"replies are then in the call cache") from None
        return outcome

    def _rest(self, requests: list[ChatRequest], keys: list[str], done: set[str], on_reply: OnReply,
              answered: Answered | None, outcome: BatchOutcome) -> BatchOutcome:
        """Complete the requests not in ``done`` (answered by another run while this one waited)."""
        rest = [i for i, k in enumerate(keys) if k not in done]
        self._say(f"{self.description}: another run answered {len(keys) - len(rest)} of these {len(keys)} requests; "
                  f"{len(rest)} left to submit")
        sub = self.complete([requests[i] for i in rest], [keys[i] for i in rest],
                            lambda j, reply: on_reply(rest[j], reply), answered) if rest else BatchOutcome()
        sub.answered_elsewhere += len(keys) - len(rest)
        return sub

    def _run(self, http: httpx.Client, requests: list[ChatRequest], keys: list[str], state: dict | None,
             outcome: BatchOutcome) -> tuple[BatchStatus, dict]:
        """Re-attach to the batch of ``state`` (or submit one), and wait for it to end."""
        path, digest = self._path, self.request_set_sha256(requests, keys)
        if state is not None and state.get("requests_sha256") not in (None, digest):
            self._say(f"{self.description}: the state file {path} is of other requests; starting afresh")
            state = None
        if state is not None and state.get("batch_id"):
            outcome.reattached = True
            created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["created"]))
            self._say(f"{self.description}: re-attaching to batch {state['batch_id']} ({len(keys)} requests, "
                      f"submitted {created}); state in {path}")
            try:
                return self._wait(http, state), state
            except Gone:
                self._say(f"{self.description}: the server does not know batch {state['batch_id']}; "
                          f"submitting a new one")
                outcome.reattached, state = False, None
        if state is None:  # written before anything is paid for: a crash from here on leaves a trace
            state = {"kind": self.kind, "model": self.model, "host": urlsplit(self.base_url).netloc,
                     "requests": len(keys), "requests_sha256": digest, "created": time.time()}
            self._save(state, must=True)
        try:
            self._submit(http, requests, keys, state, lambda: self._save(state, must=not state.get("batch_id")))
        except BaseException:
            if not any(state.get(k) for k in ("input_file_id", "creating", "batch_id")):
                path.unlink(missing_ok=True)  # nothing was made on the server: nothing to find again
            raise
        try:
            return self._wait(http, state), state
        except Gone:
            raise self._error(f"lost batch {state['batch_id']} while it ran (HTTP 404 on its status)") from None

    def _create(self, http: httpx.Client, keys: list[str], state: dict, save: Callable[[], None],
                post: Callable[[], httpx.Response], look: bool = False) -> None:
        """Create the batch with ``post`` (one try), unless the server already has one from an
        earlier try (``_find``; asked when ``look`` or the state is marked ``creating``): then
        re-attach to it. A POST that failed in passing (its answer lost, a 5xx, a 429) may have
        created the batch: the next try looks first."""
        backoff = self._backoff()
        look = look or bool(state.get("creating"))
        while True:
            if look:
                found = self._find(http, keys, state)
                if found:
                    state["batch_id"] = found
                    save()
                    self._say(f"{self.description}: found batch {found} on the server, created by an earlier try "
                              f"whose answer was lost; re-attaching ({len(keys)} requests); state in {self._path}")
                    return
            state["creating"] = state.get("creating") or time.time()
            save()  # must succeed: the mark that a batch may exist
            try:
                resp = post()
            except FailedInPassing as exc:
                self._pause(backoff, exc.wait, "create the batch", exc.detail)
                look = True
                continue
            state["batch_id"] = self._id(resp, "the batch's creation")
            save()
            self._say(f"{self.description}: submitted batch {state['batch_id']} ({len(keys)} requests); "
                      f"state in {self._path}")
            return

    def _wait(self, http: httpx.Client, state: dict) -> BatchStatus:
        """Poll every ``poll_interval`` s until the batch ends (a progress line each poll)."""
        while True:
            status = self._status(http, str(state["batch_id"]))
            if self.progress:
                self._report(status, state)
            if status.finished:
                return status
            if self._deadline is not None and time.monotonic() >= self._deadline:
                raise self._error(f"batch {state['batch_id']} is still {status.state} after {self.wait_limit:g} s; "
                                  f"it goes on running on the server: run again to re-attach (state in {self._path})")
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

    def _save(self, state: dict, must: bool) -> None:
        """Write the state file atomically (never half-written). A write that fails (a full disk)
        is one line: an error while nothing is paid for yet (``must``), else a warning (the run
        goes on with the id in memory; a re-run finds the batch on the server)."""
        try:
            atomic_write_text(self._path, json.dumps(state, indent=1) + "\n")
        except OSError as exc:
            if must:
                raise self._error(f"cannot write its state file {self._path}: {exc.strerror or exc}; no batch was "
                                  f"created") from None
            self._say(f"warning: {self.description}: cannot write the state file {self._path} "
                      f"({exc.strerror or exc}); the run goes on")

    # --- HTTP -------------------------------------------------------------------------------
    def _backoff(self) -> Backoff:
        return Backoff(min(self.backoff_first, self.poll_interval), self.backoff_cap, self.outage_limit)

    def _pause(self, backoff: Backoff, server_wait: float | None, what: str, detail: str) -> None:
        """Wait before trying ``what`` again (one line saying so), or raise when the failures have
        lasted ``outage_limit`` or the wait would pass ``wait_limit``."""
        wait = backoff.next(server_wait)
        failing = timedelta(seconds=round(backoff.failing_for()))
        if wait is None:
            raise self._error(f"could not {what}: the server failed for {failing} in a row (outage_limit "
                              f"{self.outage_limit:g} s); last: {detail}")
        if self._deadline is not None and time.monotonic() + wait > self._deadline:
            raise self._error(f"could not {what} within batch_wait {self.wait_limit:g} s (last: {detail}); run "
                              f"again to go on (state in {self._path})")
        why = "the server's Retry-After" if server_wait is not None and wait <= server_wait else "backing off"
        self._say(f"{self.description}: could not {what} ({detail}); trying again in {wait:.3g} s ({why}; "
                  f"failing for {failing})")
        time.sleep(wait)

    def _call(self, http: httpx.Client, method: str, url: str, what: str, *, missing_ok: bool = False,
              retry: bool = True, **kw: Any) -> httpx.Response:
        """One call to the server (``url`` relative to ``base_url``, or absolute). One that fails
        in passing is tried again (:meth:`_pause`), or with ``retry=False`` raises
        :class:`FailedInPassing` (a creation: it may have run); any other failure is a one-line
        error naming ``what``; :class:`Gone` on a 404 when ``missing_ok``."""
        url = url if url.startswith(("http://", "https://")) else self.base_url + url
        if urlsplit(url)[:2] == urlsplit(self.base_url)[:2]:  # the key goes to the configured server only
            kw["headers"] = {**self._auth(), **kw.get("headers", {})}
        backoff = self._backoff()
        while True:
            server_wait = None
            try:
                resp = self._send(http, method, url, **kw)
            except httpx.TransportError as exc:
                detail = f"{type(exc).__name__}: {one_line(str(exc)) or 'connection failed'}"
            else:
                code = resp.status_code
                if 200 <= code < 300:
                    return resp
                if code == 404 and missing_ok:
                    raise Gone
                detail = f"HTTP {code}: {server_message(resp)}"
                if not (code in PASSING or code >= 500):
                    raise self._error(f"could not {what}: {detail}")
                server_wait = retry_after(resp.headers.get("Retry-After"))
            if not retry:
                raise FailedInPassing(detail, server_wait)
            self._pause(backoff, server_wait, what, detail)

    def _send(self, http: httpx.Client, method: str, url: str, **kw: Any) -> httpx.Response:
        """One attempt, its answer read whole within ``timeout`` seconds of its start, plus one
        second per :data:`MIN_RATE` bytes received (a large result file at a modest rate is not
        cut; httpx's own timeout is per read: a server dripping bytes would hold a download for
        ever); a slower answer is a :class:`httpx.ReadTimeout`, a failure in passing. The deadline
        is the judge client's (:class:`~rmbench.models.judge.transfer.Deadline`), growing here."""
        deadline = Deadline(self.timeout, min_rate=MIN_RATE)
        request = http.build_request(method, url, **kw)
        resp = http.send(request, stream=True)
        try:
            body = bytearray()
            for chunk in resp.iter_raw():
                body += chunk
                if deadline.passed(len(body)):
                    raise httpx.ReadTimeout(f"no whole answer within timeout {self.timeout:g} s", request=request)
        finally:
            resp.close()
        headers = [(k, v) for k, v in resp.headers.multi_items() if k.lower() not in ("content-length",
                                                                                     "transfer-encoding")]
        return httpx.Response(resp.status_code, headers=headers, content=bytes(body), request=request)

    def _json(self, resp: httpx.Response, what: str) -> dict:
        """The JSON object of a response; a one-line error when it is none."""
        try:
            data = resp.json()
        except (ValueError, RecursionError):
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

    def _pages(self, http: httpx.Client, url: str, what: str, cursor: str, oldest: float,
               created: Callable[[dict], float | None], max_pages: int = 50) -> Iterable[dict]:
        """The items of a newest-first listing (``data``, ``has_more``, ``last_id``; the next page
        by ``?{cursor}=LAST_ID``), down to items created before ``oldest`` (epoch seconds)."""
        after = None
        for _ in range(max_pages):
            sep = "&" if "?" in url else "?"
            page = self._json(self._call(http, "GET", url + (f"{sep}{cursor}={after}" if after else ""), what), what)
            items = [d for d in page.get("data") or [] if isinstance(d, dict)]
            yield from items
            when = [t for t in (created(d) for d in items) if t is not None]
            after = page.get("last_id") or (items[-1].get("id") if items else None)
            if not page.get("has_more") or not after or (when and min(when) < oldest):
                return

