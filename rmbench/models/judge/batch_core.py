"""The provider-independent half of batch execution (the design is in
:mod:`rmbench.models.judge.batch`): the outcome and the per-line result types, the base
:class:`BatchExecutor` (argument checks, handing results to the caller, the synchronous retry of
what failed), :func:`read_lines`, the reader of result files that never lets one bad line
end the run, and how a management call fails (:class:`Gone`, :class:`FailedInPassing`) and
waits between its tries (:class:`Backoff`). The loop of a batch run on a server is
:mod:`rmbench.models.judge.batch_remote`.
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rmbench.errors import ConfigError, RMBenchError
from rmbench.models.judge.client import ChatClient
from rmbench.models.judge.wire import ChatReply, ChatRequest, JudgeServerError, Secret, one_line

OnReply = Callable[[int, ChatReply], None]
Answered = Callable[[Sequence[str]], set[str]]
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what both OpenAI and Anthropic accept as a custom_id
PASSING = (408, 409, 425, 429)  # besides 5xx: statuses of a call that failed in passing


@dataclass
class BatchOutcome:
    """What one :meth:`BatchExecutor.complete` did. ``completed``: replies read from the batch;
    ``failed``/``expired``: requests the batch did not answer (``retried_sync`` of them were then
    answered by synchronous calls); ``answered_elsewhere``: requests another run answered while
    this one waited for the batch state's lock (not submitted). ``prompt_tokens`` and
    ``completion_tokens`` count both kinds of reply, ``sync_prompt_tokens`` and
    ``sync_completion_tokens`` those of the synchronous retries alone (billed at the synchronous
    price: the batch price is for the lines the batch answered)."""

    batch_ids: list[str] = field(default_factory=list)
    submitted: int = 0
    completed: int = 0
    failed: int = 0
    expired: int = 0
    retried_sync: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    sync_prompt_tokens: int = 0
    sync_completion_tokens: int = 0
    seconds: float = 0.0
    reattached: bool = False
    answered_elsewhere: int = 0

    def count(self, reply: ChatReply, sync: bool = False) -> None:
        """Add a reply's tokens (``sync``: a synchronous retry's)."""
        self.prompt_tokens += reply.prompt_tokens
        self.completion_tokens += reply.completion_tokens
        if sync:
            self.sync_prompt_tokens += reply.prompt_tokens
            self.sync_completion_tokens += reply.completion_tokens

    @property
    def batch_tokens(self) -> tuple[int, int]:
        """(prompt, completion) tokens of the replies the batch itself answered."""
        return self.prompt_tokens - self.sync_prompt_tokens, self.completion_tokens - self.sync_completion_tokens

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
    def complete(self, requests: Sequence[ChatRequest], keys: Sequence[str], on_reply: OnReply,
                 answered: Answered | None = None) -> BatchOutcome:
        """Get a reply for every request; ``on_reply(i, reply)`` runs in this thread for each
        reply as it is read (the caller stores it at once). ``keys[i]``: the call-cache key of
        ``requests[i]``, the batch line's ``custom_id``. Requests the batch did not answer are
        retried synchronously where the provider allows (``retry_sync``); otherwise, once every
        reply has gone to ``on_reply``, a one-line :class:`JudgeServerError`. ``answered(keys)``:
        the keys the caller's store holds by now (another run's batch of the same requests may
        have answered them while this one waited for the batch state's lock): those are not
        submitted, nor handed to ``on_reply``."""

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
            outcome.count(reply, sync=True)
            on_reply(order[j], reply)

        try:
            client.complete([requests[i] for i in order], on_reply=keep)
        except JudgeServerError as exc:  # its count is of the retry's calls: the batch's replies were kept too
            raise JudgeServerError(f"{exc} (of the {len(order)} synchronous retries); with the batch's "
                                   f"{outcome.completed} replies, {outcome.completed + outcome.retried_sync} of "
                                   f"{outcome.submitted} requests were answered and kept") from None


class _NonFinite(ValueError):
    """A JSON number that is not finite (``NaN``, ``Infinity``, ``1e999``)."""


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _refuse(text: str) -> Any:
    raise _NonFinite(text)


MAX_TOKENS_COUNT = 10**9  # more tokens than any reply has: a usage count beyond is absurd


def _check_reply(reply: ChatReply) -> None:
    """``ValueError`` when the reply's usage counts are absurd (negative, beyond
    :data:`MAX_TOKENS_COUNT`)."""
    for name in ("prompt_tokens", "completion_tokens"):
        if not 0 <= getattr(reply, name) <= MAX_TOKENS_COUNT:
            raise ValueError(f"usage {name} {getattr(reply, name)} is absurd")


def read_lines(text: str, parse: Callable[[Any], LineResult]) -> Iterator[LineResult]:
    """The results of the non-empty lines of ``text``, each read by ``parse``, never raising: a
    line that is not JSON, holds a number that is not finite (``NaN``, ``Infinity``), absurd usage
    counts or anything ``parse`` cannot read is a failed line of its ``custom_id`` (found by its
    text where the JSON cannot be read; "" when none is), so that request is retried or reported
    like any failed line, and every other line is still read."""
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line, parse_float=_finite, parse_constant=_refuse)
            result = parse(item)
            if result.reply is not None:
                _check_reply(result.reply)
        except _NonFinite as exc:
            yield LineResult(_custom_id_in(line), None, f"a result line with a number that is not finite ({exc})")
        except (RMBenchError, ValueError, OverflowError, TypeError, KeyError, AttributeError, RecursionError) as exc:
            why = "not JSON" if isinstance(exc, json.JSONDecodeError) else one_line(f"{type(exc).__name__}: {exc}")
            yield LineResult(_custom_id_in(line), None, f"a malformed result line ({why})")
        else:
            yield result


def _custom_id_in(line: str) -> str:
    """The ``custom_id`` a result line names, found in its text ("" when none is)."""
    m = re.search(r'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,64})"', line)
    return m.group(1) if m else ""


class Gone(Exception):
    """The server does not know the batch (404 on its status)."""


class FailedInPassing(Exception):
    """A call that failed in passing (``retry=False``): ``detail`` and the server's Retry-After."""

    def __init__(self, detail: str, wait: float | None) -> None:
        super().__init__(detail)
        self.detail, self.wait = detail, wait


class Backoff:
    """The waits between tries of a call that fails in passing: ``first`` seconds, doubling up to
    ``cap``, never less than the server's Retry-After; None once the failures have lasted
    ``outage`` seconds."""

    def __init__(self, first: float, cap: float, outage: float) -> None:
        self.first, self.cap, self.outage = first, cap, outage
        self.started: float | None = None
        self.tries = 0

    def next(self, server_wait: float | None) -> float | None:
        """The seconds to wait before the next try; None: give up."""
        now = time.monotonic()
        self.started = now if self.started is None else self.started
        wait = max(min(self.cap, self.first * 2 ** min(self.tries, 30)), server_wait or 0.0)
        self.tries += 1
        return None if now + wait - self.started > self.outage else wait

    def failing_for(self) -> float:
        """Seconds since the first failure."""
        return 0.0 if self.started is None else time.monotonic() - self.started
