"""Step scoring runs through the one scoring engine (rmbench.scoring.engine.score_requests): the
default cache with no cache flag, a resume after SIGKILL that scores only the missing batches,
true engine stats, a plugin engine that receives step requests through the same Backend seam,
and Ray giving the local engine's step scores bit for bit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rmbench
from rmbench import Backend, BackendOptions, Engine, MemoryRetries, register_engine, score_batch
from rmbench.models import Runtime
from rmbench.models.base import ScoreRequest
from rmbench.models.step_model import StepRequest
from rmbench.scoring.engines import ENGINES
from rmbench.scoring.requests import request_from_json, request_to_json
from tests.tasks.test_processbench_task import ROWS, write_lines

# Each call appends one line per solution to $PRM_CALLS and, at the call numbered $PRM_DIE_AT,
# kills its own process (SIGKILL: nothing runs after it, as a machine that loses power).
COUNTING_PRM = """
import os, signal

def score(items):
    log = os.environ["PRM_CALLS"]
    with open(log, "a") as f:
        f.write("".join(steps[0] + "\\n" for _, steps in items))
    calls = len(open(log).read().splitlines())
    if os.environ.get("PRM_DIE_AT") and calls >= int(os.environ["PRM_DIE_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return [[float(s.rsplit("p=", 1)[1]) for s in steps] for _, steps in items]
"""

N_SOLUTIONS = len(ROWS)
N_STEPS = sum(len(r["steps"]) for r in ROWS)


@pytest.fixture
def prm(tmp_path, monkeypatch):
    (tmp_path / "prm.py").write_text(COUNTING_PRM)
    calls = tmp_path / "calls.log"
    monkeypatch.setenv("PRM_CALLS", str(calls))
    data = write_lines(tmp_path / "pb.jsonl", ROWS)

    def config(**extra):
        return rmbench.EvalConfig(model=f"python-prm:{tmp_path / 'prm.py'}:score", tasks=("processbench",),
                                  data=(("processbench", str(data)),), n_bootstrap=0, **extra)

    def scored() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    return config, scored


def test_steps_are_cached_by_default_and_a_rerun_scores_nothing(prm, tmp_path):
    config, scored = prm
    first = rmbench.evaluate(config(), out_dir=tmp_path / "one")  # no cache flag: the default cache
    assert scored() == N_SOLUTIONS
    stats = first.execution.stats
    assert (stats.requests, stats.distinct, stats.cached, stats.computed) == (N_SOLUTIONS, N_SOLUTIONS, 0, N_SOLUTIONS)
    assert stats.batches_computed >= 1 and stats.real_tokens > 0 and stats.padded_tokens >= stats.real_tokens
    assert stats.token_budget is not None and stats.plan is not None and stats.seconds > 0
    again = rmbench.evaluate(config(), out_dir=tmp_path / "two")
    assert scored() == N_SOLUTIONS  # every solution's steps came from the cache
    assert (again.execution.stats.cached, again.execution.stats.computed) == (N_SOLUTIONS, 0)
    assert (tmp_path / "one" / "rewards.jsonl").read_text() == (tmp_path / "two" / "rewards.jsonl").read_text()
    rmbench.evaluate(config(use_cache=False))  # --no-cache: scored again, nothing read
    assert scored() == 2 * N_SOLUTIONS


def test_a_killed_step_run_resumes_with_only_the_missing_batches(prm, tmp_path):
    config, scored = prm
    runtime = Runtime(max_batch=1)  # one solution per batch, so a batch is a solution
    driver = (f"import rmbench, json\n"
              f"from rmbench.models import Runtime\n"
              f"rmbench.evaluate(rmbench.EvalConfig(model={'python-prm:' + str(tmp_path / 'prm.py') + ':score'!r}, "
              f"tasks=('processbench',), data={(('processbench', str(tmp_path / 'pb.jsonl')),)!r}, n_bootstrap=0, "
              f"runtime=Runtime(max_batch=1), "
              f"cache_dir={str(tmp_path / 'cache')!r}))\n")
    env = {**os.environ, "PRM_DIE_AT": "5", "PYTHONPATH": os.pathsep.join([str(Path(rmbench.__file__).parents[1]),
                                                                        os.environ.get("PYTHONPATH", "")])}
    killed = subprocess.run([sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert scored() == 5  # four whole batches written to the cache, the fifth killed mid-batch
    resumed = rmbench.evaluate(config(runtime=runtime, cache_dir=str(tmp_path / "cache")))
    assert scored() == 5 + (N_SOLUTIONS - 4)  # only the missing batches: the killed one and the rest
    stats = resumed.execution.stats
    assert (stats.cached, stats.computed, stats.batches_computed) == (4, N_SOLUTIONS - 4, N_SOLUTIONS - 4)
    clean = rmbench.evaluate(config(runtime=runtime, use_cache=False))
    assert [m.to_json() for m in resumed.records()] == [m.to_json() for m in clean.records()]


class CountingBackend:
    """A plugin's engine: every batch in this process, recording what kind of request it got."""

    is_main = True
    scores_here = True
    device = None

    def __init__(self, options: BackendOptions) -> None:
        self.memory, self.kinds = MemoryRetries(), []

    def run(self, model, factory, batches):
        for j, batch in enumerate(batches):
            self.kinds += [type(r).__name__ for r in batch]
            yield j, score_batch(model, batch, self.memory)

    def agree(self, limits):
        return limits

    def describe(self):
        return {"name": "counting", "workers": 1}


@pytest.fixture
def counting_engine():
    built: list[CountingBackend] = []

    def build(options: BackendOptions) -> Backend:
        built.append(CountingBackend(options))
        return built[-1]

    register_engine("counting", Engine(build=build), description="records request kinds")
    yield built
    ENGINES._entries.pop("counting")


def test_a_plugin_engine_receives_step_requests_through_the_backend_seam(prm, counting_engine, tmp_path):
    config, _ = prm
    local = rmbench.evaluate(config(use_cache=False), out_dir=tmp_path / "local")
    plugin = rmbench.evaluate(config(use_cache=False, engine="counting"), out_dir=tmp_path / "plugin")
    (backend,) = counting_engine
    assert backend.kinds == ["StepRequest"] * N_SOLUTIONS
    assert plugin.execution.backend == {"name": "counting", "workers": 1}
    assert (tmp_path / "plugin" / "rewards.jsonl").read_text() == (tmp_path / "local" / "rewards.jsonl").read_text()
    assert plugin.execution.stats.computed == local.execution.stats.computed == N_SOLUTIONS


def test_score_batch_scores_steps_as_one_flat_array_and_requests_round_trip_as_json(prm, tmp_path):
    from rmbench.core.specs import ModelSpec
    from rmbench.models import build_model

    model = build_model(ModelSpec(name="p", kind="python-prm", args={"target": f"{tmp_path / 'prm.py'}:score"}))
    batch = [StepRequest("q", ("a p=0.25", "b p=0.5"), "s1"), StepRequest("q", ("c p=1",), "s2")]
    assert score_batch(model, batch).tolist() == [0.25, 0.5, 1.0]
    for request in (*batch, ScoreRequest("p", "r", "g", 2, None, ("x",), "sub")):
        assert request_from_json(json.loads(json.dumps(request_to_json(request)))) == request


@pytest.mark.distributed
def test_ray_scores_a_prm_on_processbench_as_local_does_bit_for_bit(tmp_path, prm_checkpoints):
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rmbench[ray]'")
    import ray

    folder = prm_checkpoints["trl"]
    data = write_lines(tmp_path / "pb.jsonl", ROWS)
    base = dict(model=f"prm:{folder}", tasks=("processbench",), data=(("processbench", str(data)),),
                n_bootstrap=0, runtime=Runtime(dtype="float32", device="cpu", max_batch=4))
    local = rmbench.evaluate(rmbench.EvalConfig(**base, cache_dir=str(tmp_path / "c_local")),
                             out_dir=tmp_path / "local")
    try:
        remote = rmbench.evaluate(rmbench.EvalConfig(**base, engine="ray", engine_args={"workers": 2},
                                                     cache_dir=str(tmp_path / "c_ray")), out_dir=tmp_path / "ray")
        assert remote.execution.backend["name"] == "ray"
        assert remote.execution.stats.computed == local.execution.stats.computed == N_SOLUTIONS
        rewards = [json.loads(line)["reward"] for line in (tmp_path / "ray" / "rewards.jsonl").read_text().splitlines()]
        want = [json.loads(line)["reward"] for line in (tmp_path / "local" / "rewards.jsonl").read_text().splitlines()]
        assert len(rewards) == N_STEPS and np.array_equal(rewards, want)  # bit for bit
        again = rmbench.evaluate(rmbench.EvalConfig(**base, engine="ray", engine_args={"workers": 2},
                                                    cache_dir=str(tmp_path / "c_ray")))
        assert again.execution.stats.computed == 0  # the driver cached every worker's step scores
    finally:
        ray.shutdown()


@pytest.mark.distributed
def test_accelerate_scores_steps_with_two_cpu_processes_as_local_does(prm, tmp_path):
    pytest.importorskip("accelerate", reason="the accelerate engine needs pip install 'rmbench[accelerate]'")
    args = ["eval", "--model", f"python-prm:{tmp_path / 'prm.py'}:score", "--tasks", "processbench", "--data",
            f"processbench={tmp_path / 'pb.jsonl'}", "--bootstrap", "0", "--token-budget", "64"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "OMP_NUM_THREADS": "1"}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
              "29519", "-m", "rmbench"]
    run = subprocess.run(launch + args + ["--engine", "accelerate", "--out", str(tmp_path / "acc")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((tmp_path / "acc" / "results.json").read_text())
    backend = results["execution"]["backend"]
    assert (backend["name"], backend["workers"]) == ("accelerate", 2)
    assert results["execution"]["stats"]["computed"] == N_SOLUTIONS
    local = subprocess.run([sys.executable, "-m", "rmbench"] + args + ["--out", str(tmp_path / "local")],
                           capture_output=True, text=True, env={**env, "XDG_CACHE_HOME": str(tmp_path / "xdg2")},
                           timeout=300)
    assert local.returncode == 0, local.stderr[-2000:]
    assert (tmp_path / "acc" / "rewards.jsonl").read_text() == (tmp_path / "local" / "rewards.jsonl").read_text()
