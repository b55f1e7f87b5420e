"""The vLLM adapters run for real on vLLM's CPU build, against their transformers twins on the
same folder (float32). Runs only in the virtualenv that ``.ci/vllm_env`` builds:

    .ci/vllm_env && .venv-vllm/bin/python -m pytest -m vllm tests/models/test_vllm.py

Elsewhere every test skips (no vLLM). One vLLM engine per adapter (module-scoped fixtures).

The engines start with ``enforce_eager`` (no torch.compile): about 20 s each on 2 shared CPU
cores instead of about 110-150 s, so the two tests take about 1.5 minutes; vllm_implicit agrees
with implicit to 2.1e-6 relative.
"""

import json
import os
import shutil

import numpy as np
import pytest

from tests.conftest import smollm2_gguf

pytestmark = pytest.mark.vllm
pytest.importorskip("vllm", reason="vLLM is not installed: build its virtualenv with .ci/vllm_env")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache; vLLM's CPU default is sized for servers

from rmbench.core.specs import ModelSpec  # noqa: E402
from rmbench.models import Runtime, build_model  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402

FP32 = Runtime(dtype="float32", device="cpu")
QUESTION = "What is the capital of France?"
ANSWERS = ["The capital of France is Paris.", "The capital of France is London.", "Paris",
           "I don't know, sorry!", "France's capital city is Paris, which lies on the Seine.", "Berlin."]


def requests():
    return [ScoreRequest(QUESTION, r, "g", i) for i, r in enumerate(ANSWERS)]


@pytest.fixture(scope="module")
def causal_folder(tmp_path_factory):
    """The converted SmolLM2 folder with ``architectures`` named in its config: the GGUF
    conversion writes none, and vLLM then resolves the bare backbone (LlamaModel)."""
    smollm2_gguf()
    from rmbench.models.embedded import resolve

    src = resolve("smollm2-135m-instruct")
    out = tmp_path_factory.mktemp("smol") / "causal"
    shutil.copytree(src, out)
    config = json.loads((out / "config.json").read_text())
    config["architectures"] = ["LlamaForCausalLM"]
    (out / "config.json").write_text(json.dumps(config, indent=2))
    return str(out)


@pytest.fixture(scope="module")
def seqcls_folder(causal_folder, tmp_path_factory):
    """SmolLM2's weights under a one-output LlamaForSequenceClassification head, seeded."""
    import torch
    from transformers import AutoTokenizer, LlamaForSequenceClassification

    torch.manual_seed(0)
    model = LlamaForSequenceClassification.from_pretrained(causal_folder, num_labels=1, dtype=torch.float32)
    torch.nn.init.normal_(model.score.weight, std=0.05)
    tok = AutoTokenizer.from_pretrained(causal_folder)
    model.config.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    out = tmp_path_factory.mktemp("smol") / "seqcls"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def max_rel(a, b, floor: float = 1e-12):
    """max |a - b| / max(|a|, floor): relative, or absolute where |a| < floor."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(a), floor)))


def engine_cores() -> list:
    """This process's live vLLM engine-core processes (vLLM titles them ``VLLM::EngineCore``)."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "EngineCore" in child.name() + " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            pass
    return found


def test_vllm_implicit_equals_implicit(causal_folder):
    hf = build_model(ModelSpec.make("i", "implicit", {"model": causal_folder}), FP32).score(requests())
    model = build_model(ModelSpec.make("v", "vllm_implicit", {"model": causal_folder, "enforce_eager": True}), FP32)
    try:
        vl = model.score(requests())
        assert engine_cores(), "the engine-core process is not where this test looks for it"
    finally:
        model.close()
    assert max_rel(hf, vl) < 1e-5, (hf, vl)  # measured 2.1e-6 (6 texts, 2-core CPU)
    # close() stopped vLLM's engine now, not at interpreter exit (where its finalizers had aborted
    # the process after every test passed: exit 134); a second close is harmless.
    assert not engine_cores()
    model.close()


def test_vllm_seqcls_equals_seqcls_through_evaluate(seqcls_folder, tmp_path):
    """The user's path: ``evaluate`` scores a task with each adapter, and the runner closes vLLM's
    engine when scoring ends."""
    from rmbench.results.storage.folder import load_rewards
    from rmbench.scoring.runner import EvalConfig, evaluate

    def rewards(kind):
        eager = (("enforce_eager", "true"),) if kind.startswith("vllm") else ()  # no torch.compile: ~20 s, not ~110 s
        config = EvalConfig(model=f"{kind}:{seqcls_folder}", model_args=eager, tasks=("ties_sample",), runtime=FP32,
                            use_cache=False, limit=4)
        evaluate(config, out_dir=tmp_path / kind)
        return [row.reward for row in load_rewards(tmp_path / kind)]

    hf, vl = rewards("seqcls"), rewards("vllm_seqcls")
    assert len(hf) == len(vl) > 8
    assert not engine_cores()
    # the same last-token head in float32; vLLM's kernels sum in another order: relative to the
    # reward, or absolute for a reward near 0 (whose relative difference says nothing)
    assert max_rel(hf, vl, floor=1.0) < 1e-4, (hf, vl)
