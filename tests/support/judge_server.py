"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks, with scripted faults.

    with ScriptedServer(reply=lambda body: "A", latency=0.05) as server:
        server.faults += [("status", 429, {"Retry-After": "1"}), ("drop",)]
        ChatClient(server.base_url, "judge-model").complete(...)

It serves ``POST /v1/chat/completions``, ``GET /v1/models`` and ``GET /health`` from a
``ThreadingHTTPServer`` (HTTP/1.1, keep-alive) in a background thread. Each chat request first
takes the next fault of ``server.faults``, if any:

* ``("status", CODE)``, ``("status", CODE, HEADERS)``, ``("status", CODE, HEADERS, MESSAGE)``: that
  status with an OpenAI-style error body;
* ``("hang", SECONDS)``: no answer for that long, then the connection closes;
* ``("drop",)``: the connection closes without a response;
* ``("malformed",)``: 200 with a body that is not JSON;
* ``("empty_choices",)``: 200 with ``"choices": []``;
* ``("drip", SECONDS)``: the normal answer sent one byte every SECONDS (the status line and
  headers at once); ``("drip", SECONDS, True)``: the status line and headers dripped too;
* ``("patch", FUNCTION)``: the normal answer as ``FUNCTION(answer)`` returns it (it may change it
  in place and return None; bytes are sent as they are), written with Python's ``json.dumps``
  (so ``float("inf")`` is sent as ``Infinity``, NaN as ``NaN``); ``("usage", VALUE)``: ``prompt_tokens`` set to VALUE;
  ``("nan_logprobs",)``: the first logprob of the first token NaN (the request asks logprobs);
* ``("big", BYTES)``: 200 with a JSON answer whose content is BYTES long, sent chunked (no
  Content-Length) in 64 KiB writes; ``("big", BYTES, True)``: with its Content-Length.

``die_after=N``: after N successful chat replies the server stops listening, and requests on
connections already open are dropped. ``reply``: the content string, or a function of the request
body returning a string or a dict (``content``, ``reasoning_content``, ``finish_reason``,
``top_logprobs``: per token a list of (token, logprob)).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many connections at once (the default backlog of 5 drops SYNs)

    def handle_error(self, request, client_address) -> None:  # a client that hung up: not news
        pass


class ScriptedServer:
    """An OpenAI-compatible server with a fault script; use as a context manager."""

    def __init__(self, reply: str | Callable[[dict], Any] = "ok", latency: float = 0.0,
                 model_id: str = "judge-model", require_key: str | None = None, die_after: int | None = None,
                 keep_log: bool = True) -> None:
        """``keep_log=False``: leave ``requests`` empty (a long benchmark)."""
        self.keep_log = keep_log
        self.reply, self.latency, self.model_id, self.require_key = reply, latency, model_id, require_key
        self.die_after = die_after
        self.faults: list[tuple] = []
        self.requests: list[dict] = []  # {"path", "headers", "body"} of every request received
        self.served = 0  # successful chat replies
        self._admitted = 0  # chat requests let through to normal service
        self.in_flight = self.max_in_flight = 0
        self.dead = False
        self.died = threading.Event()
        self.lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _handler(self))
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        self._stopped = False

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop listening (idempotent); connections being served are dropped as they come back."""
        with self.lock:
            if self._stopped:
                return
            self._stopped = self.dead = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self.died.set()

    def chat_requests(self) -> list[dict]:
        """The bodies of the chat requests received, in order."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def next_fault(self) -> tuple | None:
        """The fault for the chat request just received (None: serve it)."""
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def answer(self, body: dict) -> dict:
        """The chat completion for ``body``, with usage (word counts) and logprobs if asked."""
        out = self.reply(body) if callable(self.reply) else self.reply
        message = {"content": out} if isinstance(out, str) else dict(out)
        top = message.pop("top_logprobs", None)
        finish = message.pop("finish_reason", "stop")
        message.setdefault("role", "assistant")
        words = (message.get("content") or "").split()
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs"):
            k = int(body.get("top_logprobs") or 1)
            top = top if top is not None else [[(w, -0.1), ("<other>", -2.5)][:k] for w in words]
            choice["logprobs"] = {"content": [
                {"token": alts[0][0] if alts else "", "logprob": alts[0][1] if alts else 0.0,
                 "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alts]} for alts in top]}
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        return {"id": f"chatcmpl-{self.served}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", self.model_id), "choices": [choice],
                "usage": {"prompt_tokens": prompt_words, "completion_tokens": len(words),
                          "total_tokens": prompt_words + len(words)}}

    def admit(self) -> bool:
        """Whether a chat request may be served: the server is alive and below ``die_after``."""
        with self.lock:
            if self.dead or (self.die_after is not None and self._admitted >= self.die_after):
                return False
            self._admitted += 1
            return True

    def count_served(self) -> None:
        """One more successful chat reply; the ``die_after``-th stops the server."""
        with self.lock:
            self.served += 1
            die = self.die_after is not None and self.served >= self.die_after
        if die:
            threading.Thread(target=self.stop, daemon=True).start()


def _set_usage(value: Any) -> Callable[[dict], None]:
    """A patch setting the answer's ``usage.prompt_tokens`` to ``value``."""
    return lambda answer: answer["usage"].__setitem__("prompt_tokens", value)


def _nan_logprob(answer: dict) -> None:
    """A patch making the first logprob of the first token NaN."""
    answer["choices"][0]["logprobs"]["content"][0]["top_logprobs"][0]["logprob"] = float("nan")


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to ``server``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # no 40 ms Nagle stalls

        def log_message(self, *args) -> None:
            pass

        def send_json(self, code: int, payload: Any, headers: dict | None = None, raw: bytes | None = None) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def drip(self, data: bytes, every: float, head_too: bool) -> None:
            """A 200 with ``data``, one byte every ``every`` seconds (its head too if ``head_too``)."""
            head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                    f"\r\n").encode()
            if not head_too:
                self.wfile.write(head)
                self.wfile.flush()
            for i in range(len(data) + (len(head) if head_too else 0)):
                byte = (head + data)[i:i + 1] if head_too else data[i:i + 1]
                time.sleep(every)
                self.wfile.write(byte)
                self.wfile.flush()

        def big(self, size: int, declared: bool) -> None:
            """A 200 whose content is ``size`` bytes of "x", chunked unless ``declared``."""
            head, tail = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "', b'"}}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if declared:
                self.send_header("Content-Length", str(len(head) + size + len(tail)))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            middle = (b"x" * min(65_536, size - i) for i in range(0, size, 65_536))  # made as sent, never whole
            for piece in itertools.chain([head], middle, [tail]):
                self.wfile.write(piece if declared else b"%x\r\n%s\r\n" % (len(piece), piece))
            if not declared:
                self.wfile.write(b"0\r\n\r\n")

        def drop(self) -> None:
            self.close_connection = True  # nothing written: the client sees the socket close

        def record(self, body: Any) -> None:
            if not server.keep_log:
                return
            with server.lock:
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.record(None)
            if server.dead:
                return self.drop()
            if self.path.rstrip("/").endswith("/models"):
                return self.send_json(200, {"object": "list", "data": [{"id": server.model_id, "object": "model"}]})
            if self.path == "/health":
                return self.send_json(200, {"status": "ok"})
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            self.record(body)
            if server.dead:
                return self.drop()
            if not self.path.split("?", 1)[0].endswith("/chat/completions"):  # Azure adds ?api-version=
                return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
            if server.require_key and self.headers.get("Authorization") != f"Bearer {server.require_key}":
                return self.send_json(401, {"error": {"message": "invalid API key", "type": "auth"}})
            with server.lock:
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self.chat(body)
            finally:
                with server.lock:
                    server.in_flight -= 1

        def chat(self, body: Any) -> None:
            fault = server.next_fault()
            kind = fault[0] if fault else None
            if kind == "status":
                code, headers = fault[1], fault[2] if len(fault) > 2 else {}
                message = fault[3] if len(fault) > 3 else f"scripted {code}"
                return self.send_json(code, {"error": {"message": message, "code": code}}, headers)
            if kind == "hang":
                time.sleep(fault[1])
                return self.drop()
            if kind == "drop":
                return self.drop()
            if kind == "malformed":
                return self.send_json(200, None, raw=b'{"choices": [{"message": ')
            if kind == "empty_choices":
                return self.send_json(200, {"id": "x", "object": "chat.completion", "choices": []})
            if kind in ("drip", "patch", "usage", "nan_logprobs"):
                answer = server.answer(body)
                if kind == "drip":
                    return self.drip(json.dumps(answer).encode(), fault[1], len(fault) > 2 and fault[2])
                patch = {"patch": lambda: fault[1], "usage": lambda: _set_usage(fault[1]),
                         "nan_logprobs": lambda: _nan_logprob}[kind]()
                answer = patch(answer) or answer
                raw = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                return self.send_json(200, None, raw=raw)
            if kind == "big":
                return self.big(fault[1], len(fault) > 2 and fault[2])
            if kind is not None:
                raise ValueError(f"unknown fault {fault!r}")
            if not server.admit():  # past die_after: the server dies once the last admitted is served
                server.died.wait(10.0)
                return self.drop()
            if server.latency:
                time.sleep(server.latency)
            if not isinstance(body, dict):
                return self.send_json(400, {"error": {"message": "body is not a JSON object"}})
            self.send_json(200, server.answer(body))
            server.count_served()

    return Handler
