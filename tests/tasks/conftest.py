import pytest

from rmbench.tasks import downloads
from tests.support.file_server import FileServer


@pytest.fixture(scope="session")
def file_server():
    """One static file server on 127.0.0.1 for the whole session (tests/support/file_server.py)."""
    server = FileServer()
    yield server
    server.stop()


@pytest.fixture()
def server(file_server, tmp_path, monkeypatch):
    """The session's file server emptied for this test, with a cache of the test's own and no mirror:
    ``(base_url, server)``, the server's ``files``, ``cut`` and ``hits`` for the test to fill and read."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(downloads.MIRROR_ENV, raising=False)
    file_server.reset()
    yield file_server.base_url, file_server
    file_server.reset()
