"""A server subprocess for tests that never outlives its test, its test session or its pytest process.

    with ServerProcess([cli, "serve", folder, "--port", str(port)], name="transformers serve",
                       health_url=f"http://127.0.0.1:{port}/health", log=tmp / "server.log") as server:
        server.wait_ready(timeout=600)   # readiness, not a clock: polls health_url until it answers 200
        ...                              # the block's end (pass or fail) stops the server

Three guards, each enough on its own for the case it covers:

* **the owner stops it**: ``stop()`` (the context manager's exit, a fixture's ``finally``) sends
  SIGTERM to the server's whole process group, then SIGKILL if it has not exited within ``grace``
  seconds (10 by default; ``transformers serve`` finishes a generation first);
* **atexit**: every server not yet stopped is stopped when the Python process that started it
  exits normally (an ``exit()``, an uncaught exception, pytest ending with a finalizer skipped);
* **a watchdog for a killed owner** (SIGKILL, OOM, a CI job's timeout): the command runs under this
  file's ``--watch`` mode, a small supervisor in its own session that polls its parent's pid (every
  0.2 s) and, when the owner is gone, kills the server's process group (children included). The
  server itself gets ``PR_SET_PDEATHSIG`` (SIGKILL) on Linux, so even a killed supervisor takes it
  along.

Readiness: ``wait_ready`` polls ``health_url`` until it answers 200 with a generous upper bound; the
server exiting first, or the bound passing, is one error naming the server, its command, its
address and the tail of its log (:class:`ServerFailed`; fixtures turn it into ``pytest.fail``).
The command is run exactly as given (argv, cwd, env): the supervisor adds nothing to it.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PR_SET_PDEATHSIG = 1
POLL_S = 0.2
STOP_GRACE_S = 10.0
_LIVE: set[ServerProcess] = set()


class ServerFailed(RuntimeError):
    """A server that exited before it was ready, or was not ready in time: the message names it."""


def _die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a child before exec (Linux): the kernel sends ``sig`` when the parent exits. Elsewhere a no-op."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        except (OSError, AttributeError):
            pass


class ServerProcess:
    """``argv`` run as a server under a watchdog supervisor in a new session; see the module docstring."""

    def __init__(self, argv: list[str], *, name: str, health_url: str, log: Path, cwd: Path | None = None,
                 env: dict[str, str] | None = None, grace: float = STOP_GRACE_S) -> None:
        """``grace``: seconds between SIGTERM and SIGKILL when stopping."""
        self.grace = grace
        self.argv, self.name, self.health_url, self.log_path = [str(a) for a in argv], name, health_url, Path(log)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:  # the supervisor keeps its own copy of the descriptor
            supervised = [sys.executable, __file__, "--watch", str(os.getpid()), str(grace), "--", *self.argv]
            self.proc = subprocess.Popen(supervised, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.pgid = self.proc.pid  # the supervisor leads the session and the group; the server is in it
        _LIVE.add(self)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def server_pid(self) -> int | None:
        """The server's own pid (the supervisor's child), once started."""
        try:
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def _failure(self, what: str) -> ServerFailed:
        return ServerFailed(f"{self.name} {what} ({self.health_url}; command: {' '.join(self.argv)}); "
                            f"the end of its log {self.log_path}:\n{self.log_tail()}")

    def wait_ready(self, timeout: float) -> None:
        """Return once ``health_url`` answers 200; :class:`ServerFailed` (the server stopped) if it exits
        first or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                self.stop()
                raise self._failure("exited before it answered")
            try:
                with urllib.request.urlopen(self.health_url, timeout=5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise self._failure(f"did not answer 200 within {timeout:.0f} s")
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``STOP_GRACE_S``; idempotent."""
        _LIVE.discard(self)
        for sig, grace in ((signal.SIGTERM, self.grace + 5.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(self.pgid, sig)  # by its group's id, never by name
            except ProcessLookupError:
                break
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                continue
            if not _group_alive(self.pgid):
                break
        if self.proc.poll() is None:
            self.proc.wait()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


def _watch(owner: int, grace: float, argv: list[str]) -> None:
    """The supervisor: run ``argv``; when it exits, when the owner's pid is no longer our parent (it
    died) or on SIGTERM, kill our whole process group (the server, its children and this process),
    after a line in the log saying why."""
    if os.getppid() != owner:
        return  # the owner died before we started
    server = subprocess.Popen(argv, preexec_fn=_die_with_parent)  # noqa: PLW1509 - this process has one thread
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    while server.poll() is None and not stopping and os.getppid() == owner:
        time.sleep(POLL_S)
    if server.poll() is None:
        why = "asked to stop" if stopping else f"its owner (pid {owner}) is gone"
        print(f"[server_process] {why}: stopping the server (pid {server.pid}) and its process group", flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.killpg(0, signal.SIGTERM)
        try:
            server.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    else:
        print(f"[server_process] the server exited with status {server.returncode}", flush=True)
    os.killpg(0, signal.SIGKILL)  # whatever is left of the group, this supervisor included


if __name__ == "__main__" and sys.argv[1:2] == ["--watch"]:
    _watch(int(sys.argv[2]), float(sys.argv[3]), sys.argv[5:])
