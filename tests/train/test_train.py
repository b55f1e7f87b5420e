"""rmbench train on a tiny random model: the loss falls and the saved RMs reload with identical rewards."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.errors import DataError  # noqa: E402
from rmbench.models import Runtime, build_model, parse_model_spec  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.train.trainer import TrainConfig, preference_pairs, train_one  # noqa: E402

GROUPS = [ComparisonGroup(f"g{i}", f"Pick a number {i}", [f"The answer is {i}", "no"], [1, 0]) for i in range(8)]
FP32 = Runtime(dtype="float32", device="cpu")


@pytest.mark.parametrize("kind", ["ex", "im"])
def test_training_lowers_the_loss_and_the_output_reloads(tiny, tmp_path, kind):
    config = TrainConfig(base=str(tiny["causal"]), kind=kind, epochs=4, lr=3e-3, beta=0.5, batch_size=4, seed=0)
    card = train_one(kind, config, GROUPS, tmp_path / kind)
    losses = card["loss_per_epoch"]
    assert len(losses) == 4 and losses[-1] < losses[0]
    spec = parse_model_spec(str(tmp_path / kind))
    assert spec.kind == ("linear" if kind == "ex" else "implicit")
    rm = build_model(spec, FP32)
    batch = [ScoreRequest(g.prompt, r, g.id, i) for g in GROUPS for i, r in enumerate(g.responses)]
    first, again = rm.score(batch), build_model(parse_model_spec(str(tmp_path / kind)), FP32).score(batch)
    assert np.allclose(first, again, atol=1e-6)
    # the trained RM prefers the chosen answers on its training data
    assert (first[0::2] > first[1::2]).mean() >= 0.75
    assert (tmp_path / kind / "MODEL_CARD.md").is_file()


def test_an_interrupted_run_resumes_from_its_checkpoint(tiny, tmp_path):
    config = TrainConfig(base=str(tiny["causal"]), kind="ex", epochs=2, lr=3e-3, batch_size=4)
    full = train_one("ex", config, GROUPS, tmp_path / "full")

    def killed_in_epoch_2(description, total):
        if "epoch 2/2" in description:
            raise RuntimeError("killed")
        return lambda n: None

    with pytest.raises(RuntimeError, match="killed"):
        train_one("ex", config, GROUPS, tmp_path / "resumed", killed_in_epoch_2)
    assert (tmp_path / "resumed" / "checkpoint.pt").is_file()
    resumed = train_one("ex", config, GROUPS, tmp_path / "resumed")
    assert not (tmp_path / "resumed" / "checkpoint.pt").exists()  # removed once the run completes
    assert resumed["loss_per_epoch"] == pytest.approx(full["loss_per_epoch"], abs=1e-6)
    batch = [ScoreRequest(g.prompt, r, g.id, i) for g in GROUPS for i, r in enumerate(g.responses)]
    a = build_model(parse_model_spec(str(tmp_path / "full")), FP32).score(batch)
    b = build_model(parse_model_spec(str(tmp_path / "resumed")), FP32).score(batch)
    assert np.allclose(a, b, atol=1e-5)


def test_data_without_pairs_is_a_clear_error():
    with pytest.raises(DataError, match="no preference pairs"):
        preference_pairs([ComparisonGroup("g", "q", ["a", "b"], [1, 1])])


def test_cli_train_then_eval(tiny, tmp_path):
    import json

    from typer.testing import CliRunner

    from rmbench.cli.app import app

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": g.prompt, "chosen": g.responses[0],
                                        "rejected": g.responses[1]}) + "\n"
                            for g in GROUPS))
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--kind", "both",
                                 "--out", str(tmp_path / "rm"), "--epochs", "1", "--lr", "1e-3"])
    assert result.exit_code == 0, result.output
    assert "EX-RM: loss per epoch" in result.output and "IM-RM: loss per epoch" in result.output
    for kind in ("ex", "im"):
        res = runner.invoke(app,
                            ["eval", "--model", str(tmp_path / "rm" / kind), "--tasks", "ties_sample", "--limit", "2",
                                  "--bootstrap", "10", "--dtype", "float32", "--out", str(tmp_path / f"run_{kind}")])
        assert res.exit_code == 0, res.output
    bad = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--kind", "xx",
                              "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--kind must be ex, im or both" in bad.output


def test_a_separate_head_learning_rate_moves_the_head_further(tiny, tmp_path):
    from safetensors.torch import load_file

    def head_norm(head_lr):
        config = TrainConfig(base=str(tiny["causal"]), kind="ex", epochs=1, lr=1e-5, batch_size=4, head_lr=head_lr)
        folder = tmp_path / f"ex-{head_lr}"
        train_one("ex", config, GROUPS, folder)
        return float(load_file(str(folder / "head.safetensors"))["weight"].norm())

    assert head_norm(1e-2) > 100 * head_norm(None)


def test_bad_learning_rates_are_config_errors():
    from rmbench.errors import ConfigError

    for kw in ({"lr": 0.0}, {"head_lr": 0.0}, {"head_lr": -1e-3}):
        with pytest.raises(ConfigError, match="head-lr"):
            TrainConfig(base="x", **kw)


def test_train_and_eval_use_disjoint_parts_of_a_task(tiny, tmp_path):
    import json

    from typer.testing import CliRunner

    from rmbench.catalog import load_catalog
    from rmbench.cli.app import app
    from rmbench.tasks.loading import load_groups, task_spec_with_args

    runner = CliRunner()
    out = tmp_path / "rm"
    result = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", "persona", "--kind", "ex",
                                 "--out", str(out), "--epochs", "1", "--limit", "4", "--max-length", "200"])
    assert result.exit_code == 0, result.output
    assert "data: the train part of persona (4 groups" in " ".join(result.output.split())
    card = json.loads((out / "ex" / "card.json").read_text())
    assert card["split"]["part"] == "train" and card["split"]["data"] == "persona" and card["split"]["groups"] == 4
    run = tmp_path / "run"
    res = runner.invoke(app, ["eval", "--model", str(out / "ex"), "--tasks", "persona", "--bootstrap", "0",
                              "--dtype", "float32", "--max-length", "200", "--out", str(run)])
    assert res.exit_code == 0, res.output
    assert "scoring only its held_out part" in " ".join(res.output.split())
    task = json.loads((run / "results.json").read_text())["tasks"][0]
    assert task["args"]["part"] == "held_out"
    scored = {json.loads(line)["group_id"] for line in (run / "rewards.jsonl").read_text().splitlines()}
    spec = load_catalog().task_spec("persona")
    _, trained = load_groups(task_spec_with_args(spec, {"part": "train"}))
    _, every = load_groups(spec)
    assert scored and not scored & {g.id for g in trained}
    assert len(scored) + len(trained) == len(every)  # the two parts cover the task
    # Beside another model in one command, each reads its own groups: length all, the trained one held_out.
    both = runner.invoke(app, ["eval", "--model", f"length,{out / 'ex'}", "--tasks", "persona", "--bootstrap", "0",
                               "--dtype", "float32", "--max-length", "200", "--out", str(tmp_path / "both")])
    assert both.exit_code == 0, both.output
    parts = {json.loads(p.read_text())["model"]["name"]: json.loads(p.read_text())["tasks"][0]["args"].get("part")
             for p in (tmp_path / "both").glob("*/results.json")}
    assert parts["length"] is None and parts[str(out / "ex")] == "held_out", parts


def test_a_model_trained_on_every_group_is_evaluated_with_a_loud_warning(tiny, tmp_path):
    import json

    from typer.testing import CliRunner

    from rmbench.cli.app import app

    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"prompt": g.prompt, "chosen": g.responses[0], "rejected": g.responses[1]})
                            + "\n" for g in GROUPS))
    runner = CliRunner()
    out = tmp_path / "rm"
    result = runner.invoke(app, ["train", "--base", str(tiny["causal"]), "--data", str(data), "--kind", "ex",
                                 "--out", str(out), "--epochs", "1", "--split", "all"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "ex" / "card.json").read_text())["split"]["part"] == "all"
    res = runner.invoke(app, ["eval", "--model", str(out / "ex"), "--tasks", "preference",
                              "--data", f"preference={data}", "--bootstrap", "0", "--dtype", "float32",
                              "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert "trained on every group of this data" in " ".join(res.output.split())
