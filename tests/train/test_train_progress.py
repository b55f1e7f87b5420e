"""rmbench train's plan line and whole-job eta (a rate per phase), and a quiet stderr: only
rmbench's own progress, none of transformers' bars."""

import json

import pytest

from rmbench.train.progress import JobEstimate, format_eta, plan_line, plan_phases, prior_cost
from rmbench.train.trainer import TrainConfig


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_the_estimate_keeps_a_rate_per_phase_and_is_provisional_until_each_kind_ran():
    clock = Clock()
    phases = plan_phases(["ex", "im"], n_pairs=100, n_texts=40, epochs=2)
    assert phases == [("ex", "train", 200), ("im", "reference", 40), ("im", "train", 200)]
    est = JobEstimate(phases, clock)
    assert est.remaining() == (None, True)  # nothing timed yet
    est.start("ex", "train")
    for dt in (10.0, 2.0, 2.0):  # the first step (warm-up) is left out once others are timed
        clock.t += dt
        est.advance("ex", "train", 4)
    ex_rate = 4.0 / 8  # seconds per pair
    seconds, provisional = est.remaining()
    unmeasured = ex_rate * (40 * prior_cost("im", "reference") + 200 * prior_cost("im", "train"))
    assert provisional and seconds == pytest.approx(188 * ex_rate + unmeasured)
    clock.t += 1.0  # a second into the next step: the estimate counts down
    assert est.remaining()[0] == pytest.approx(188 * ex_rate + unmeasured - 1.0)
    clock.t += 10.0  # a slow step: counted down by at most one step's expected time
    assert est.remaining()[0] == pytest.approx(188 * ex_rate + unmeasured - 2.0)
    clock.t -= 11.0
    est.restore("ex", "train", 188)  # the rest of EX came from a checkpoint
    est.start("im", "reference")
    clock.t += 1.0
    est.advance("im", "reference", 40)
    est.start("im", "train")
    for _ in range(3):
        clock.t += 6.0
        est.advance("im", "train", 4)
    seconds, provisional = est.remaining()
    assert not provisional and seconds == pytest.approx((200 - 12) * 6.0 / 4)  # IM's own rate, not EX's


def test_format_eta_and_the_plan_line():
    assert format_eta(None, True) == "eta ?"
    assert format_eta(3723.4, False) == "eta 1:02:03" and format_eta(59, True) == "eta ~0:00:59"
    line = plan_line(["ex", "im"], 800, 480, TrainConfig(base="b", epochs=2))
    assert line.startswith("plan: 800 pairs x 2 epochs x 2 kinds (ex, im) = 3200 pair updates in 800 steps of "
                           "<= 4 pairs, and the IM-RM's reference log-probs of 480 texts")
    assert "full fine-tuning, max_length 512" in line
    lora = plan_line(["ex"], 10, 5, TrainConfig(base="b", lora=True))
    assert "10 pairs x 1 epoch x 1 kind (ex) = 10 pair updates in 3 steps" in lora and "reference" not in lora
    assert "LoRA r=8, alpha=16, dropout=0 on all-linear layers (merged when saved)" in lora


def test_cli_train_stderr_shows_the_plan_and_rmbench_progress_only(tiny, tmp_path):
    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Pick {i}", "chosen": f"The answer is {i}", "rejected": "no"})
                            + "\n" for i in range(6)))
    result = CliRunner().invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--out",
                                      str(tmp_path / "rm"), "--epochs", "2", "--batch-size", "3",
                                      "--split", "all"])  # every pair: the counts below are of all 6
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "Writing model shards" not in err and "Loading weights" not in err and "it/s]" not in err
    assert err.startswith("plan: 6 pairs x 2 epochs x 2 kinds (ex, im) = 24 pair updates in 8 steps")
    for line in ("all: ex+im, 2 epochs", "ex-rm epoch 2/2", "im-rm reference log-probs", "im-rm epoch 2/2"):
        assert line in err
    assert "24/24 pairs" in err and "12/12 texts" in err


def test_quiet_hf_progress_restores_the_bars():
    pytest.importorskip("transformers")
    from transformers.utils import logging as hf_logging

    from rmbench.train.progress import quiet_hf_progress

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()
    try:
        with quiet_hf_progress():
            assert not hf_logging.is_progress_bar_enabled()
        assert hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        with quiet_hf_progress():
            pass
        assert not hf_logging.is_progress_bar_enabled()  # a caller's choice stays
    finally:
        (hf_logging.enable_progress_bar if was else hf_logging.disable_progress_bar)()
