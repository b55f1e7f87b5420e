"""One HTTP exchange bounded in time and size: the judge client's attempts and any synchronous
download (the batch executors') use it.

httpx's ``timeout`` bounds each network operation (a connect, one read), not a request: a server
that sends a byte every half second holds a call forever. :class:`Deadline` is the one deadline
on a whole attempt (connect, send, headers and every byte of the body), optionally growing with
the bytes received. :func:`exchange` enforces it with ``asyncio.timeout_at``, whose cancellation
closes the connection, and reads the body as a stream, stopping at ``max_bytes``, so an
oversized reply is never held whole; :func:`request_within` runs the same on a private event
loop in a worker thread, for synchronous callers. The batch executors' management calls
(``RemoteBatch._send`` in :mod:`rmbench.models.judge.batch_remote`) check the same
:class:`Deadline` per chunk, growing by one second per 100 kB received.
"""

from __future__ import annotations

import asyncio
import queue
import ssl
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import httpx

ERROR_BODY_BYTES = 65_536
"""How much of an error response (not 2xx) is read: its message is quoted in one line anyway."""

DONE = object()  # the worker thread's last message to the calling thread


class DeadlineExceeded(httpx.TimeoutException):
    """The whole exchange outlasted its deadline (the connection was closed). A
    :class:`httpx.TimeoutException`, so code that handles httpx's timeouts handles it."""


class TooLarge(Exception):
    """The body was larger than the limit; reading stopped there (the connection was closed)."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        said = f" (Content-Length {declared:,})" if declared is not None else ""
        super().__init__(f"a reply larger than {limit:,} bytes{said}; reading stopped there")
        self.limit, self.declared = limit, declared


class Deadline:
    """When a whole exchange must be over: ``timeout`` seconds from its start (now), plus one
    second per ``min_rate`` bytes of the body received when ``min_rate`` is given (a large file
    at a modest rate is not cut, a dripping server is). Times are ``time.monotonic()``, the
    event loop's clock."""

    def __init__(self, timeout: float, min_rate: float | None = None) -> None:
        self.timeout, self.min_rate, self.start = timeout, min_rate, time.monotonic()

    def at(self, received: int = 0) -> float:
        """The deadline, ``received`` bytes into the body."""
        return self.start + self.timeout + (received / self.min_rate if self.min_rate else 0.0)

    def passed(self, received: int = 0) -> bool:
        """Whether the deadline, ``received`` bytes into the body, is behind us."""
        return time.monotonic() > self.at(received)


@dataclass(frozen=True)
class Exchange:
    """A finished exchange: the status, the headers and the body as read (content-decoded; an
    error response's body cut at :data:`ERROR_BODY_BYTES`)."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    def response(self, request: httpx.Request | None = None) -> httpx.Response:
        """The exchange as an :class:`httpx.Response` (``.json()``, ``.text``, ``.content``)."""
        headers = [(k, v) for k, v in self.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(self.status_code, headers=headers, content=self.content, request=request)


async def _read(http: httpx.AsyncClient, method: str, url: str, max_bytes: int | None, **kw: Any) -> Exchange:
    """The exchange, its body read chunk by chunk and stopped at ``max_bytes`` (:class:`TooLarge`)."""
    async with http.stream(method, url, **kw) as resp:
        ok = 200 <= resp.status_code < 300
        limit = max_bytes if ok else ERROR_BODY_BYTES
        declared = resp.headers.get("content-length", "")
        if ok and limit is not None and declared.isdigit() and int(declared) > limit:
            raise TooLarge(limit, int(declared))
        chunks, size = [], 0
        async for chunk in resp.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if limit is not None and size > limit:
                if not ok:  # an error message: its start is enough
                    return Exchange(resp.status_code, resp.headers, b"".join(chunks)[:limit])
                raise TooLarge(limit)
        return Exchange(resp.status_code, resp.headers, b"".join(chunks))


async def exchange(http: httpx.AsyncClient, method: str, url: str, *, timeout: float,
                   max_bytes: int | None = None, **kw: Any) -> Exchange:
    """``method url`` on ``http`` within ``timeout`` seconds in all (:class:`DeadlineExceeded`,
    the connection closed), its 2xx body at most ``max_bytes`` (:class:`TooLarge`); ``kw`` goes
    to ``http.stream`` (``json``, ``content``, ``files``, ``headers``...). httpx's own errors
    (refused, reset, its per-read timeout) pass through."""
    deadline = Deadline(timeout)
    try:
        async with asyncio.timeout_at(deadline.at()):
            return await _read(http, method, url, max_bytes, **kw)
    except TimeoutError:
        raise DeadlineExceeded(f"no whole answer within {timeout:g} s (gave up: connection closed)") from None


class LoopThread:
    """Runs one coroutine on a private event loop in a worker thread, then puts ``DONE`` in
    ``inbox``; :meth:`cancel` (from any thread) cancels it, so its ``finally`` blocks run."""

    def __init__(self, make: Callable[[], Coroutine[Any, Any, Any]], inbox: queue.SimpleQueue) -> None:
        self._make, self._inbox, self._lock = make, inbox, threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None
        self._cancelled = False
        self.value: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="rmbench-chat-client", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        """The thread: run the coroutine, keep its result or error, then say it is done."""
        try:
            self.value = asyncio.run(self._guarded())
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            self.error = exc
        finally:
            self._inbox.put(DONE)

    async def _guarded(self) -> Any:
        """The coroutine, unless cancelled before it started."""
        with self._lock:
            if self._cancelled:
                raise asyncio.CancelledError
            self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        return await self._make()

    def cancel(self) -> None:
        """Cancel the coroutine; a no-op once it has ended."""
        with self._lock:
            self._cancelled = True
            loop, task = self._loop, self._task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop has closed: nothing is left to cancel
                pass


def run_in_thread(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """The value of the coroutine ``make()`` run on a private event loop in a worker thread (so
    this works with or without an event loop running here); its error is raised here, and an
    error or Ctrl-C here cancels it."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    runner = LoopThread(make, inbox)
    try:
        while inbox.get() is not DONE:
            pass
    except BaseException:
        runner.cancel()
        raise
    finally:
        runner.thread.join(30.0)
    if runner.error is not None:
        raise runner.error
    return runner.value


def request_within(method: str, url: str, *, timeout: float, max_bytes: int | None = None,
                   headers: dict[str, str] | None = None, verify: ssl.SSLContext | bool = True,
                   **kw: Any) -> httpx.Response:
    """A synchronous ``method url`` bounded as :func:`exchange` (``timeout`` seconds for the
    whole exchange, :class:`DeadlineExceeded`; a 2xx body of at most ``max_bytes``,
    :class:`TooLarge`), on its own connection; the response is whole (``.content``, ``.json()``).
    ``kw``: ``json``, ``content``, ``data``, ``files``, ``params``. httpx's errors pass through."""

    async def go() -> httpx.Response:
        async with httpx.AsyncClient(headers=headers, timeout=timeout, verify=verify) as http:
            done = await exchange(http, method, url, timeout=timeout, max_bytes=max_bytes, **kw)
            return done.response(httpx.Request(method, url))

    return run_in_thread(go)


__all__ = ["DONE", "Deadline", "DeadlineExceeded", "ERROR_BODY_BYTES", "Exchange", "LoopThread", "TooLarge", "exchange",
           "request_within", "run_in_thread"]
