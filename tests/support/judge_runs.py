"""rmbench's side of a judge conformance test: one ``judge:`` run against the scripted server
(tests/support/judge_server.py) with a key of its own, so the server's log tells its requests apart
from an official client's, and what it wrote and sent."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.judge_server import ScriptedServer


def sent(server: ScriptedServer, header: str, value: str) -> list[dict]:
    """The chat request bodies the server received with ``header: value`` (OpenAI's
    ``authorization: Bearer KEY``, Azure's ``api-key: KEY``; a query string after the path ignored)."""
    return [r["body"] for r in server.requests if r["path"].split("?")[0].endswith("/chat/completions")
            and {k.lower(): v for k, v in r["headers"].items()}.get(header) == value]


def sent_with_key(server: ScriptedServer, key: str) -> list[dict]:
    """The chat request bodies sent with ``authorization: Bearer KEY``."""
    return sent(server, "authorization", f"Bearer {key}")


class Run:
    """One rmbench run: its folder, results.json, judgments and the bodies it sent."""

    def __init__(self, folder: Path, server: ScriptedServer, key: str) -> None:
        self.folder = folder
        self.results = json.loads((folder / "results.json").read_text())
        self.judgments = [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]
        self.bodies = sent_with_key(server, key)

    def scores(self, metric: str) -> dict[str | None, float]:
        """``metric``'s value per subset (None: the record with no subset)."""
        (task,) = self.results["tasks"]
        return {m["subset"]: m["value"] for m in task["metrics"] if m["metric"] == metric}


def run_rmbench(server: ScriptedServer, tmp: Path, name: str, model: str, task: str, data: Path, **args) -> Run:
    """``--model judge:MODEL`` on ``task`` with only ``args`` set (and the server, and a key of its
    own so the server's log tells this run apart; a fresh call cache, so every call is made)."""
    var, key = f"RMBENCH_CONFORMANCE_KEY_{name.upper()}", f"sk-rmbench-{name}"
    os.environ[var] = key
    try:
        cfg = EvalConfig(model=f"judge:{model}", model_args=(("base_url", server.base_url), ("api_key_env", var),
                                                             *args.items()),
                         tasks=(task,), data=((task, str(data)),), n_bootstrap=0, cache_dir=str(tmp / "cache" / name))
        evaluate(cfg, out_dir=tmp / name)
    finally:
        os.environ.pop(var, None)
    return Run(tmp / name, server, key)
