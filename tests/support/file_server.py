"""A static file server on 127.0.0.1 for the download tests: one per test session.

It serves ``FileServer.files`` (path -> bytes), answers 404 for anything else, records every
requested path in ``hits``, and cuts the transfer of a path in ``cut`` halfway (the header
promises the whole file, the connection ends). ``reset()`` empties all three between tests, so
one server serves the whole session instead of one started and stopped per test (stopping a
``serve_forever`` loop costs up to its poll interval).
"""

from __future__ import annotations

import http.server
import threading


class _Handler(http.server.BaseHTTPRequestHandler):
    server: FileServer

    def do_GET(self):  # noqa: N802 - http.server's name
        state = self.server
        state.hits.append(self.path)
        body = state.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        # A cut transfer: the header promises the whole file, the connection ends halfway.
        self.wfile.write(body[: len(body) // 2] if self.path in state.cut else body)

    def log_message(self, *args):
        pass


class FileServer(http.server.ThreadingHTTPServer):
    """The server and its state: ``files``, ``cut`` and ``hits`` (see the module's docstring)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.cut: set[str] = set()
        self.hits: list[str] = []
        self.base_url = f"http://127.0.0.1:{self.server_address[1]}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        self.files, self.cut, self.hits = {}, set(), []

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()
