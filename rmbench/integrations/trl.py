"""rmbench tasks evaluated while TRL trains a reward model: :class:`RMBenchCallback`.

A transformers ``TrainerCallback`` for TRL's ``RewardTrainer`` and ``DPOTrainer``. Every
``every_n_steps`` optimizer steps (and at the last step) it scores the tasks with the model being
trained, as it is after that step's update:

* ``RewardTrainer`` (EX-RM): the sequence-classification model, as ``seqcls`` scores its saved
  checkpoint (``rmbench eval --model seqcls:OUT/checkpoint-N``);
* ``DPOTrainer`` (IM-RM): the policy against the trainer's ``ref_model`` with the trainer's
  ``beta``, as ``implicit`` scores the checkpoint (``--model implicit:OUT/checkpoint-N
  --model-arg ref=REF --model-arg beta=BETA``): r = beta * (log pi(y|x) - log pi_ref(y|x)).

The live modules are wrapped as they are (:mod:`rmbench.models.live`: no second copy of the
weights), put in evaluation mode for the scoring and given back their training mode after; no
gradient is taken. Each evaluation writes the run folder ``rmbench eval`` writes, in
``out/step-000050`` (default ``out``: ``OUTPUT_DIR/rmbench``), and logs every whole-task metric
through ``trainer.log`` as ``eval_rmbench/TASK/METRIC[@EPS]`` (so the trainer's reporters, W&B,
TensorBoard, MLflow or trackio, chart them under their eval section; the names:
:func:`rmbench.scoring.training_eval.metric_key`).

Only the main process evaluates (data-parallel training waits at its next synchronisation);
sharded training (FSDP, DeepSpeed ZeRO-3) holds no whole model there and is refused.

    trainer = RewardTrainer(model=model, args=args, train_dataset=train, processing_class=tokenizer)
    RMBenchCallback(tasks=["ties_sample"], every_n_steps=50, limit=100).attach(trainer)
    trainer.train()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rmbench.core.specs import ModelSpec
from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel
from rmbench.models.live import LiveImplicitRM, LiveSeqClsRM, evaluating
from rmbench.scoring.config import DEFAULT_EPS
from rmbench.scoring.training_eval import StepResult, TrainingEval, step_name

LOG_PREFIX = "eval_"
"""Before every logged name: transformers' reporters file ``eval_*`` values under evaluation, and
TRL's ``log`` adds no training averages to a call made with the model in evaluation mode."""


class RMBenchCallback(TrainerCallback):
    """Evaluate rmbench ``tasks`` every ``every_n_steps`` steps (the module docstring).

    ``limit``: groups per task (as ``rmbench eval --limit``); ``out``: the folder of the step
    folders; ``name``: the model's name in them (default: the output folder's name; a step's
    run is ``NAME@step-000050``); ``eps``, ``n_bootstrap``, ``seed``, ``include``: as ``rmbench
    eval``'s; ``model_args``: the adapter's own arguments (``template``, ``max_length``,
    ``system_prompt``; ``normalize`` for an IM-RM), as ``--model-arg`` gives them to ``rmbench
    eval`` of the checkpoint; ``overwrite``: replace step folders of an earlier run in ``out``
    (default: refused when training begins). ``results`` holds every evaluation's
    :class:`~rmbench.scoring.training_eval.StepResult`.
    """

    def __init__(self, tasks: Sequence[str], every_n_steps: int = 500, limit: int | None = None,
                 out: str | Path | None = None, name: str | None = None, eps: Sequence[float] = DEFAULT_EPS,
                 n_bootstrap: int = 1000, seed: int = 0, include: Sequence[str] = (),
                 model_args: Mapping[str, Any] | None = None, overwrite: bool = False, trainer=None) -> None:
        if isinstance(tasks, str):
            tasks = [tasks]
        if isinstance(every_n_steps, bool) or not isinstance(every_n_steps, int) or every_n_steps < 1:
            raise ConfigError(f"every_n_steps must be a whole number >= 1, got {every_n_steps!r}")
        self.every_n_steps = every_n_steps
        self.evaluation = TrainingEval(tuple(tasks), None if out is None else Path(out), limit, tuple(eps),
                                       n_bootstrap, seed, tuple(include), overwrite)
        self.name = name
        self.model_args = dict(model_args or {})
        self.results: list[StepResult] = []
        self.trainer = None
        if trainer is not None:
            self.attach(trainer)

    def attach(self, trainer) -> RMBenchCallback:
        """Evaluate during ``trainer``'s training: remembers the trainer (its reference model,
        beta and ``log``) and adds this callback to it unless it has it already."""
        self.trainer = trainer
        if self not in trainer.callback_handler.callbacks:
            trainer.add_callback(self)
        return self

    # --- the trainer's events ------------------------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs):
        if self.trainer is None:
            raise ConfigError("RMBenchCallback needs its trainer: RMBenchCallback(...).attach(trainer) "
                              "(or RMBenchCallback(..., trainer=trainer)) before trainer.train()")
        if self.evaluation.out is None:
            self.evaluation.out = Path(args.output_dir) / "rmbench"
        if state.is_world_process_zero:
            self.evaluation.check_out()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        step = state.global_step
        if step % self.every_n_steps == 0 or step == state.max_steps:
            if state.is_world_process_zero:
                self.evaluate(args, step, kwargs["model"], kwargs.get("processing_class"))
        return control

    # --- one evaluation ----------------------------------------------------------------------------
    def evaluate(self, args, step: int, model, processing_class) -> StepResult:
        """Score the tasks with ``model`` as it is now, write its step folder, log the values."""
        trainer = self.trainer
        assert trainer is not None  # on_train_begin checked it
        tokenizer = getattr(processing_class, "tokenizer", None) or processing_class
        if tokenizer is None:
            raise ConfigError("RMBenchCallback needs the trainer's tokenizer (processing_class)")
        name = self.name or Path(args.output_dir).name
        adapter, modules, spec = self._adapter(trainer, model, tokenizer, str(args.output_dir), name, step)
        result = self.evaluation.run(adapter, spec, step, modules)
        self.results.append(result)
        with evaluating(*modules):  # TRL's log adds its training averages only in training mode
            trainer.log({LOG_PREFIX + k: v for k, v in result.values.items()})
        return result

    def _adapter(self, trainer, model, tokenizer, output_dir: str, name: str,
                 step: int) -> tuple[RewardModel, tuple, ModelSpec]:
        """The live adapter of the trainer's model, the modules it runs, and the run's model spec."""
        _refuse_sharded(trainer)
        label = f"{output_dir}@step-{step}"
        where = {"model": output_dir, "step": step, "trainer": type(trainer).__name__, **self.model_args}
        if _is_dpo(trainer):
            ref = getattr(trainer, "ref_model", None)
            if ref is None:
                raise ConfigError("RMBenchCallback scores a DPOTrainer's policy against its ref_model, and this "
                                  "trainer keeps none (PEFT adapters or precompute_ref_log_probs=True): pass "
                                  "ref_model= to DPOTrainer")
            ref = trainer.accelerator.unwrap_model(ref)
            beta = float(trainer.args.beta)
            adapter: RewardModel = LiveImplicitRM(model, tokenizer, label, ref, beta, **self.model_args)
            return adapter, (model, ref), ModelSpec.make(step_name(name, step), "implicit", {**where, "beta": beta})
        if getattr(getattr(model, "config", None), "num_labels", None) != 1:
            raise ConfigError(f"RMBenchCallback scores a RewardTrainer's sequence-classification model with one "
                              f"output (or a DPOTrainer's policy); got {type(model).__name__}")
        adapter = LiveSeqClsRM(model, tokenizer, label, **self.model_args)
        return adapter, (model,), ModelSpec.make(step_name(name, step), "seqcls", where)


def _is_dpo(trainer) -> bool:
    try:
        from trl import DPOTrainer
    except ImportError:  # pragma: no cover - a DPOTrainer can only come from trl
        return False
    return isinstance(trainer, DPOTrainer)


def _refuse_sharded(trainer) -> None:
    if getattr(trainer, "is_fsdp_enabled", False) or getattr(trainer, "is_deepspeed_enabled", False) and \
            getattr(getattr(trainer.accelerator.state, "deepspeed_plugin", None), "zero_stage", 0) == 3:
        raise ConfigError("RMBenchCallback needs the whole model in the main process; FSDP and DeepSpeed ZeRO-3 "
                          "shard it (evaluate the saved checkpoints with rmbench eval instead)")


__all__ = ["LOG_PREFIX", "RMBenchCallback"]
