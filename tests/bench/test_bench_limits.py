"""The FLOPs model and the matmul probe behind the scoring benchmark's limit."""

import math
from types import SimpleNamespace

import pytest

from bench.limits import matmul_probe, model_flops


def test_model_flops_by_hand():
    config = SimpleNamespace(hidden_size=4, num_hidden_layers=2)
    # 2 * P * n + 2 * L * d * n^2 per text: (2*10*3 + 2*2*4*9) + (2*10*1 + 2*2*4*1)
    assert model_flops(config, 10, [3, 1]) == 204 + 36


def test_matmul_probe_measures_a_finite_rate():
    pytest.importorskip("torch")
    rate = matmul_probe("float32", d=32, ffn=64, vocab=128, tokens=64, reps=2)
    assert math.isfinite(rate) and rate > 1e6
