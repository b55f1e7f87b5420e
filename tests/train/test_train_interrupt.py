"""``rmbench train`` stopped by Ctrl-C or SIGTERM (issue 24): it stops after the step under way
with a checkpoint of that step, the folder says it is unfinished, loading it says so, and the
same command resumes to the uninterrupted result. Real signals, a tiny random model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.models import Runtime, build_model, parse_model_spec  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.models.names import UnknownModel, resolve_model  # noqa: E402
from rmbench.train.stopping import TrainingStopped  # noqa: E402
from rmbench.train.trainer import UNFINISHED, TrainConfig, train_one  # noqa: E402

GROUPS = [ComparisonGroup(f"g{i}", f"Pick a number {i}", [f"The answer is {i}", "no"], [1, 0]) for i in range(8)]
BATCH = [ScoreRequest(g.prompt, r, g.id, i) for g in GROUPS for i, r in enumerate(g.responses)]
FP32 = Runtime(dtype="float32", device="cpu")


@pytest.fixture
def sigint_raises():
    """SIGINT as an interactive Python has it (a background job may inherit it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("kind", ["ex", "im"])
def test_a_signal_mid_epoch_stops_after_the_step_and_the_run_resumes_to_the_same_model(tiny, tmp_path, kind,
                                                                                     sigint_raises):
    config = TrainConfig(base=str(tiny["causal"]), kind=kind, epochs=3, lr=3e-3, beta=0.5, batch_size=2)
    full = train_one(kind, config, GROUPS, tmp_path / "full")
    steps = []

    def signalled_in_epoch_2(description, total):
        if "epoch" not in description:  # the IM-RM's reference pass
            return lambda n: None

        def advance(n):
            steps.append(n)
            if len(steps) == 6:  # the second step of epoch 2 (4 steps of 2 pairs an epoch)
                signal.raise_signal(signal.SIGINT)
        return advance

    folder = tmp_path / "stopped"
    with pytest.raises(KeyboardInterrupt) as stopped:  # any other interrupt fails this test, not the session
        train_one(kind, config, GROUPS, folder, signalled_in_epoch_2)
    assert isinstance(stopped.value, TrainingStopped), repr(stopped.value)
    assert len(steps) == 6  # no step after the signal's
    assert (stopped.value.signum, stopped.value.epoch, stopped.value.pairs_done) == (signal.SIGINT, 2, 4)
    assert "keeps a checkpoint after 4 of 8 pairs of epoch 2/3" in stopped.value.kept()
    assert sorted(p.name for p in folder.iterdir()) == sorted([UNFINISHED, "checkpoint.pt"])
    assert "has not finished this folder" in (folder / UNFINISHED).read_text()
    with pytest.raises(UnknownModel, match=r"holds UNFINISHED.txt, checkpoint.pt; without rmbench_model.yaml"):
        resolve_model(str(folder))
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert (state["epoch"], state["pairs_done"], len(state["step_losses"])) == (1, 4, 2)

    restored = []

    class Report:
        def begin(self, kind, phase, description, total):
            return lambda n: None

        def restored(self, kind, phase, description, items):
            restored.append((phase, description, items))

    resumed = train_one(kind, config, GROUPS, folder, Report())
    assert ("train", f"{kind}-rm epochs 1-1/3 and 4 of 8 pairs of epoch 2/3 (from checkpoint)", 12) in restored
    assert resumed["loss_per_epoch"] == pytest.approx(full["loss_per_epoch"], abs=1e-6)
    assert not (folder / UNFINISHED).exists() and not (folder / "checkpoint.pt").exists()
    a = build_model(parse_model_spec(str(tmp_path / "full")), FP32).score(BATCH)
    b = build_model(parse_model_spec(str(folder)), FP32).score(BATCH)
    assert np.allclose(a, b, atol=1e-5)


@pytest.mark.slow  # a subprocess stopped by a real SIGINT, then resumed
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
def test_the_train_command_stops_within_seconds_and_the_same_command_resumes(tiny, tmp_path, signum):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": g.prompt, "chosen": g.responses[0], "rejected": g.responses[1]})
                            + "\n" for g in GROUPS))
    epochs = 40
    args = [sys.executable, "-m", "rmbench", "train", "--base", str(tiny["causal"]), "--data", str(data), "--kind",
            "ex", "--epochs", str(epochs), "--batch-size", "2", "--lr", "1e-3", "--out", str(tmp_path / "rm")]
    folder = tmp_path / "rm" / "ex"
    env = {**os.environ, "COLUMNS": "200"}  # progress lines whole, not folded
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal sends it
    try:
        deadline = time.monotonic() + 240
        while not (folder / "checkpoint.pt").is_file():  # training: the first epoch is done
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no epoch finished within 240 s"
            time.sleep(0.01)
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        latency = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"stopped {latency:.2f} s after the signal")
    assert proc.returncode == 128 + signum, err
    assert latency < 10, latency
    assert "interrupted:" in err and "keeps a checkpoint after" in err and "Traceback" not in err, err
    assert "the same train command resumes" in err
    assert (folder / UNFINISHED).is_file() and not (folder / "rmbench_model.yaml").exists()
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert 1 <= state["epoch"] < epochs

    load = subprocess.run([sys.executable, "-m", "rmbench", "eval", "--model", str(folder), "--no-cache"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert load.returncode == 2 and "no trained model yet" in load.stderr and "Traceback" not in load.stderr, \
        load.stderr

    again = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert f"ex-rm epochs 1-{state['epoch']}/{epochs}" in again.stderr and "(from checkpoint)" in again.stderr, \
        again.stderr
    card = json.loads((folder / "card.json").read_text())
    assert len(card["loss_per_epoch"]) == epochs
    assert not (folder / UNFINISHED).exists() and not (folder / "checkpoint.pt").exists()
