"""The engine's batch limits per device (rmbench.models.batching): the CUDA rule by hand, its
bounds, and what a run records; the GPU side runs in tests/test_gpu.py."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmbench.models import batching as B
from rmbench.models.base import Runtime
from rmbench.models.baselines import LengthRM

LLAMA_8B = B.Shape(hidden=4096, ffn=14336, layers=32, kv_width=8 * 128, vocab=128256, context=131072)


def test_bytes_per_token_by_hand():
    # bf16: 2 x (8 x 4096 + 4 x 14336) = 180,224 activations; KV reuse adds 2 x 2 x 32 x 1024 = 131,072;
    # the boolean mask's width is the context capped at 8,192.
    assert B.bytes_per_token(LLAMA_8B, 2, kv_reuse=False) == 180_224 + 8192
    assert B.bytes_per_token(LLAMA_8B, 2, kv_reuse=True) == 180_224 + 131_072 + 8192
    short = B.Shape(hidden=64, ffn=128, layers=2, kv_width=32, vocab=400, context=256)
    assert B.bytes_per_token(short, 4, kv_reuse=True) == 4 * (512 + 512 + 128) + 256


def test_cuda_budget_by_hand_and_its_bounds():
    per_token = B.bytes_per_token(LLAMA_8B, 2, kv_reuse=True)  # 319,488
    # An H200 after 15 GiB of 8B weights: 0.5 x (124 GiB - 1 GiB) / 319,488 = 206,709 -> capped at 131,072.
    assert B.cuda_token_budget(124 * 2**30, 2**30, per_token) == 131072
    # A 24 GiB card after the weights: 0.5 x 8 GiB / 319,488 = 13,443 tokens -> 13,312 (a multiple of 1,024).
    assert B.cuda_token_budget(8 * 2**30, 0, per_token) == 13312
    assert B.cuda_token_budget(2**30, 0, per_token) == 8192  # never below the CPU's budget
    assert B.cuda_token_budget(0, 2**30, per_token) == 8192  # less free than the workspace


@given(st.floats(0, 2**40), st.floats(0, 2**33), st.integers(1, 10**7))
def test_cuda_budget_is_a_bounded_multiple_of_1024_and_grows_with_free_memory(free, workspace, per_token):
    low, high = B.CUDA_TOKEN_RANGE
    budget = B.cuda_token_budget(free, workspace, per_token)
    assert low <= budget <= high and budget % 1024 == 0
    assert B.cuda_token_budget(free * 2, workspace, per_token) >= budget


def test_lm_head_chunk():
    assert B.lm_head_chunk(128256, on_cuda=False) == 256
    assert B.lm_head_chunk(128256, on_cuda=True) == 512 * 2**20 // (4 * 128256) == 1046
    assert B.lm_head_chunk(10**7, on_cuda=True) == 256  # never below the CPU's
    assert B.lm_head_workspace(128256, 2, on_cuda=True) == 1046 * 128256 * 10


def test_limits_cpu_default_flags_and_adapter_cap():
    assert B.batch_limits(LengthRM(), Runtime()) == B.BatchLimits(8192, 64, "the CPU default")
    assert B.batch_limits(LengthRM(), Runtime(token_budget=500, max_batch=7)) == B.BatchLimits(500, 7, "--token-budget")
    capped = LengthRM()
    capped.max_batch = 5
    assert B.batch_limits(capped, Runtime()).max_batch == 5


def test_shape_reads_llama_and_gpt2_configs():
    transformers = pytest.importorskip("transformers")
    llama = transformers.LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                                     num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                                     max_position_embeddings=131072)
    assert B.Shape.of(llama) == LLAMA_8B
    gpt2 = transformers.GPT2Config(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)
    assert B.Shape.of(gpt2) == B.Shape(hidden=768, ffn=3072, layers=12, kv_width=768, vocab=50257, context=1024)
