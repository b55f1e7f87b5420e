"""Lines that said something false (issue 53, item 9), each checked against what is true:

* a damaged ``rewards.jsonl`` (a ``NaN`` or ``Infinity`` reward, one beyond the largest float, a
  null where the run's model gave every response a reward, a response's second row, equal or
  not) is refused by ``compare``, ``verify``, ``report``, ``plot`` and ``leaderboard build
  --format html`` in one line naming the file, the line and the item (task, group, response);
  before, a NaN was reported without its file and a second row was silently taken;
* rewards of 1e308 and -1e308 are said to be too far apart (their gaps overflow), not to be
  "NaN or infinite"; rewards of 1e200 (whose squares overflow) are scored;
* an interrupted judge run says its calls are in the judge call cache (not "the score cache"),
  and so does a judge run whose folder cannot be written.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import rmbench.files as files
from rmbench.cli.app import app
from rmbench.core import metrics as M
from rmbench.errors import ModelError
from rmbench.results.storage.rewards_file import RewardsFileError, load_rewards
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.judge_server import ScriptedServer  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for model in ("length", "oracle"):
        evaluate(EvalConfig(model=model, tasks=("ties_sample",), n_bootstrap=20, use_cache=False),
                 out_dir=root / model)
    return root


def damaged(runs: Path, tmp_path: Path, edit) -> Path:
    """A copy of the length run whose rewards.jsonl ``edit(lines)`` changed."""
    folder = tmp_path / "damaged"
    shutil.copytree(runs / "length", folder)
    file = folder / "rewards.jsonl"
    lines = file.read_text().splitlines()
    file.write_text("\n".join(edit(lines)) + "\n")
    return folder


def _with_reward(text: str):
    def edit(lines):
        row = json.loads(lines[2])
        lines[2] = json.dumps({**row, "reward": None}).replace("null", text)
        return lines
    return edit


def _second_row(reward_delta: float):
    def edit(lines):
        row = json.loads(lines[2])
        return [*lines, json.dumps({**row, "reward": row["reward"] + reward_delta})]
    return edit


ITEM = "task 'ties_sample', group 'tied:0', response 2"
CASES = {
    "NaN": (_with_reward("NaN"), ", line 3: NaN is not a reward (a reward is a finite number, or null for a "
                                 "response the model gave none)"),
    "Infinity": (_with_reward("-Infinity"), ", line 3: -Infinity is not a reward"),
    "1e999": (_with_reward("1e999"), f", line 3: {ITEM}: the reward is beyond the largest float"),
    "null": (_with_reward("null"), f": {ITEM}: the reward is null (none), but this run's model gave every "
                                   f"response a reward"),
    "duplicate": (_second_row(0.0), f", line 515: {ITEM}: a duplicate of line 3; a run has one row per response"),
    "conflict": (_second_row(1.5), f", line 515: {ITEM}: a second row (utility 1, reward 7.5) conflicting with the "
                                   f"one at line 3 (utility 1, reward 6.0)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["compare", "verify", "report", "plot", "leaderboard-html"])
def test_a_damaged_rewards_file_is_refused_in_one_line_naming_file_and_item(runs, tmp_path, case, command):
    edit, says = CASES[case]
    folder = damaged(runs, tmp_path, edit)
    args = {"compare": ["compare", str(folder), str(runs / "oracle")],
            "verify": ["verify", str(folder), "--against", str(runs / "oracle")],
            "report": ["report", str(folder), "--out", str(tmp_path / "r.html")],
            "plot": ["plot", str(folder), "--out", str(tmp_path / "plots")],
            "leaderboard-html": ["leaderboard", "build", str(folder), "--out", str(tmp_path / "b.html")]}[command]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {folder / 'rewards.jsonl'}{says}"), lines[0]
    assert not [p for p in tmp_path.iterdir() if p.name in ("r.html", "plots", "b.html")]  # nothing written


def test_the_reader_keeps_a_clean_file_and_a_null_of_an_unparsed_answer(runs, tmp_path):
    rows = load_rewards(runs / "length")
    assert len(rows) == 514 and len({(r.task, r.group_id, r.response_index) for r in rows}) == 514
    file = tmp_path / "rewards.jsonl"
    file.write_text('{"task": "t", "group_id": "g", "response_index": 0, "utility": 1, "reward": null}\n'
                    '{"task": "t", "group_id": "g", "response_index": 1, "utility": 0, "reward": 1e308}\n'
                    '{"task": "u", "group_id": "g", "response_index": 0, "utility": 1, "reward": 2}\n')
    got = load_rewards(file)  # null: no reward (the reader's callers decide); 1e308 is a number
    assert np.isnan(got[0].reward) and got[1].reward == 1e308 and got[2].task == "u"
    file.write_text(file.read_text() + '{"task": "t", "group_id": "g", "response_index": 0, "utility": 1, '
                                       '"reward": null}\n')
    with pytest.raises(RewardsFileError, match=r"line 4: task 't', group 'g', response 0: a duplicate of line 1"):
        load_rewards(file)


def test_rewards_too_far_apart_are_said_so_not_infinite():
    with pytest.raises(ModelError) as caught:
        M.check_reward_range([1e308, -1e308, 0.0])
    assert str(caught.value).startswith("rewards range from -1e+308 to 1e+308: a difference between two of them is "
                                        "beyond the largest float (1.798e+308)")
    assert "infinite" not in str(caught.value)
    # squares that overflow are not rewards that do: sigma is that of the rewards scaled down, scaled up
    big = np.array([3e200, -1e200, 2e200, 0.0])
    assert np.isfinite(M.reward_sigma(big))
    assert M.reward_sigma(big) == pytest.approx(float(np.std(big / 1e200, ddof=1)) * 1e200, rel=1e-15)
    small = np.array([3.0, -1.0, 2.0, 0.0])  # ordinary rewards: the plain formula, bit for bit
    assert M.reward_sigma(small) == float(np.std(small, ddof=1))


def test_an_eval_of_rewards_too_far_apart_fails_its_task_with_that_line(tmp_path):
    rm = tmp_path / "far.py"
    rm.write_text("def score(pairs):\n    return [1e308 if len(r) % 2 else -1e308 for p, r in pairs]\n")
    near = tmp_path / "near.py"
    near.write_text("def score(pairs):\n    return [1e200 * len(r) for p, r in pairs]\n")
    result = runner.invoke(app, ["eval", "--model", f"python:{rm}:score", "--tasks", "ties_sample", "--bootstrap",
                                 "5", "--no-cache", "--out", str(tmp_path / "far")])
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    assert "ModelError: rewards range from -1e+308 to 1e+308" in result.output, result.output
    assert "NaN or infinite" not in result.output and "RuntimeWarning" not in result.output, result.output
    result = runner.invoke(app, ["eval", "--model", f"python:{near}:score", "--tasks", "ties_sample", "--bootstrap",
                                 "5", "--no-cache", "--out", str(tmp_path / "near")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "near" / "results.json").read_text())
    assert doc["tasks"][0]["status"] == "success" and doc["tasks"][0]["sigma"] > 1e200


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt()


@pytest.mark.parametrize("judge", [True, False])
def test_an_interrupted_run_names_the_cache_that_kept_its_work(tmp_path, monkeypatch, judge):
    import rmbench.scoring.suite as suite

    monkeypatch.setattr(suite, "run_plan", _interrupt)
    with ScriptedServer(reply="Rating: 5") as server:
        model = (["--model", "judge:judge-model", "--model-arg", f"base_url={server.base_url}"] if judge
                 else ["--model", "length"])
        result = runner.invoke(app, ["eval", *model, "--tasks", "ties_sample", "--bootstrap", "5",
                                     "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "run")])
    assert result.exit_code == 130, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("interrupted:")]
    if judge:
        assert line.endswith("every call the judge answered so far is in the judge call cache, so the same command "
                             "resumes from it without making those calls again"), line
        assert "score cache" not in line
    else:
        assert line.endswith("every batch scored so far is in the score cache, so the same command resumes from it")


def test_a_judge_run_that_cannot_be_written_names_the_call_cache(tmp_path, monkeypatch):
    def full(fd: int, data: bytes) -> None:
        os.close(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with ScriptedServer(reply="Rating: 5") as server:
        monkeypatch.setattr(files, "_write_all", full)
        result = runner.invoke(app, ["eval", "--model", "judge:judge-model", "--model-arg",
                                     f"base_url={server.base_url}", "--tasks", "ties_sample", "--limit", "2",
                                     "--bootstrap", "5", "--cache-dir", str(tmp_path / "cache"),
                                     "--out", str(tmp_path / "run")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "No space left on device (the disk is full)" in line
    assert "reuses every call the judge call cache kept" in line and "score cache" not in line, line


def test_a_failed_synchronous_retry_counts_the_batch_replies_that_were_kept(tmp_path):
    """Before: "0 finished calls were kept" when the batch's 15 replies were (the count was the
    synchronous retry's only)."""
    import hashlib

    from rmbench.models.judge.batch import make_batch_executor
    from rmbench.models.judge.client import ChatRequest, JudgeServerError
    from tests.support.batch_server import BatchServer

    reqs = [ChatRequest(messages=(("user", f"q{i}"),), max_tokens=8) for i in range(18)]
    keys = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(18)]
    got: dict = {}
    with BatchServer(reply="ok", fail=[15, 16, 17]) as server:
        server.faults += [("status", 500, {})] * 200  # the synchronous retries all fail
        ex = make_batch_executor("openai", base_url=server.base_url, model="judge-model",
                                 state_dir=tmp_path / "state", api_key="sk-test-key-for-kept-lines",
                                 poll_interval=0.02, timeout=5.0, progress=False)
        with pytest.raises(JudgeServerError) as caught:
            ex.complete(reqs, keys, got.__setitem__)
    assert len(got) == 15
    assert str(caught.value).endswith("0 finished calls were kept (of the 3 synchronous retries); with the batch's "
                                      "15 replies, 15 of 18 requests were answered and kept"), str(caught.value)
