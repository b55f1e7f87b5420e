"""On a CUDA GPU (marked ``gpu``; each test skips, with the reason, where CUDA is not available):
the adapters give the CPU's rewards, prompt KV reuse equals a plain pass, a real out-of-memory
halves the batch and completes, the batch limits come from the free memory, and the accelerate
engine runs on one GPU. Run them with ``python -m pytest -m gpu tests/models/test_gpu.py``."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rmbench.core.specs import ModelSpec  # noqa: E402
from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.models import Runtime, build_model  # noqa: E402
from rmbench.models.batching import CUDA_TOKEN_RANGE, batch_limits  # noqa: E402
from rmbench.scoring.backends import LocalBackend  # noqa: E402
from rmbench.scoring.engine import score_groups  # noqa: E402

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="needs a CUDA GPU (torch.cuda.is_available() is False)")]

CPU = Runtime(dtype="float32", device="cpu")
GPU32 = Runtime(dtype="float32", device="cuda")


def groups(n=6):
    words = "Pick a number between 1 and 10 . The answer is 7 Name a primary color red blue yellow".split()
    rng = np.random.default_rng(0)
    text = lambda k: " ".join(rng.choice(words, k))  # noqa: E731
    return [ComparisonGroup(f"g{i}", text(12 + 3 * i), [text(int(k)) for k in rng.integers(2, 40, 4)], [1, 0, 0, 0])
            for i in range(n)]


def specs(tiny, tmp_path=None):
    out = {"implicit": ModelSpec.make("i", "implicit", {"model": str(tiny["causal"])}),
           "implicit+ref": ModelSpec.make("r", "implicit", {"model": str(tiny["causal"]),
                                                            "ref": str(tiny["causal_ref"])}),
           "seqcls": ModelSpec.make("s", "seqcls", {"model": str(tiny["seqcls"])}),
           "generative": ModelSpec.make("g", "generative", {"model": str(tiny["causal"])})}
    if tmp_path is not None:  # an encoder with a linear head from a file
        from safetensors.torch import save_file

        save_file({"weight": torch.linspace(-1, 1, 32), "bias": torch.tensor([0.5])},
                  str(tmp_path / "head.safetensors"))
        out["bert"] = ModelSpec.make("b", "linear", {"model": str(tiny["bert"]),
                                                     "head": str(tmp_path / "head.safetensors"), "template": "plain"})
    return out


@pytest.mark.parametrize("family", ["implicit", "implicit+ref", "seqcls", "bert", "generative"])
def test_adapters_on_the_gpu_give_the_cpu_rewards(tiny, tmp_path, family):
    spec, data = specs(tiny, tmp_path)[family], groups()
    cpu, _ = score_groups(build_model(spec, CPU), data, CPU)
    gpu32, stats = score_groups(build_model(spec, GPU32), data, GPU32)
    assert np.allclose(gpu32, cpu, rtol=1e-4, atol=1e-4), np.max(np.abs(gpu32 - cpu))  # TF32 is off by default
    bf16 = Runtime(dtype="auto", device="cuda")
    model = build_model(spec, bf16)
    assert model.dtype == "bfloat16"  # auto on a GPU with bf16 units
    half, _ = score_groups(model, data, bf16)
    scale = max(float(np.std(cpu)), 1.0)
    assert np.max(np.abs(half - cpu)) / scale < 0.1  # bf16 keeps 8 bits of mantissa
    assert stats.batch_limits.startswith("CUDA free memory") and stats.max_batch == 1024
    assert stats.token_budget in range(CUDA_TOKEN_RANGE[0], CUDA_TOKEN_RANGE[1] + 1, 1024)


def test_prompt_kv_reuse_equals_a_plain_pass_on_the_gpu(tiny):
    data = groups(8)
    shared = build_model(specs(tiny)["implicit"], GPU32)
    plain = build_model(specs(tiny)["implicit"], GPU32)
    plain.shares_prefix = False
    a, sa = score_groups(shared, data, GPU32)
    b, sb = score_groups(plain, data, GPU32)
    assert sa.work_tokens < sb.work_tokens  # the prompts ran once per batch
    assert np.allclose(a, b, rtol=1e-5, atol=1e-5), np.max(np.abs(a - b))


def test_batch_limits_come_from_the_free_memory(tiny):
    model = build_model(specs(tiny)["implicit+ref"], Runtime(device="cuda"))
    limits = batch_limits(model, Runtime(device="cuda"))
    low, high = CUDA_TOKEN_RANGE
    assert low <= limits.token_budget <= high and limits.max_batch == 1024
    assert model.weights_loaded and model.reference.weights_loaded  # both parts' weights counted before measuring
    assert "GiB free" in limits.chosen_by
    assert batch_limits(model, Runtime(device="cuda", token_budget=777)).token_budget == 777  # the flag wins


def test_a_real_cuda_out_of_memory_halves_the_batch_and_completes(tiny, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    from tests.support.tiny_models import build_tokenizer

    tok = build_tokenizer()
    config = LlamaConfig(vocab_size=len(tok), hidden_size=512, intermediate_size=2048, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=4096,
                         pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    runtime = Runtime(dtype="float32", device="cuda", token_budget=1 << 20, max_batch=4096)  # one batch of all
    spec = ModelSpec.make("m", "implicit", {"model": str(tmp_path / "m")})
    data = [ComparisonGroup(f"g{i}", f"Pick a number {i}. " * 40, [f"The answer is {j}. " * 60 for j in range(8)],
                            [1] + [0] * 7) for i in range(8)]
    model = build_model(spec, runtime)
    model.model  # noqa: B018 - weights first
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    whole, stats = score_groups(model, data, runtime)
    need = torch.cuda.max_memory_allocated() - base
    assert stats.batches_computed == 1 and stats.oom_splits == 0
    torch.cuda.empty_cache()
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + 0.3 * need) / total)
    try:
        backend = LocalBackend()
        split, stats = score_groups(model, data, runtime, backend=backend)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
    assert stats.oom_splits >= 1 and "OutOfMemoryError" in backend.memory.first
    assert np.allclose(split, whole, rtol=1e-4, atol=1e-4)


def test_eval_on_the_gpu_records_the_device(tiny, tmp_path):
    from rmbench.scoring.runner import EvalConfig, evaluate

    record = evaluate(EvalConfig(model=f"implicit:{tiny['causal']}", tasks=("ties_sample",), limit=6, n_bootstrap=10,
                                 runtime=Runtime(device="cuda"), use_cache=False), out_dir=tmp_path / "run")
    stats, model = record.execution.stats, record.execution.model
    assert model["dtype"] == "bfloat16" and model["device"] == "cuda"
    assert stats.ran_with["gpu"] == torch.cuda.get_device_name() and stats.ran_with["attention"] == "sdpa"
    assert stats.batch_limits.startswith("CUDA free memory") and record.execution.runtime["token_budget"] is None


@pytest.mark.distributed
def test_accelerate_engine_with_one_gpu_equals_local(tiny, tmp_path):
    pytest.importorskip("accelerate", reason="the accelerate engine needs pip install 'rmbench[accelerate]'")
    args = ["eval", "--model", f"implicit:{tiny['causal']}", "--tasks", "ties_sample", "--limit", "8", "--dtype",
            "float32", "--bootstrap", "0", "--no-cache"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "rmbench"]
    run = subprocess.run(launch + args + ["--engine", "accelerate", "--out", str(tmp_path / "acc")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    results = json.loads((tmp_path / "acc" / "results.json").read_text())
    backend = results["execution"]["backend"]
    assert (backend["name"], backend["workers"]) == ("accelerate", 1) and backend["device"].startswith("cuda")
    assert results["execution"]["model"]["device"] == backend["device"]
    local = subprocess.run([sys.executable, "-m", "rmbench"] + args + ["--device", "cpu", "--out",
                                                                       str(tmp_path / "cpu")],
                           capture_output=True, text=True, env=env, timeout=300)
    assert local.returncode == 0, local.stderr[-2000:]

    def rewards(folder):
        return np.array([json.loads(line)["reward"] for line in (folder / "rewards.jsonl").read_text().splitlines()])

    assert np.allclose(rewards(tmp_path / "acc"), rewards(tmp_path / "cpu"), rtol=1e-4, atol=1e-4)
