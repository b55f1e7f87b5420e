"""A model that runs out of memory on a batch (issue 24): the batch is scored again in halves,
down to one response, with the rewards of the whole batch bit for bit; a single response that
still fails is one line naming it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from rmbench.cli import app
from rmbench.core.specs import ModelSpec
from rmbench.core.types import ComparisonGroup
from rmbench.models import Runtime, build_model
from rmbench.scoring.backends import LocalBackend
from rmbench.scoring.engine import score_groups
from rmbench.scoring.memory import is_out_of_memory
from rmbench.scoring.runner import EvalConfig, evaluate

# Runs out of memory (a real MemoryError, raised where its allocation would be) on a batch of
# more than RM_MAX_ROWS pairs; RM_MAX_ROWS=0: on every batch, even of one pair.
MEMORY_RM = """
import os

def score(pairs):
    limit = os.environ.get("RM_MAX_ROWS")
    if limit is not None and len(pairs) > int(limit):
        raise MemoryError(f"cannot hold {len(pairs)} pairs at once")
    return [len(r) * 0.37 + sum(map(ord, r)) % 11 / 3.0 for _, r in pairs]
"""

OOM_LINE = ("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: "
            "you tried to allocate 1 GB")


@pytest.fixture
def memory_rm(tmp_path):
    (tmp_path / "mem.py").write_text(MEMORY_RM)
    return f"python:{tmp_path / 'mem.py'}:score"


def test_a_python_model_out_of_memory_is_split_and_gives_the_same_rewards(tmp_path, memory_rm, monkeypatch):
    config = dict(model=memory_rm, model_args=(("max_batch", 16),), n_bootstrap=10, use_cache=False)
    whole = evaluate(EvalConfig(**config), out_dir=tmp_path / "whole")
    assert whole.execution.stats.oom_splits == 0
    monkeypatch.setenv("RM_MAX_ROWS", "3")
    seen = []
    split = evaluate(EvalConfig(**config), out_dir=tmp_path / "split", warn=seen.append)
    stats = split.execution.stats
    assert stats.oom_splits > 0 and stats.batches_computed == whole.execution.stats.batches_computed
    assert (tmp_path / "split" / "rewards.jsonl").read_bytes() == (tmp_path / "whole" / "rewards.jsonl").read_bytes()
    assert [m.to_json() for m in split.records()] == [m.to_json() for m in whole.records()]
    memory_warnings = [w for w in seen if "ran out of memory" in w]
    assert len(memory_warnings) == 1, seen
    assert re.search(rf"scored {stats.oom_splits} batch(es)? again in halves \(first: MemoryError: cannot hold "
                     rf"\d+ pairs at once\)", memory_warnings[0]), memory_warnings[0]
    assert "--token-budget" in memory_warnings[0]


def test_a_single_response_out_of_memory_is_one_line_through_the_cli(tmp_path, memory_rm, monkeypatch):
    monkeypatch.setenv("RM_MAX_ROWS", "0")
    result = CliRunner().invoke(app, ["eval", "--model", memory_rm, "--model-arg", "max_batch=4", "--bootstrap", "10",
                                      "--no-cache", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert re.match(rf"error: model {re.escape(repr(memory_rm))} ran out of memory on a single response \(group "
                    rf"'[^']+', response \d+\), so no smaller batch is left to try: MemoryError: cannot hold 1 pairs "
                    rf"at once", lines[0]), lines[0]
    assert "--max-length" in lines[0] and "--dtype" in lines[0] and "--token-budget" in lines[0]
    assert not (tmp_path / "run" / "results.json").exists()


def test_what_counts_as_out_of_memory():
    torch = pytest.importorskip("torch")
    assert is_out_of_memory(MemoryError())
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("boom"))  # by its type, whatever it says
    assert is_out_of_memory(RuntimeError(OOM_LINE))
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 GB"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert not is_out_of_memory(RuntimeError("mat1 and mat2 shapes cannot be multiplied"))
    assert not is_out_of_memory(ValueError("out of memory"))  # a model's own ValueError stays its own error


GROUPS = [ComparisonGroup(f"g{k}", f"Question {k}: what is {k} plus {k}?",
                          [f"The answer is {2 * k}.", f"It is {2 * k + 1}, I think.", "No idea.",
                           f"Pick a number between 1 and 10. The answer is {k}. Hello there, how are you today?"],
                          [3, 1, 0, 2]) for k in range(5)]


def _oom_above(module, rows: int):
    """``module``'s forward raises torch's OutOfMemoryError (as CUDA's allocator does) on more than ``rows`` rows."""
    import torch

    def hook(mod, args, kwargs):
        x = kwargs.get("input_ids", args[0] if args else None)
        if x is None:
            x = kwargs.get("inputs_embeds")
        if x is not None and x.shape[0] > rows:
            raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {x.shape[0]} GiB")
    return module.register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("kind", ["seqcls", "implicit"])
def test_a_transformers_model_out_of_memory_gives_the_same_rewards_in_halves(tiny, kind):
    folder = tiny["seqcls" if kind == "seqcls" else "causal"]
    runtime = Runtime(dtype="float32", device="cpu")
    model = build_model(ModelSpec.make(kind, kind, {"model": str(folder)}), runtime)
    whole, whole_stats = score_groups(model, GROUPS, runtime, backend=LocalBackend())
    assert whole_stats.oom_splits == 0 and whole_stats.batches_computed < len(GROUPS) * 4  # batches of several
    handle = _oom_above(model.backbone, 2)
    try:
        split, stats = score_groups(model, GROUPS, runtime, backend=LocalBackend())
    finally:
        handle.remove()
    assert stats.oom_splits > 0
    # Not bit for bit: torch's kernels give a row other float32 roundings in a batch of another
    # shape (a batch of one differs from the whole by ~6e-7 as well, with or without a split).
    assert np.allclose(split, whole, rtol=1e-5, atol=1e-5), np.abs(split - whole).max()
    assert not np.array_equal(split, np.zeros_like(split))
