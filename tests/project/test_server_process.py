"""The test servers' lifecycle (tests/support/server_process.py): a server started by a fixture never outlives
its owner, even a pytest process killed with SIGKILL; readiness is a health check that answers, and a
server that never gets ready is one error naming it with its log's tail.

The servers here are real processes (Python's ``http.server``, with a child of their own that
ignores SIGTERM, as a server's worker may); no wall time is asserted, only bounded waits.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.server_process import ServerFailed, ServerProcess

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")

REPO = Path(__file__).resolve().parents[2]

# A server with a child of its own that ignores SIGTERM: the whole group must go, not only the server.
SERVER = textwrap.dedent("""
    import http.server, subprocess, sys
    child = subprocess.Popen([sys.executable, "-c",
                              "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    print("child", child.pid, flush=True)
    handler = http.server.SimpleHTTPRequestHandler
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler).serve_forever()
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an orphan's zombie waits for its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_gone(pids: list[int], bound: float = 120.0) -> list[int]:
    """The pids still alive after at most ``bound`` seconds of polling (empty as soon as all are gone)."""
    deadline = time.monotonic() + bound
    while (left := [p for p in pids if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _child_of(log: Path, bound: float = 120.0) -> int:
    """The pid the server printed for its child, once its log has it."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines() if log.exists() else []:
            if line.startswith("child "):
                return int(line.split()[1])
        time.sleep(0.1)
    raise AssertionError(f"the server never printed its child's pid: {log.read_text() if log.exists() else ''}")


INNER = """
import os, socket, sys, time
from pathlib import Path
import pytest
from tests.support.server_process import ServerProcess

@pytest.fixture
def server(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = Path(os.environ["SERVER_LOG"])
    with ServerProcess([sys.executable, "-c", os.environ["SERVER_CODE"], str(port)], name="inner server",
                       health_url=f"http://127.0.0.1:{port}/", log=log, cwd=tmp_path, grace=1.0) as proc:
        proc.wait_ready(timeout=300)
        yield proc

def test_hangs_with_a_server(server):
    Path(os.environ["PIDS"]).write_text(f"{server.proc.pid} {server.server_pid}")
    time.sleep(600)  # killed from outside long before this ends
"""


def test_a_fixture_server_dies_with_its_pytest_process_killed_by_sigkill(tmp_path):
    """The owning pytest process gets SIGKILL mid-test (no finalizer, no atexit runs): the server,
    its supervisor and the server's own child (which ignores SIGTERM) all exit, and the port closes."""
    (tmp_path / "test_inner.py").write_text(INNER)
    pids, log = tmp_path / "pids", tmp_path / "server.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PIDS": str(pids), "SERVER_LOG": str(log), "SERVER_CODE": SERVER}
    inner = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                              "--rootdir", str(tmp_path), str(tmp_path / "test_inner.py")],
                             cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not (pids.exists() and len(pids.read_text().split()) == 2):
            assert inner.poll() is None, inner.communicate()[0].decode()[-3000:]
            assert time.monotonic() < deadline, "the inner test never got its server"
            time.sleep(0.1)
        supervisor, server = map(int, pids.read_text().split())
        child = _child_of(log)
        assert all(_alive(p) for p in (supervisor, server, child))
        inner.send_signal(signal.SIGKILL)
        inner.wait()
        assert not _wait_gone([supervisor, server, child]), log.read_text()
        assert "its owner (pid" in log.read_text()  # the watchdog, not a finalizer, stopped it
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait()


def test_stop_ends_the_whole_group_even_a_child_that_ignores_sigterm(tmp_path):
    port = _free_port()
    log = tmp_path / "server.log"
    with ServerProcess([sys.executable, "-c", SERVER, str(port)], name="http.server",
                       health_url=f"http://127.0.0.1:{port}/", log=log, cwd=tmp_path, grace=0.5) as server:
        server.wait_ready(timeout=300)
        pids = [server.proc.pid, server.server_pid, _child_of(log)]
        assert all(_alive(p) for p in pids)
    assert not _wait_gone(pids)
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass


def test_a_server_that_exits_before_it_is_ready_is_named_with_its_log(tmp_path):
    code = "import sys; print('cannot load the model: no such folder', flush=True); sys.exit(3)"
    server = ServerProcess([sys.executable, "-c", code], name="my judge server",
                           health_url=f"http://127.0.0.1:{_free_port()}/health", log=tmp_path / "s.log")
    with pytest.raises(ServerFailed) as failed:
        server.wait_ready(timeout=300)
    message = str(failed.value)
    assert message.startswith("my judge server exited before it answered")
    assert "/health" in message and "cannot load the model: no such folder" in message
    assert "exited with status 3" in message  # the supervisor's line in the log


def test_a_server_never_ready_fails_at_the_bound_and_is_stopped(tmp_path):
    code = "import time; print('loading...', flush=True); time.sleep(600)"
    server = ServerProcess([sys.executable, "-c", code], name="slow server",
                           health_url=f"http://127.0.0.1:{_free_port()}/health", log=tmp_path / "s.log", grace=0.5)
    started = _child_of_server(server)
    with pytest.raises(ServerFailed, match=r"^slow server did not answer 200 within 2 s .*loading\.\.\."):
        server.wait_ready(timeout=2)
    assert not _wait_gone([server.proc.pid, started])


def _child_of_server(server: ServerProcess, bound: float = 120.0) -> int:
    deadline = time.monotonic() + bound
    while (pid := server.server_pid) is None:
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.05)
    return pid
