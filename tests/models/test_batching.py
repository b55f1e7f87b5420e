"""The engine's batch limits per device (rmbench.models.batching): the CUDA rule by hand, its
bounds, and what a run records; the GPU side runs in tests/models/test_gpu.py."""

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


def test_plan_for_on_a_cpu_is_the_plan_of_before():
    from rmbench.scoring.engine import plan_batches, plan_for, plan_shared_batches

    lengths, prefix, prompts = [50, 40, 30, 20], [10, 10, 5, 5], ["a", "a", "b", "b"]
    cpu = B.BatchLimits(100, 64, "test")
    assert plan_for(lengths, None, prompts, cpu) == (plan_batches(lengths, 100, 64), [0] * 4,
                                                     "length-sorted, padding <= 10%")
    assert plan_for(lengths, prefix, prompts, cpu) == (plan_shared_batches(lengths, prefix, prompts, 100, 64), prefix,
                                                       "prompt KV reuse, padding <= 10%")


def test_plan_for_weighs_padding_against_the_cost_of_a_pass_by_hand():
    from rmbench.scoring.engine import plan_for

    lengths = [100] * 10 + [85] * 10  # 85 < 90% of 100: two batches at 10% padding, one at 20%
    # Overhead 100 tokens: 10% -> 1,000 + 850 + 2 x 100 = 2,050; 20% -> 2,000 + 100 = 2,100: two batches.
    plan, _, name = plan_for(lengths, None, ["p"] * 20, B.BatchLimits(10**6, 64, "test", batch_overhead=100))
    assert len(plan) == 2 and name.startswith("length-sorted, padding <= 10%")
    # Overhead 4,096: 1,850 + 8,192 against 2,000 + 4,096: one batch.
    plan, _, name = plan_for(lengths, None, ["p"] * 20, B.BatchLimits(10**6, 64, "test", batch_overhead=4096))
    assert len(plan) == 1 and name.startswith("length-sorted, padding <= 20%") and "4096 tokens per forward" in name


def test_plan_for_reuses_long_prompts_and_not_short_ones_where_a_pass_costs():
    from rmbench.scoring.engine import plan_for

    limits = B.BatchLimits(10**6, 1024, "test", batch_overhead=4096)
    prompts = [f"p{i // 4}" for i in range(64)]  # 16 prompts x 4 responses
    long = [1000 + 50 + i % 4 for i in range(64)]  # a 1,000-token prompt, answers of ~50
    plan, prefix, name = plan_for(long, [1000] * 64, prompts, limits)
    assert name.startswith("prompt KV reuse") and prefix == [1000] * 64
    short = [10 + 200 + 10 * (i % 4) for i in range(64)]  # a 10-token prompt, answers of 200-230
    plan, prefix, name = plan_for(short, [10] * 64, prompts, limits)
    assert name.startswith("length-sorted") and prefix == [0] * 64
    assert sorted(i for b in plan for i in b) == list(range(64))


def test_a_plan_without_reuse_turns_the_models_reuse_off(tiny, monkeypatch):
    import numpy as np

    from rmbench.core.types import ComparisonGroup
    from rmbench.models.base import use_prompt_reuse
    from rmbench.models.implicit import ImplicitRM
    from rmbench.scoring.engine import requests_for, score_groups

    runtime = Runtime(dtype="float32", device="cpu")
    rm = ImplicitRM(str(tiny["causal"]), ref=str(tiny["causal_ref"]), runtime=runtime)
    groups = [ComparisonGroup("g", "Pick a number between 1 and 10", ["7", "The answer is 7", "8"], [1, 1, 0])]
    shared, stats = score_groups(rm, groups, runtime)
    assert stats.plan == "prompt KV reuse, padding <= 10%" and rm.prompt_reuse and rm.reference.prompt_reuse
    use_prompt_reuse(rm, False)
    assert not rm.prompt_reuse and not rm.reference.prompt_reuse

    def refuse(*_args, **_kwargs):
        raise AssertionError("the prompt KV path ran although reuse is off")

    monkeypatch.setattr("rmbench.models.hf.base.shared_prefix_hidden", refuse)  # where backbone_hidden looks it up
    plain = rm.score(requests_for(groups))
    assert np.allclose(plain, shared, atol=1e-5)
