"""Shared transformers machinery: dtype and device choice, formatting, the response boundary."""

import pytest

torch = pytest.importorskip("torch")

from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models.hf import identity, loading  # noqa: E402
from rmbench.models.hf import rendering as hf  # noqa: E402
from rmbench.models.hf.rendering import response_token_positions  # noqa: E402


def test_dtype_auto_follows_the_cpu(monkeypatch):
    monkeypatch.setattr(loading, "cpu_has_bf16", lambda: True)
    assert loading.resolve_dtype("auto", "cpu") == "bfloat16"
    assert loading.resolve_dtype("auto", "auto") == "bfloat16"  # decided without importing torch
    monkeypatch.setattr(loading, "cpu_has_bf16", lambda: False)
    assert loading.resolve_dtype("auto", "cpu") == "float32"
    assert loading.resolve_dtype("auto", "cuda") == "bfloat16"
    monkeypatch.setattr(loading, "gpu_lacks_bf16", lambda: True)  # a V100 or T4: half precision instead
    assert loading.resolve_dtype("auto", "cuda") == "float16" and loading.resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(loading, "gpu_lacks_bf16", lambda: False)
    assert loading.resolve_dtype("auto", "auto") == ("bfloat16" if torch.cuda.is_available() else "float32")
    assert loading.resolve_dtype("fp16", "cpu") == "float16"
    assert loading.torch_dtype(loading.resolve_dtype("bf16", "cpu")) == torch.bfloat16
    with pytest.raises(ConfigError, match=r"^--dtype must be one of 'auto', 'float32', 'bfloat16', 'float16', "
                                          r"got 'fp8'$"):
        loading.resolve_dtype("fp8", "cpu")


def test_device_checks():
    assert loading.resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            loading.resolve_device("cuda")


def test_response_boundary_moves_trailing_whitespace_into_the_response():
    context = "<|im_start|>assistant\n"
    assert hf.response_boundary(context, context + "Paris<|im_end|>\n") == len(context) - 1
    assert hf.response_boundary("Q: x\n\n", "Q: x\n\nA") == 4
    # a template that rewrites the context: the common prefix decides
    assert hf.response_boundary("abcX", "abcYresponse") == 3


def test_response_tokens_include_the_one_spanning_the_boundary():
    # text "ab|cd" with the boundary at 2; token (1, 3) spans it and belongs to the response
    offsets = [(0, 0), (0, 1), (1, 3), (3, 4), (0, 0)]
    mask = [1, 1, 1, 1, 0]
    assert response_token_positions(offsets, mask, 2) == [2, 3]


def test_formatter_modes(tiny):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny["causal"])
    chat = hf.Formatter(tok)
    context, full = chat.context_and_full("hi", "yo")
    assert chat.chat and full.startswith(context) and full.endswith("yo<|im_end|>\n")
    plain = hf.Formatter(tok, "plain")
    assert plain.context_and_full("hi", "yo") == ("hi\n\n", "hi\n\nyo") and plain.add_special_tokens
    with pytest.raises(ConfigError, match="template must be"):
        hf.Formatter(tok, "jinja")
    with_system = hf.Formatter(tok, system_prompt="Be brief.")
    assert with_system.context_and_full("hi", "yo")[0].startswith("<|im_start|>system\nBe brief.")


def test_folder_fingerprint_changes_with_content(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"abc")
    a = identity.folder_fingerprint(tmp_path)
    assert a == identity.folder_fingerprint(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"abd")
    assert identity.folder_fingerprint(tmp_path) != a


def test_sparse_dropout_has_the_distribution_of_f_dropout():
    """Zeros drawn as Geometric(p) gaps: an iid Bernoulli(p) mask, the rest scaled by 1/(1-p)."""
    from rmbench.models.hf.dropout import drop, sparse_dropout

    n, p = 1_000_000, 0.02
    torch.manual_seed(0)
    out = sparse_dropout(torch.ones(n), p)
    zeros = out == 0
    sd = (n * p * (1 - p)) ** 0.5
    assert abs(int(zeros.sum()) - n * p) < 5 * sd  # the count: Binomial(n, p)
    assert torch.allclose(out[~zeros], torch.tensor(1 / (1 - p)))
    gaps = torch.diff(torch.nonzero(zeros).flatten()).double()
    assert abs(gaps.mean().item() - 1 / p) < 5 * (((1 - p) / p ** 2) / len(gaps)) ** 0.5  # Geometric(p) gaps
    z = zeros.double()
    assert abs(torch.corrcoef(torch.stack([z[:-1], z[1:]]))[0, 1].item()) < 5 / n ** 0.5  # independent neighbours
    torch.manual_seed(1)
    a = sparse_dropout(torch.ones(3, 7, 5), p)
    torch.manual_seed(1)
    assert torch.equal(a, sparse_dropout(torch.ones(3, 7, 5), p))  # seeded
    assert sparse_dropout(torch.ones(0), p).numel() == 0
    torch.manual_seed(2)
    high = drop(torch.ones(n), 0.5)  # high rates use F.dropout
    assert abs(float((high == 0).double().mean()) - 0.5) < 0.005


def test_discretize_batches_and_shares_prompts_like_its_inner_model(tiny):
    from rmbench.models import Runtime
    from rmbench.models.base import ScoreRequest
    from rmbench.models.discretize import DiscretizedRM

    d = DiscretizedRM({"name": "i", "kind": "implicit", "args": {"model": str(tiny["causal"])}},
                      runtime=Runtime(dtype="float32", device="cpu"))
    batch = [ScoreRequest("Name a colour.", r, "g", i) for i, r in enumerate(["red", "blue", "a b c"])]
    assert d.prefix_lengths(batch) == d.inner.prefix_lengths(batch) and d.lengths(batch) == d.inner.lengths(batch)
    samples = d.score(batch)
    assert samples.shape == (3, 4) and (samples.std(axis=1) > 0).all()  # dropout is on
    assert (d.score(batch) == samples).all()  # seeded by the batch's inputs
