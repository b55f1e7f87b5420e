"""Evaluation during training: the TRL callback (rmbench.integrations.trl) on a tiny random model
trained a few steps on the CPU with TRL's own RewardTrainer and DPOTrainer, and ``rmbench train
--eval-every``. What each logs, and the run folder it writes at a step, must equal ``rmbench
eval`` (the library's ``evaluate``) of the model saved at that step."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from rmbench import EvalConfig, evaluate, load_run  # noqa: E402
from rmbench.models import Runtime  # noqa: E402
from rmbench.scoring.training_eval import logged_values  # noqa: E402

pytestmark = pytest.mark.slow  # trains (a few seconds each)

TASK, LIMIT = "ties_sample", 2


def _preferences(n: int = 8):
    """Conversational preference rows in TRL's format, in the tiny tokenizer's vocabulary."""
    from datasets import Dataset

    return Dataset.from_dict({
        "prompt": [[{"role": "user", "content": f"Pick a number between 1 and {i + 2}."}] for i in range(n)],
        "chosen": [[{"role": "assistant", "content": "The answer is 7."}] for _ in range(n)],
        "rejected": [[{"role": "assistant", "content": "red, blue, yellow"}] for _ in range(n)]})


def _args(config_class, out, **extra):
    return config_class(output_dir=str(out), max_steps=4, per_device_train_batch_size=4, save_steps=2,
                        logging_steps=1, report_to=[], use_cpu=True, bf16=False, learning_rate=5e-3, seed=0,
                        disable_tqdm=True, save_only_model=True, **extra)


def _checkpoint_eval(model: str, out, **model_args):
    config = EvalConfig(model=model, tasks=(TASK,), limit=LIMIT, runtime=Runtime(dtype="float32"), use_cache=False,
                        model_args=tuple(model_args.items()))
    return evaluate(config, out)


def _rewards(folder) -> list[float]:
    return [json.loads(line)["reward"] for line in (folder / "rewards.jsonl").read_text().splitlines()]


def _assert_same_numbers(step_folder, eval_folder) -> None:
    """The step's run folder holds the checkpoint's rewards and metric records."""
    assert _rewards(step_folder) == pytest.approx(_rewards(eval_folder), rel=1e-6, abs=1e-6, nan_ok=True)
    assert logged_values(load_run(step_folder).record) == pytest.approx(logged_values(load_run(eval_folder).record),
                                                                 rel=1e-6, abs=1e-6, nan_ok=True)


class _Modes:
    """Records the model's mode after each step's callbacks (ours runs before it)."""

    def __init__(self):
        from transformers import TrainerCallback

        modes = self.modes = []

        class Recorder(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                modes.append(kwargs["model"].training)

        self.callback = Recorder()


def _wrapped_modules(callback) -> list:
    """The modules of every adapter the callback builds (its own method, wrapped to record them)."""
    seen = []
    build = callback._adapter

    def recording(*args, **kwargs):
        adapter, modules, spec = build(*args, **kwargs)
        seen.append((adapter.model, *modules))
        return adapter, modules, spec
    callback._adapter = recording
    return seen


def test_reward_trainer_logs_what_rmbench_eval_gives_for_the_checkpoint(tiny, tmp_path):
    pytest.importorskip("trl")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    from rmbench.integrations.trl import RMBenchCallback

    model = AutoModelForSequenceClassification.from_pretrained(tiny["seqcls"])
    tokenizer = AutoTokenizer.from_pretrained(tiny["seqcls"])
    trainer = RewardTrainer(model=model, args=_args(RewardConfig, tmp_path / "rm"), train_dataset=_preferences(),
                            processing_class=tokenizer)
    callback = RMBenchCallback(tasks=[TASK], every_n_steps=2, limit=LIMIT).attach(trainer)
    wrapped = _wrapped_modules(callback)
    modes = _Modes()
    trainer.add_callback(modes.callback)
    trainer.train()

    assert [r.step for r in callback.results] == [2, 4]
    assert wrapped and all(m is model for w in wrapped for m in w)  # the trainer's own module, no copy
    assert modes.modes == [True] * 4  # back in training mode after each evaluation
    for result in callback.results:
        step = result.step
        logged = next(e for e in trainer.state.log_history
                      if e["step"] == step and f"eval_rmbench/{TASK}/pairwise_accuracy" in e)
        values = {k.removeprefix("eval_"): v for k, v in logged.items() if k.startswith("eval_rmbench/")}
        assert values == dict(result.values) and values  # what trainer.log got is the step's record
        assert {f"rmbench/{TASK}/discrimination@0.1sigma", f"rmbench/{TASK}/balanced_best"} <= set(values)
        assert not {k for k in values if k.startswith("train")}  # no training averages taken into this log
        assert result.folder == tmp_path / "rm" / "rmbench" / f"step-{step:06d}"
        reference = _checkpoint_eval(f"seqcls:{tmp_path / 'rm' / f'checkpoint-{step}'}", tmp_path / f"eval-{step}")
        assert values == pytest.approx(logged_values(reference), rel=1e-6, abs=1e-6, nan_ok=True)
        _assert_same_numbers(result.folder, tmp_path / f"eval-{step}")
        assert load_run(result.folder).record.model_name == f"rm@step-{step:06d}"
    # the two steps' models differ: the evaluation saw the weights move
    assert _rewards(callback.results[0].folder) != _rewards(callback.results[1].folder)
    _plots_over_steps(tmp_path / "rm" / "rmbench", [2, 4], tmp_path / "plots")


def _plots_over_steps(folder, steps, out) -> None:
    """rmbench plot draws the step folders as one training: D and Spec over its steps."""
    pytest.importorskip("matplotlib")
    from rmbench.results.publishing.plot import plot_runs
    from rmbench.results.publishing.plot_steps import training_series
    from rmbench.results.storage.folder import find_runs

    runs = find_runs([folder])
    [series] = training_series(runs)
    assert [s for s, _ in series.steps] == steps
    assert out / f"{TASK}_steps.svg" in plot_runs(runs, out, ("svg",))


def test_a_second_run_into_the_same_folder_is_refused_before_training(tiny, tmp_path):
    pytest.importorskip("trl")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from trl import RewardConfig, RewardTrainer

    from rmbench.errors import ConfigError
    from rmbench.integrations.trl import RMBenchCallback

    (tmp_path / "evals" / "step-000002").mkdir(parents=True)
    (tmp_path / "evals" / "step-000002" / "results.json").write_text("{}")
    trainer = RewardTrainer(model=AutoModelForSequenceClassification.from_pretrained(tiny["seqcls"]),
                            args=_args(RewardConfig, tmp_path / "rm"), train_dataset=_preferences(),
                            processing_class=AutoTokenizer.from_pretrained(tiny["seqcls"]))
    RMBenchCallback(tasks=[TASK], every_n_steps=2, limit=LIMIT, out=tmp_path / "evals").attach(trainer)
    with pytest.raises(ConfigError, match="holds evaluations of another training run"):
        trainer.train()
    assert trainer.state.global_step == 0
    with pytest.raises(ConfigError, match="every_n_steps"):
        RMBenchCallback(tasks=[TASK], every_n_steps=0)


def test_dpo_trainer_is_scored_as_the_implicit_rm_of_its_checkpoint(tiny, tmp_path):
    pytest.importorskip("trl")
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOConfig, DPOTrainer

    from rmbench.integrations.trl import RMBenchCallback

    policy = AutoModelForCausalLM.from_pretrained(tiny["causal"])
    ref = AutoModelForCausalLM.from_pretrained(tiny["causal"])
    trainer = DPOTrainer(model=policy, ref_model=ref, args=_args(DPOConfig, tmp_path / "dpo", beta=0.5),
                         train_dataset=_preferences(), processing_class=AutoTokenizer.from_pretrained(tiny["causal"]))
    callback = RMBenchCallback(tasks=[TASK], every_n_steps=4, limit=LIMIT, trainer=trainer)
    wrapped = _wrapped_modules(callback)
    trainer.train()
    assert [w[:2] for w in wrapped] == [(policy, policy)] and wrapped[0][2] is trainer.ref_model
    logged = next(e for e in trainer.state.log_history if f"eval_rmbench/{TASK}/pairwise_accuracy" in e)
    assert logged["step"] == 4 and not any(k.startswith("eval_") and "rmbench" not in k for k in logged)

    [result] = callback.results
    assert result.step == 4 and result.record.model.spec["args"]["beta"] == 0.5
    reference = _checkpoint_eval(f"implicit:{tmp_path / 'dpo' / 'checkpoint-4'}", tmp_path / "eval",
                                 ref=str(tiny["causal"]), beta=0.5)
    assert dict(result.values) == pytest.approx(logged_values(reference), rel=1e-6, abs=1e-6, nan_ok=True)
    _assert_same_numbers(result.folder, tmp_path / "eval")
    assert not ref.training  # the reference stays as TRL keeps it


def test_rmbench_train_eval_every_writes_the_trained_models_numbers(tiny, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli import app

    out = tmp_path / "trained"
    result = CliRunner().invoke(app, ["train", "--base", str(tiny["causal"]), "--data", TASK, "--kind", "both",
                                      "--out", str(out), "--batch-size", "8", "--lr", "1e-3", "--head-lr", "1e-2",
                                      "--split", "all", "--limit", "2", "--max-length", "128", "--threads", "1",
                                      "--eval-tasks", "paraphrase_shift_sample", "--eval-every", "1",
                                      "--eval-limit", "2"])
    assert result.exit_code == 0, result.output
    for kind in ("ex", "im"):  # each kind's last evaluation is rmbench eval of the model it saved
        steps = sorted(p.name for p in (out / "eval" / kind).iterdir())
        assert len(steps) > 1 and steps == [f"step-{i:06d}" for i in range(1, len(steps) + 1)]
        config = EvalConfig(model=str(out / kind), tasks=("paraphrase_shift_sample",), limit=2,
                            runtime=Runtime(dtype="float32"), use_cache=False)
        evaluate(config, tmp_path / kind)
        _assert_same_numbers(out / "eval" / kind / steps[-1], tmp_path / kind)
        assert load_run(out / "eval" / kind / steps[0]).record.model.spec["args"]["step"] == 1


def test_rmbench_train_eval_options_need_eval_tasks(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli import app

    result = CliRunner().invoke(app, ["train", "--base", "smollm2-135m-instruct", "--data", TASK, "--out",
                                      str(tmp_path), "--eval-every", "5"])
    assert result.exit_code == 2 and "--eval-every and --eval-limit apply only with --eval-tasks" in result.output
    result = CliRunner().invoke(app, ["train", "--base", "smollm2-135m-instruct", "--data", TASK, "--out",
                                      str(tmp_path), "--eval-tasks", "no_such_task"])
    assert result.exit_code == 2 and "no_such_task" in result.output
    assert not list(tmp_path.iterdir())  # refused before any training
