"""Distributed engines give the local engine's rewards: Ray Data with 2 CPU actors on a local
cluster, and accelerate with 2 CPU processes (gloo); both write through the same score cache."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from rmbench.errors import ConfigError
from rmbench.models import Runtime
from rmbench.scoring.runner import EvalConfig, evaluate

FP32 = Runtime(dtype="float32", device="cpu", max_batch=4)


def _rewards(results_or_dir) -> list[float]:
    rows = [json.loads(line) for line in (results_or_dir / "rewards.jsonl").read_text().splitlines()]
    return [r["reward"] for r in rows]


def test_unknown_engine_is_a_config_error():
    with pytest.raises(ConfigError, match="--engine 'spark'"):
        EvalConfig(engine="spark")


@pytest.mark.distributed
def test_ray_engine_equals_local_and_resumes_through_the_cache(tiny, tmp_path):
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rmbench[ray]'")
    import ray

    model = f"implicit:{tiny['causal']}"
    base = dict(model=model, tasks=("ties_sample",), limit=8, n_bootstrap=0, runtime=FP32)
    local = evaluate(EvalConfig(**base, cache_dir=str(tmp_path / "c_local")), out_dir=tmp_path / "local")
    try:
        ray_config = dict(engine="ray", engine_args={"workers": 2}, cache_dir=str(tmp_path / "c_ray"))
        first = evaluate(EvalConfig(**base, **ray_config), out_dir=tmp_path / "ray")
        assert first.execution.backend["name"] == "ray" and first.execution.backend["workers"] == 2
        assert first.execution.stats.computed == local.execution.stats.computed > 0
        assert np.allclose(_rewards(tmp_path / "ray"), _rewards(tmp_path / "local"), rtol=1e-6, atol=1e-6)
        # The driver wrote every worker's scores to the cache: a rerun computes nothing.
        again = evaluate(EvalConfig(**base, **ray_config))
        assert again.execution.stats.computed == 0
    finally:
        ray.shutdown()


@pytest.mark.distributed
def test_ray_worker_with_other_weights_fails_loudly(tiny, tmp_path):
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rmbench[ray]'")
    import ray

    from rmbench.core.specs import ModelSpec
    from rmbench.core.types import ComparisonGroup
    from rmbench.errors import ModelError
    from rmbench.models import build_model
    from rmbench.scoring.engine import score_groups
    from rmbench.scoring.ray_backend import RayBackend

    spec = ModelSpec.make("m", "implicit", {"model": str(tiny["causal"])})
    other = ModelSpec.make("m", "implicit", {"model": str(tiny["causal_ref"])})
    model = build_model(spec, FP32)
    groups = [ComparisonGroup("g", "Pick a number", ["7", "8"], [1, 0])]
    try:
        with pytest.raises(ModelError, match="fingerprint"):
            score_groups(model, groups, FP32, backend=RayBackend(concurrency=1),
                         factory=lambda: build_model(other, FP32))
    finally:
        ray.shutdown()


@pytest.mark.distributed
def test_accelerate_engine_with_two_cpu_processes_equals_local(tiny, tmp_path):
    pytest.importorskip("accelerate", reason="the accelerate engine needs pip install 'rmbench[accelerate]'")
    args = ["eval", "--model", f"implicit:{tiny['causal']}", "--tasks", "ties_sample", "--limit", "8", "--dtype",
            "float32",
            "--bootstrap", "0"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "OMP_NUM_THREADS": "1"}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
              "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port",
              "29517",
              "-m", "rmbench"]
    run = subprocess.run(launch + args + ["--engine", "accelerate", "--out", str(tmp_path / "acc")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("Wrote run folder") == 1  # rank 0 alone writes and prints
    results = json.loads((tmp_path / "acc" / "results.json").read_text())
    assert results["execution"]["backend"]["name"] == "accelerate" and results["execution"]["backend"]["workers"] == 2
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg_local")
    local = subprocess.run([sys.executable, "-m", "rmbench"] + args + ["--out", str(tmp_path / "local")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert local.returncode == 0, local.stderr[-2000:]
    assert np.allclose(_rewards(tmp_path / "acc"), _rewards(tmp_path / "local"), rtol=1e-6, atol=1e-6)


def test_vllm_adapters_import_lazily_and_say_what_is_missing():
    import importlib.util

    from rmbench.models import build_model, parse_model_spec

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here; this checks the error on machines without it")
    for kind in ("vllm_implicit", "vllm_seqcls"):
        with pytest.raises(ConfigError, match=r"pip install 'rmbench\[vllm\]'"):
            build_model(parse_model_spec(f"{kind}:some/model"))


def test_vllm_prompt_logprobs_sum_over_the_response_positions():
    """The arithmetic on vLLM's documented ``prompt_logprobs`` layout (entry j: token id -> Logprob,
    entry 0 None); the vLLM run itself needs a GPU."""
    from types import SimpleNamespace

    from rmbench.models.vllm import summed_prompt_logprobs

    ids = [5, 7, 9, 11]
    lp = [None, {7: SimpleNamespace(logprob=-1.0)}, {9: SimpleNamespace(logprob=-0.5), 3: SimpleNamespace(logprob=-2)},
          {11: SimpleNamespace(logprob=-0.25)}]
    assert summed_prompt_logprobs(lp, ids, [2, 3]) == -0.75
    with pytest.raises(ConfigError, match="token 0"):
        summed_prompt_logprobs(lp, ids, [0])


# Notes its worker's pid (a file per process) and takes its time, so that a worker can be killed mid-run.
KILLABLE_RM = """
import os, time

def score(pairs):
    open(os.path.join(os.environ["RM_PIDS"], str(os.getpid())), "w").close()
    time.sleep(float(os.environ.get("RM_SLEEP", "0")))
    return [len(r) * 0.37 + sum(map(ord, r)) % 11 for _, r in pairs]
"""


@pytest.mark.distributed
def test_a_ray_worker_killed_mid_run_is_replaced_and_the_run_equals_a_clean_one(tmp_path, monkeypatch):
    """SIGKILL to a Ray actor's process, by pid, while it scores (issue 24): Ray restarts the
    actor and retries its batch, and the run's rewards are a clean run's."""
    pytest.importorskip("ray.data", reason="the ray engine needs pip install 'rmbench[ray]'")
    import signal
    import threading
    import time

    import ray

    (tmp_path / "rm.py").write_text(KILLABLE_RM)
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("RM_PIDS", str(pids))
    base = dict(model=f"python:{tmp_path / 'rm.py'}:score", model_args=(("max_batch", 8),), n_bootstrap=10)
    clean = evaluate(EvalConfig(**base, use_cache=False), out_dir=tmp_path / "clean")
    for p in pids.iterdir():
        p.unlink()
    monkeypatch.setenv("RM_SLEEP", "0.05")  # about 70 batches: a few seconds of scoring on 2 workers
    killed: list[int] = []

    def kill_a_worker():
        deadline = time.monotonic() + 300  # Ray's start-up included
        while time.monotonic() < deadline and not killed:
            workers = [int(p.name) for p in pids.iterdir() if int(p.name) != os.getpid()]
            if workers:
                time.sleep(0.3)  # a few batches in
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
            time.sleep(0.02)

    killer = threading.Thread(target=kill_a_worker, daemon=True)
    killer.start()
    try:
        run = evaluate(EvalConfig(**base, engine="ray", engine_args={"workers": 2}, cache_dir=str(tmp_path / "c")),
                       out_dir=tmp_path / "ray")
    finally:
        ray.shutdown()
        killer.join(timeout=5)
    assert killed, "no worker was seen scoring"
    assert len({p.name for p in pids.iterdir()}) > 2  # a worker besides the two first: the killed one's successor
    assert run.execution.stats.computed == clean.execution.stats.computed
    assert (tmp_path / "ray" / "rewards.jsonl").read_bytes() == (tmp_path / "clean" / "rewards.jsonl").read_bytes()
