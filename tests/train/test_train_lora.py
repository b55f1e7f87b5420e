"""rmbench train --lora on a tiny random model: only the adapters (and the EX head) learn, the
IM-RM's reference is exactly the base, the merged folder loads and scores like the adapters,
resuming works, and a missing peft is a one-line error."""

import json
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models import Runtime, build_model, parse_model_spec  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.train.models import distinct_responses, make_trainer  # noqa: E402
from rmbench.train.progress import PhaseReport  # noqa: E402
from rmbench.train.stopping import StopRequest  # noqa: E402
from rmbench.train.trainer import TrainConfig, _Position, _run_epoch, _write_outputs, preference_pairs, train_one  # noqa: E402

GROUPS = [ComparisonGroup(f"g{i}", f"Pick a number {i}", [f"The answer is {i}", "no"], [1, 0]) for i in range(8)]
FP32 = Runtime(dtype="float32", device="cpu")
BATCH = [ScoreRequest(g.prompt, r, g.id, i) for g in GROUPS for i, r in enumerate(g.responses)]
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _config(tiny, kind, **kw):
    return TrainConfig(base=str(tiny["causal"]), kind=kind, lora=True, lr=kw.pop("lr", 1e-2), beta=0.5,
                       batch_size=4, **kw)


def _trained(tiny, kind, epochs=2):
    """A LoRA trainer after ``epochs`` epochs, adapters not merged."""
    config = _config(tiny, kind)
    torch.manual_seed(0)
    trainer = make_trainer(kind, config, FP32)
    optimizer = torch.optim.AdamW(trainer.param_groups, lr=config.lr)
    pairs = preference_pairs(GROUPS)
    trainer.model.train()
    trainer.prepare(pairs, PhaseReport(None, kind))
    at = _Position([])
    for _ in range(epochs):
        _run_epoch(trainer, optimizer, pairs, config, at, lambda n: None, StopRequest())
        at.end_epoch()
    losses = at.losses
    trainer.model.eval()
    return config, trainer, losses


@pytest.mark.parametrize("kind", ["ex", "im"])
def test_lora_changes_only_the_adapters_and_the_merged_folder_scores_alike(tiny, tmp_path, kind):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny["causal"], dtype=torch.float32).state_dict()
    config, trainer, losses = _trained(tiny, kind)
    assert losses[-1] < losses[0]
    state = trainer.model.state_dict()
    adapters = [n for n in state if "lora_" in n]
    assert adapters and {n.split(".")[-4] for n in adapters} == set(TARGETS)  # attention and MLP projections
    for name, tensor in state.items():  # every base tensor as it was: only the adapters learned
        if "lora_" not in name:
            assert torch.equal(tensor, base[name.replace(".base_layer", "")]), name
    assert any(float(state[n].abs().max()) > 0 for n in adapters if "lora_B" in n)  # B starts at zero
    with torch.no_grad():
        before_merge = trainer.rewards(BATCH).numpy()
    card = _write_outputs(tmp_path / kind, kind, config, trainer, {"losses": losses, "fingerprint": "f", "pairs": 8})
    assert card["finetuning"] == "lora" and card["lora"]["r"] == 8 and card["lora"]["alpha"] == 16
    assert card["lora"]["target_modules"] == sorted(TARGETS) and card["hyperparameters"]["lora_targets"] == "all-linear"
    assert "LoRA r=8, alpha=16" in (tmp_path / kind / "MODEL_CARD.md").read_text()
    merged = AutoModelForCausalLM.from_pretrained(tmp_path / kind / "model", dtype=torch.float32).state_dict()
    assert set(merged) == set(base)  # a plain model: no LoRA tensors left
    for name in base:
        same = torch.equal(merged[name], base[name])
        assert same == (name.split(".")[-2] not in TARGETS), name  # exactly the targets changed
    scores = build_model(parse_model_spec(str(tmp_path / kind)), FP32).score(BATCH)
    assert np.allclose(scores, before_merge, atol=1e-4)


def test_the_lora_reference_is_exactly_the_base(tiny):
    from rmbench.models.implicit import ImplicitRM

    _, trainer, _ = _trained(tiny, "im", epochs=1)
    texts = distinct_responses(preference_pairs(GROUPS))
    base = ImplicitRM(str(tiny["causal"]), runtime=FP32)
    chunk = trainer.chunk
    expected = np.concatenate([base.score(texts[s:s + chunk]) for s in range(0, len(texts), chunk)])
    assert np.array_equal(trainer.reference_logprobs(texts), expected)  # adapters disabled: the base, bit for bit
    assert np.array_equal(trainer.reference.numpy(), expected)  # what training subtracted
    assert not np.allclose(trainer.rm.score(texts), expected, atol=1e-3)  # the policy itself has moved


@pytest.mark.parametrize("kind,lora", [("ex", True), ("im", True), ("im", False)])
def test_an_interrupted_run_resumes(tiny, tmp_path, kind, lora):
    config = _config(tiny, kind, lr=3e-3, epochs=2) if lora else \
        TrainConfig(base=str(tiny["causal"]), kind=kind, epochs=2, lr=3e-3, beta=0.5)
    full = train_one(kind, config, GROUPS, tmp_path / "full")

    def killed_in_epoch_2(description, total):
        if "epoch 2/2" in description:
            raise RuntimeError("killed")
        return lambda n: None

    with pytest.raises(RuntimeError, match="killed"):
        train_one(kind, config, GROUPS, tmp_path / "resumed", killed_in_epoch_2)
    state = torch.load(tmp_path / "resumed" / "checkpoint.pt", weights_only=True)
    if lora:  # the trainable tensors only
        assert state["trainer"]["model"] and all("lora_" in n for n in state["trainer"]["model"])
    if kind == "im":
        assert state["trainer"]["reference"].shape == (16,)
    restored = []

    class Report:
        def begin(self, kind, phase, description, total):
            return lambda n: None

        def restored(self, kind, phase, description, items):
            restored.append((phase, items))

    resumed = train_one(kind, config, GROUPS, tmp_path / "resumed", Report())
    assert restored == ([("reference", 16)] if kind == "im" else []) + [("train", 8)]
    assert resumed["loss_per_epoch"] == pytest.approx(full["loss_per_epoch"], abs=1e-6)
    a = build_model(parse_model_spec(str(tmp_path / "full")), FP32).score(BATCH)
    b = build_model(parse_model_spec(str(tmp_path / "resumed")), FP32).score(BATCH)
    assert np.allclose(a, b, atol=1e-5)


def test_the_cli_trains_with_lora_and_the_folders_evaluate(tiny, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": g.prompt, "chosen": g.responses[0], "rejected": g.responses[1]})
                            + "\n" for g in GROUPS))
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--out",
                                 str(tmp_path / "rm"), "--lora", "--lora-r", "4", "--lora-alpha", "8",
                                 "--lora-targets", "q_proj,v_proj", "--lr", "1e-2"])
    assert result.exit_code == 0, result.output
    assert "LoRA r=4, alpha=8, dropout=0 on q_proj,v_proj" in result.stderr
    card = json.loads((tmp_path / "rm" / "im" / "card.json").read_text())
    assert card["lora"]["target_modules"] == ["q_proj", "v_proj"] and card["lora"]["r"] == 4
    for kind in ("ex", "im"):
        res = runner.invoke(app,
                            ["eval", "--model", str(tmp_path / "rm" / kind), "--tasks", "ties_sample", "--limit", "2",
                                  "--bootstrap", "10", "--dtype", "float32", "--out", str(tmp_path / f"run_{kind}")])
        assert res.exit_code == 0, res.output
    for args, message in [(["--lora-r", "4"], "--lora-r applies only with --lora"),
                          (["--lora", "--lora-r", "0"], "--lora-r must be >= 1"),
                          (["--lora", "--lora-targets", "nope_proj"], "--lora-targets 'nope_proj'")]:
        bad = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--out",
                                  str(tmp_path / "bad"), *args])
        assert bad.exit_code == 2 and message in bad.stderr and "Traceback" not in bad.output, bad.output


def test_without_peft_lora_is_a_one_line_error_and_full_training_never_imports_it(tiny, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    monkeypatch.setitem(sys.modules, "peft", None)  # import peft now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install 'rmbench\[lora\]'"):
        train_one("ex", _config(tiny, "ex"), GROUPS, tmp_path / "x")
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"}) + "\n")
    result = CliRunner().invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--out",
                                      str(tmp_path / "rm"), "--lora"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines() == ["error: --lora needs the peft package: pip install 'rmbench[lora]'"]
    card = train_one("ex", TrainConfig(base=str(tiny["causal"]), kind="ex"), GROUPS, tmp_path / "full")
    assert card["finetuning"] == "full" and card["lora"] is None and "lora_r" not in card["hyperparameters"]
