"""A real batch-API server on 127.0.0.1 for the batch executors' tests, with a scripted life:

    with BatchServer(reply=lambda body: "A", expire=[1], fail=[3]) as server:
        make_batch_executor("openai", base_url=server.base_url, ...).complete(...)

It is a :class:`judge_server.ScriptedServer` (so ``POST /v1/chat/completions`` answers the
synchronous retries, with the same ``reply`` and faults) that also serves

* OpenAI's Files and Batches: ``POST /v1/files`` (multipart, ``purpose=batch``), ``POST
  /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/files/{id}/content``;
* Anthropic's Message Batches: ``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``
  and its ``results_url`` (``.../results``).

Each status GET moves a batch one step: OpenAI ``validating``, ``in_progress`` (``in_progress_polls``
times, counts growing), ``finalizing``, then ``completed`` (``expired`` when ``expire`` names
requests); Anthropic ``in_progress`` (``in_progress_polls`` times), then ``ended``. The replies are
made when the batch ends, by ``reply`` (a string, or a function of the chat body giving a string or
a dict with ``content``, ``reasoning_content``, ``finish_reason``; an Anthropic request is shown to
it as the equivalent chat body, its system text first).

Both listings are served too, newest first, paged: ``GET /v1/batches?limit=N&after=ID`` and
``GET /v1/messages/batches?limit=N&after_id=ID`` (``has_more``, ``last_id``).

Script: ``expire``/``fail``: input line numbers (0-based) that come out expired / as error lines
(``expired_lines=False``: the expired ones are simply missing from the output, as when OpenAI's
window runs out); ``fail_batch=True``: the whole batch fails at validation; ``status_faults``:
HTTP codes (or ``(code, headers)``) answered to the next status polls; ``create_faults``: to the
next batch creations; ``create_drop=N``: the next N creations make the batch, then close the
connection without an answer (the answer lost); ``create_hold``: seconds a creation waits after
making the batch before it answers (time to SIGKILL the client); ``output_faults``: input line
number -> how its output line comes out broken: ``"infinity_usage"`` (``Infinity`` as a token
count), ``"nan_logprobs"`` (``NaN`` as a logprob), ``"huge_usage"`` (``1e999``), ``"garbage"``
(not JSON; the custom_id still in its text); ``drip_downloads=N``: the next N file downloads
send their bytes one at a time, ``drip`` seconds apart. Counters: ``batches_created``, ``uploads``,
``polls``, ``listings``; ``billed``: the lines of every batch created plus the chat calls served.
``require_key``: the Bearer key (OpenAI) or ``x-api-key`` (Anthropic) every call must carry.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import time
import urllib.parse
from typing import Any

from tests.support.judge_server import ScriptedServer


class BatchServer(ScriptedServer):
    """An OpenAI Files+Batches and Anthropic Message Batches server with a script; a context manager."""

    def __init__(self, reply: Any = "ok", *, expire=(), fail=(), expired_lines: bool = True,
                 fail_batch: bool = False, in_progress_polls: int = 1, status_faults=(), create_faults=(),
                 create_drop: int = 0, create_hold: float = 0.0, output_faults: dict | None = None,
                 drip_downloads: int = 0, drip: float = 0.05,
                 require_key: str | None = None, model_id: str = "judge-model") -> None:
        super().__init__(reply=reply, model_id=model_id, require_key=require_key)
        self.expire, self.fail, self.expired_lines = set(expire), set(fail), expired_lines
        self.fail_batch, self.in_progress_polls = fail_batch, in_progress_polls
        self.status_faults, self.create_faults = list(status_faults), list(create_faults)
        self.create_drop, self.create_hold, self.output_faults = create_drop, create_hold, dict(output_faults or {})
        self.drip_downloads, self.drip = drip_downloads, drip
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.batches_created = self.uploads = self.polls = self.listings = 0
        # Same server, same port: the batch routes first, the rest (chat, models) as ScriptedServer.
        self._httpd.RequestHandlerClass = _batch_handler(self, self._httpd.RequestHandlerClass)

    # --- OpenAI -------------------------------------------------------------------------------
    def upload(self, form: dict[str, bytes]) -> dict:
        with self.lock:
            self.uploads += 1
            file_id = f"file-{len(self.files) + 1}"
            self.files[file_id] = form["file"]
        return {"id": file_id, "object": "file", "purpose": form["purpose"].decode(), "bytes": len(form["file"])}

    def create_openai(self, body: dict) -> tuple[int, dict]:
        data = self.files.get(body.get("input_file_id"))
        if data is None or body.get("endpoint") != "/v1/chat/completions":
            return 400, {"error": {"message": "unknown input_file_id or endpoint", "code": "invalid_request"}}
        lines = [json.loads(ln) for ln in data.decode().splitlines() if ln.strip()]
        return 200, self._new({"kind": "openai", "input_file_id": body["input_file_id"], "lines": lines,
                               "created_at": int(time.time())}, "batch")

    def openai_status(self, batch: dict) -> dict:
        final = "failed" if self.fail_batch else "expired" if self.expire else "completed"
        steps = ["validating", final] if self.fail_batch else \
            ["validating"] + ["in_progress"] * self.in_progress_polls + ["finalizing", final]
        state = self._step(batch, steps)
        n = len(batch["lines"])
        bad = len(self.fail) + len(self.expire)
        done = {"validating": 0, "finalizing": n - bad, final: n - bad}.get(
            state, (n - bad) * batch["polls"] // (self.in_progress_polls + 2))
        out: dict[str, Any] = {"id": batch["id"], "object": "batch", "endpoint": "/v1/chat/completions",
                               "input_file_id": batch["input_file_id"], "completion_window": "24h", "status": state,
                               "output_file_id": None, "error_file_id": None, "created_at": batch["created_at"],
                               "errors": None, "request_counts": {"total": 0 if state == "validating" else n,
                                                                  "completed": done,
                                                                  "failed": bad if state == final else 0}}
        if state == "failed":
            out["errors"] = {"object": "list", "data": [{"code": "invalid_request", "line": 1,
                                                         "message": "scripted: the whole batch failed"}]}
            out["request_counts"] = {"total": n, "completed": 0, "failed": n}
        elif state == final:
            out.update(self._openai_files(batch))
        return out

    def _openai_files(self, batch: dict) -> dict:
        """The output and error files of an ended batch (made once)."""
        if "files" not in batch:
            good, bad = [], []
            for i, line in enumerate(batch["lines"]):
                head = {"id": f"batch_req_{i}", "custom_id": line["custom_id"]}
                if i in self.expire:
                    if self.expired_lines:
                        bad.append({**head, "response": None, "error": {
                            "code": "batch_expired",
                            "message": "This request could not be executed before the completion window expired."}})
                elif i in self.fail:
                    error = {"message": f"scripted failure of line {i}", "type": "server_error"}
                    bad.append({**head, "error": None,
                                "response": {"status_code": 500, "request_id": f"r{i}", "body": {"error": error}}})
                else:
                    good.append({**head, "error": None, "response": {"status_code": 200, "request_id": f"r{i}",
                                                                     "body": self.answer(line["body"])}})
                    good[-1]["fault"] = self.output_faults.get(i)
            batch["files"] = {}
            for name, rows in (("output_file_id", good), ("error_file_id", bad)):
                if rows:
                    file_id = f"file-{len(self.files) + 1}"
                    self.files[file_id] = "".join(_broken(r) + "\n" for r in rows).encode()
                    batch["files"][name] = file_id
        return batch["files"]

    # --- Anthropic ----------------------------------------------------------------------------
    def create_anthropic(self, body: dict) -> tuple[int, dict]:
        reqs = body.get("requests")
        if not isinstance(reqs, list) or not reqs:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "no requests"}}
        return 200, self._anthropic_json(self._new({"kind": "anthropic", "requests": reqs, "created_at":
                                                    time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, "msgbatch"),
                                         "in_progress")

    def anthropic_status(self, batch: dict) -> dict:
        state = self._step(batch, ["in_progress"] * self.in_progress_polls + ["ended"])
        return self._anthropic_json(batch, state)

    def _anthropic_json(self, batch: dict, state: str) -> dict:
        n = len(batch["requests"])
        counts = {"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if state == "ended":
            counts = {"processing": 0, "succeeded": n - len(self.fail) - len(self.expire),
                      "errored": len(self.fail), "canceled": 0, "expired": len(self.expire)}
        return {"id": batch["id"], "type": "message_batch", "processing_status": state, "request_counts": counts,
                "created_at": batch["created_at"], "results_url":
                f"http://127.0.0.1:{self.port}/v1/messages/batches/{batch['id']}/results" if state == "ended" else None}

    def anthropic_results(self, batch: dict) -> bytes:
        rows = []
        for i, req in enumerate(batch["requests"]):
            if i in self.expire:
                result: dict[str, Any] = {"type": "expired"}
            elif i in self.fail:
                result = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error", "message": f"scripted failure of request {i}"}}}
            else:
                result = {"type": "succeeded", "message": self.anthropic_message(req["params"])}
            rows.append({"custom_id": req["custom_id"], "result": result})
        return "".join(json.dumps(r) + "\n" for r in rows).encode()

    def anthropic_message(self, params: dict) -> dict:
        """The Message for ``params``, made from the chat answer to the equivalent chat body."""
        system = [{"role": "system", "content": params["system"]}] if params.get("system") else []
        body = {"model": params["model"], "messages": system + params["messages"],
                "max_tokens": params["max_tokens"], "temperature": params.get("temperature")}
        answer = self.answer(body)
        choice, usage = answer["choices"][0], answer["usage"]
        blocks = []
        if choice["message"].get("reasoning_content"):
            blocks.append({"type": "thinking", "thinking": choice["message"]["reasoning_content"], "signature": "s"})
        blocks.append({"type": "text", "text": choice["message"].get("content") or ""})
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": params["model"], "content": blocks,
                "stop_reason": "max_tokens" if choice["finish_reason"] == "length" else "end_turn",
                "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}}

    # --- shared -------------------------------------------------------------------------------
    def _new(self, batch: dict, prefix: str) -> dict:
        with self.lock:
            self.batches_created += 1
            batch.update(id=f"{prefix}_{self.batches_created}", polls=0)
            self.batches[batch["id"]] = batch
        return batch

    def _step(self, batch: dict, steps: list[str]) -> str:
        with self.lock:
            self.polls += 1
            state = steps[min(batch["polls"], len(steps) - 1)]
            batch["polls"] += 1
            batch["last_state"] = state
        return state

    @property
    def billed(self) -> int:
        """Requests paid for: every line of every batch created, and every chat call served."""
        with self.lock:
            lines = sum(len(b.get("lines") or b.get("requests") or []) for b in self.batches.values())
            return lines + self.served

    def listing(self, kind: str, query: dict[str, list[str]]) -> dict:
        """One page of the batches of ``kind``, newest first (OpenAI's or Anthropic's shape)."""
        with self.lock:
            self.listings += 1
            items = [b for b in reversed(list(self.batches.values())) if b["kind"] == kind]
        cursor = (query.get("after") or query.get("after_id") or [None])[0]
        if cursor is not None:
            ids = [b["id"] for b in items]
            items = items[ids.index(cursor) + 1:] if cursor in ids else []
        limit = int((query.get("limit") or ["20"])[0])
        page, more = items[:limit], len(items) > limit
        data = [self.openai_view(b) if kind == "openai" else self._anthropic_json(b, self.anthropic_state(b))
                for b in page]
        return {"object": "list", "data": data, "has_more": more, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None}

    def openai_view(self, batch: dict) -> dict:
        """A batch as a listing shows it (its last polled state; no step taken)."""
        return {"id": batch["id"], "object": "batch", "input_file_id": batch["input_file_id"],
                "status": batch.get("last_state", "validating"), "created_at": batch["created_at"]}

    def anthropic_state(self, batch: dict) -> str:
        return "ended" if batch["polls"] > self.in_progress_polls else "in_progress"

    def status_fault(self) -> tuple[int, dict] | None:
        with self.lock:
            fault = self.status_faults.pop(0) if self.status_faults else None
        return None if fault is None else (fault, {}) if isinstance(fault, int) else tuple(fault)  # type: ignore

    def create_fault(self) -> int | None:
        with self.lock:
            return self.create_faults.pop(0) if self.create_faults else None


def _broken(row: dict) -> str:
    """An output line as JSON text, broken as its ``fault`` says (see the module docstring)."""
    fault = row.pop("fault", None)
    if fault is None:
        return json.dumps(row)
    body = row["response"]["body"]
    if fault == "infinity_usage":
        body["usage"]["completion_tokens"] = float("inf")
    elif fault == "huge_usage":
        return json.dumps(row).replace('"prompt_tokens": ', '"prompt_tokens": 1e999, "was": ', 1)
    elif fault == "nan_logprobs":
        body["choices"][0]["logprobs"] = {"content": [{"token": "x", "logprob": float("nan"),
                                                       "top_logprobs": [{"token": "x", "logprob": float("nan")}]}]}
    elif fault == "garbage":
        return f'{{"custom_id": "{row["custom_id"]}", "response": {{"status_code": 200, "body": garbage'
    else:
        raise ValueError(f"unknown output fault {fault!r}")
    return json.dumps(row)  # allow_nan: Infinity and NaN as Python writes them


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body, by name."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()}


def _batch_handler(server: BatchServer, base: type) -> type:
    """``base`` (ScriptedServer's handler) with the batch routes in front."""

    class Handler(base):  # type: ignore[misc,valid-type]
        def authorized(self, anthropic: bool) -> bool:
            if not server.require_key:
                return True
            if anthropic:
                return self.headers.get("x-api-key") == server.require_key and bool(
                    self.headers.get("anthropic-version"))
            return self.headers.get("Authorization") == f"Bearer {server.require_key}"

        def send_raw(self, data: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with server.lock:
                drip, server.drip_downloads = server.drip_downloads > 0, max(server.drip_downloads - 1, 0)
            if not drip:
                return self.wfile.write(data)
            try:
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(server.drip)
            except OSError:  # the client gave up
                self.close_connection = True

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path, _, query = self.path.partition("?")
            if path in ("/v1/batches", "/v1/messages/batches") and not server.dead:
                self.record(None)
                if not self.authorized(path != "/v1/batches"):
                    return self.send_json(401, {"error": {"message": "invalid API key"}})
                if (fault := server.status_fault()) is not None:
                    return self.send_json(fault[0], {"error": {"message": f"scripted {fault[0]}"}}, fault[1])
                kind = "openai" if path == "/v1/batches" else "anthropic"
                return self.send_json(200, server.listing(kind, urllib.parse.parse_qs(query)))
            m = re.fullmatch(r"/v1/(batches|files|messages/batches)/([^/]+)(/content|/results)?", path)
            if not m or server.dead:
                return super().do_GET()
            self.record(None)
            route, item, tail = m.groups()
            if not self.authorized(route == "messages/batches"):
                return self.send_json(401, {"error": {"message": "invalid API key"}})
            if route == "files":
                return self.send_raw(server.files[item]) if tail == "/content" and item in server.files else \
                    self.send_json(404, {"error": {"message": f"no file {item}"}})
            batch = server.batches.get(item)
            if batch is None:
                return self.send_json(404, {"error": {"message": f"no batch {item}", "code": "not_found"}})
            if tail == "/results":
                return self.send_raw(server.anthropic_results(batch))
            if (fault := server.status_fault()) is not None:
                return self.send_json(fault[0], {"error": {"message": f"scripted {fault[0]}"}}, fault[1])
            self.send_json(200, server.openai_status(batch) if route == "batches" else server.anthropic_status(batch))

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?")[0]
            if path not in ("/v1/files", "/v1/batches", "/v1/messages/batches") or server.dead:
                return super().do_POST()
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if path == "/v1/files":
                form = _multipart(self.headers.get("Content-Type", ""), raw)
                self.record({"purpose": form.get("purpose", b"").decode(), "file": form.get("file", b"").decode()})
                if not self.authorized(False):
                    return self.send_json(401, {"error": {"message": "invalid API key"}})
                return self.send_json(200, server.upload(form))
            body = json.loads(raw)
            self.record(body)
            anthropic = path == "/v1/messages/batches"
            if not self.authorized(anthropic):
                return self.send_json(401, {"error": {"message": "invalid API key"}})
            if (code := server.create_fault()) is not None:
                return self.send_json(code, {"error": {"message": f"scripted {code}"}})
            answer = server.create_anthropic(body) if anthropic else server.create_openai(body)
            if server.create_hold:
                time.sleep(server.create_hold)
            with server.lock:
                drop, server.create_drop = server.create_drop > 0, max(server.create_drop - 1, 0)
            if drop and answer[0] == 200:
                return self.drop()  # the batch exists; its answer is lost
            self.send_json(*answer)

    return Handler
