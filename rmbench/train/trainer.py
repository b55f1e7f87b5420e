"""``rmbench train``: an explicit and an implicit RM from the same base model, data and loss.

Both minimise the Bradley-Terry loss  -log sigmoid(r(x, y_chosen) - r(x, y_rejected)):

* **EX-RM** (``ex``): r = <u, h(x, y)>, a linear head on the base's last hidden state at the
  last real token; backbone and head are trained. The head starts at zero and may have its own
  learning rate (``head_lr``): a zero head passes no gradient to the backbone, so with few
  steps and one shared small rate the EX-RM hardly moves.
* **IM-RM** (``im``): r = beta * (log pi(y|x) - log pi_ref(y|x)) with pi_ref the frozen initial
  model, which makes the loss DPO's. Only the policy is trained; the reference log-probs of the
  distinct training responses are computed once, before the first update.

The backbone is fully fine-tuned, or with ``lora`` only LoRA adapters on its linear layers are
(:mod:`rmbench.train.lora`), merged into the weights when saved. The models:
:mod:`rmbench.train.models`; the plan line and the whole-job time estimate:
:mod:`rmbench.train.progress`.

A plain PyTorch loop (TRL's trainers assume accelerators and more memory than a 2-core CPU
has); seeded and deterministic in float32. Each epoch ends with a checkpoint (the trainable
tensors, the optimizer's state, the RNG state and the IM-RM's reference log-probs) from which
an interrupted run with the same configuration and data resumes; Ctrl-C or SIGTERM stops after
the step under way with a checkpoint of that step (:mod:`rmbench.train.stopping`), and
``UNFINISHED.txt`` says what the folder is until the model entry is written. The outputs load as model
adapters: ``--model OUT/ex`` and ``--model OUT/im`` (a folder with ``rmbench_model.yaml``),
with a model card recording the base, the data fingerprint, the hyperparameters and the LoRA
settings.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rmbench import __version__
from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.specs import TaskSpec
from rmbench.core.splits import HELD_OUT_PERCENT, RULE
from rmbench.core.types import ComparisonGroup, data_fingerprint
from rmbench.errors import ConfigError, DataError
from rmbench.files import atomic_write_text
from rmbench.models.base import Runtime, ScoreRequest
from rmbench.models.threads import ThreadGovernor, check_threads, prepare_threads
from rmbench.models.trained import MODEL_ENTRY, load_trained_entry  # load_trained_entry: re-exported
from rmbench.tasks.loading import PART_ARG, task_spec_with_args
from rmbench.train.progress import PhaseReport, quiet_hf_progress
from rmbench.train.stopping import StopRequest, TrainingStopped, stop_at_safe_points

__all__ = ["MODEL_ENTRY", "OnStep", "TrainConfig", "load_trained_entry", "preference_pairs", "step_count", "train_one"]

OnStep = Callable[[int, Any], None]
"""Called after every update step with the step number (from 1) and the trainer (:mod:`rmbench.train.models`)."""


@dataclass(frozen=True)
class TrainConfig:
    base: str
    kind: str = "both"  # ex | im | both
    epochs: int = 1
    lr: float = 1e-5
    beta: float = 0.1
    batch_size: int = 4
    seed: int = 0
    max_length: int | None = 512
    template: str = "auto"
    head_lr: float | None = None  # EX-RM head's learning rate; None = lr
    lora: bool = False  # LoRA adapters instead of full fine-tuning (needs peft)
    lora_r: int = 8
    lora_alpha: float = 16.0
    lora_dropout: float = 0.0
    lora_targets: str = "all-linear"  # or comma-separated module names

    def __post_init__(self) -> None:
        if self.kind not in ("ex", "im", "both"):
            raise ConfigError(f"--kind must be ex, im or both, got {self.kind!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.lr <= 0 or self.beta <= 0 \
                or (self.head_lr is not None and self.head_lr <= 0):
            raise ConfigError("--epochs and --batch-size must be >= 1, --lr, --head-lr and --beta > 0")
        if self.lora_r < 1 or self.lora_alpha <= 0 or not 0 <= self.lora_dropout < 1:
            raise ConfigError("--lora-r must be >= 1, --lora-alpha > 0 and --lora-dropout in [0, 1)")

    def hyperparameters(self) -> dict:
        """The settings as recorded (card, checkpoint identity); the LoRA ones only with lora."""
        out = asdict(self)
        return out if self.lora else {k: v for k, v in out.items() if not k.startswith("lora")}


def preference_pairs(groups: Sequence[ComparisonGroup]) -> list[ScoreRequest]:
    """(chosen, rejected) request pairs, flattened: every discrimination pair of every group."""
    out = []
    for g in groups:
        for a, b in g.discrimination_pairs():
            out += [ScoreRequest(g.prompt, g.responses[a], g.id, a), ScoreRequest(g.prompt, g.responses[b], g.id, b)]
    if not out:
        raise DataError("the training data has no preference pairs (every group's responses have equal utilities)")
    return out


UNFINISHED = "UNFINISHED.txt"
UNFINISHED_TEXT = ("rmbench train has not finished this folder (it is running, or it was interrupted). Run the same "
                   "train command again: it resumes from checkpoint.pt where there is one. The model entry, "
                   f"{MODEL_ENTRY}, is written last; this file goes when it is.\n")
"""A note in the output folder from the start of a run to its end: the folder says what it is."""

CHECKPOINT_FORMAT = 2
"""Part of a checkpoint's run id: a checkpoint another layout wrote is not resumed from."""


def _bt_loss(r):
    import torch.nn.functional as F

    return -F.logsigmoid(r[0::2] - r[1::2]).mean()


@dataclass
class _Position:
    """Where training stands: each finished epoch's mean loss, and in the epoch under way the
    pairs done and their steps' losses (a checkpoint saved at a stop lies mid-epoch)."""

    losses: list[float]
    pairs_done: int = 0
    step_losses: list[float] = field(default_factory=list)

    @property
    def epoch(self) -> int:
        return len(self.losses)

    def end_epoch(self) -> None:
        """The epoch under way is done: its mean loss joins the finished epochs'."""
        self.losses.append(sum(self.step_losses) / len(self.step_losses))
        self.pairs_done, self.step_losses = 0, []


def _resume(checkpoint: Path, run_id: str, trainer, optimizer) -> _Position:
    """Where ``checkpoint`` left this run when it is this run's; else the start."""
    import torch

    if not checkpoint.is_file():
        return _Position([])
    # weights_only: tensors and plain containers only, so a planted checkpoint cannot run code.
    try:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - not a checkpoint this trainer wrote
        raise ConfigError(f"{checkpoint}: cannot resume from it ({type(exc).__name__}: {str(exc)[:200]}); "
                          f"delete it to train from the start") from None
    if state.get("run_id") != run_id:
        return _Position([])
    trainer.load_state(state["trainer"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    losses = list(state["losses"])[:int(state["epoch"])]
    return _Position(losses, int(state.get("pairs_done", 0)), list(state.get("step_losses", [])))


def _save_checkpoint(checkpoint: Path, state: dict) -> None:
    """Saved beside, then renamed: a run killed while saving keeps the previous checkpoint whole."""
    import torch

    partial = checkpoint.with_name(checkpoint.name + ".partial")
    try:
        torch.save(state, partial)
        partial.replace(checkpoint)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def step_count(config: TrainConfig, n_pairs: int, epoch: int, pairs_done: int) -> int:
    """Update steps done after ``pairs_done`` pairs of epoch ``epoch`` (from 0): every epoch has
    ceil(n_pairs / batch_size) steps, its last one possibly smaller."""
    per_epoch = -(-n_pairs // config.batch_size)
    return epoch * per_epoch + -(-pairs_done // config.batch_size)


def _run_epoch(trainer, optimizer, pairs: Sequence[ScoreRequest], config: TrainConfig, at: _Position, advance,
               stop: StopRequest, on_step: OnStep | None = None) -> bool:
    """The rest of epoch ``at.epoch`` from ``at.pairs_done``, in the epoch's seeded order,
    ``batch_size`` pairs per step, moving ``at`` along and calling ``on_step(step, trainer)``
    after each update; False when a signal asked to stop (after the step under way: a safe
    point), True at the epoch's end."""
    n_pairs = len(pairs) // 2
    order = list(range(n_pairs))
    random.Random(config.seed * 1000 + at.epoch).shuffle(order)
    for s in range(at.pairs_done, n_pairs, config.batch_size):
        if stop.signum is not None:
            return False
        idx = order[s:s + config.batch_size]
        batch = [req for i in idx for req in (pairs[2 * i], pairs[2 * i + 1])]
        loss = _bt_loss(trainer.rewards(batch))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        at.step_losses.append(float(loss.detach()))
        at.pairs_done = s + len(idx)
        advance(len(idx))
        if on_step is not None:
            on_step(step_count(config, n_pairs, at.epoch, at.pairs_done), trainer)
    return True


def _write_outputs(out: Path, kind: str, config: TrainConfig, trainer, facts: dict) -> dict:
    """The weights, ``rmbench_model.yaml``, ``card.json`` and ``MODEL_CARD.md``; returns the card."""
    import torch

    if (out / "model").exists():
        shutil.rmtree(out / "model")
    lora = trainer.lora_card()  # read before saving merges the adapters away
    entry = trainer.save(out, config)
    entry["description"] = f"{kind.upper()}-RM trained by rmbench from {config.base}" + (" (LoRA, merged)" * bool(lora))
    atomic_write_text(out / MODEL_ENTRY, yaml.safe_dump(entry, sort_keys=False))
    losses = facts["losses"]
    card = {"kind": kind, "base": config.base, "data_fingerprint": facts["fingerprint"], "pairs": facts["pairs"],
            "finetuning": "lora" if lora else "full", "lora": lora, "hyperparameters": config.hyperparameters(),
            "loss_per_epoch": losses, "rmbench_version": __version__, "torch": torch.__version__,
            "loss": "Bradley-Terry" + (" (DPO)" if kind == "im" else ""), "threads": facts.get("threads"),
            "split": facts.get("split")}
    atomic_write_text(out / "card.json", json.dumps(card, indent=2) + "\n")
    tuning = "full fine-tuning"
    if lora:
        tuning = (f"LoRA r={lora['r']}, alpha={lora['alpha']}, dropout={lora['dropout']} on "
                  f"{', '.join(lora['target_modules'])} ({lora['trainable_parameters']} trainable parameters"
                  f"{' with the head' * (kind == 'ex')}), merged into the weights")
    atomic_write_text(out / "MODEL_CARD.md", "\n".join(
        [f"# {kind.upper()}-RM from {config.base}", "", f"- loss: {card['loss']}, per epoch: "
         + ", ".join(f"{x:.4f}" for x in losses),
         f"- data fingerprint: {facts['fingerprint']} ({facts['pairs']} pairs)",
         f"- data: {json.dumps(card['split'])}",
         f"- fine-tuning: {tuning}", f"- hyperparameters: {json.dumps(config.hyperparameters())}",
         f"- rmbench {__version__}, torch {torch.__version__}", "", f"Evaluate: `rmbench eval --model {out}`", ""]))
    return card


def training_data(data: str, split: str, catalog) -> tuple[TaskSpec, dict]:
    """The task spec that ``rmbench train --data DATA --split SPLIT`` reads (a task name, or a file
    of preference pairs) and the card's record of the split (:mod:`rmbench.core.splits`)."""
    if split not in ("train", "all"):
        raise ConfigError(f"--split must be train or all, got {split!r}")
    path = Path(data).expanduser()
    if path.is_file():
        source = str(path.resolve())
        spec = TaskSpec.make(name="preference", kind="preference", args={"path": source})
    else:
        source = data
        spec = catalog.task_spec(data)
    if split == "train":
        spec = task_spec_with_args(spec, {PART_ARG: "train"})
    return spec, {"data": source, "part": split, "rule": RULE,
                  "held_out_percent": HELD_OUT_PERCENT * (split == "train")}


def train_one(kind: str, config: TrainConfig, groups: Sequence[ComparisonGroup], out: Path,
              progress=None, allow_pickle: bool = False, threads: int | None = None,
              split: dict | None = None, on_step: OnStep | None = None) -> dict:
    """Train one kind into ``out``; returns its model card (with the loss per epoch).

    ``progress``: None, a factory ``progress(description, total) -> advance(n)`` or an object
    with ``begin``/``restored`` (:class:`rmbench.train.progress.PhaseReport`). transformers'
    own progress bars are off meanwhile. ``allow_pickle``: let the base load from pickle
    weights (``pytorch_model.bin``), see Runtime. ``threads``: CPU threads (None: those the
    machine's load leaves free at the start, kept for the whole run; see
    :mod:`rmbench.models.threads`), recorded in the card. ``split``: which part of which data
    ``groups`` are (:func:`training_data`), recorded in the card for ``rmbench eval``.
    ``on_step``: called as ``on_step(step, trainer)`` after every update (steps counted from 1
    over the epochs, :func:`step_count`), the trainer in training mode; ``rmbench train
    --eval-every`` evaluates there (``trainer.live_adapter``, :mod:`rmbench.train.models`).
    """
    governor = prepare_threads(check_threads(threads))  # before torch loads OpenMP where it can (the wait policy)
    with quiet_hf_progress():
        return _train_one(kind, config, groups, Path(out), PhaseReport(progress, kind), allow_pickle, governor,
                          split, on_step)


def _train_one(kind: str, config: TrainConfig, groups: Sequence[ComparisonGroup], out: Path,
               report: PhaseReport, allow_pickle: bool, governor: ThreadGovernor, split: dict | None = None,
               on_step: OnStep | None = None) -> dict:
    import torch

    from rmbench.train.models import make_trainer

    pairs = preference_pairs(groups)
    n_pairs = len(pairs) // 2
    fingerprint = data_fingerprint(groups)
    run_id = sha256_hex(canonical_json({"config": config.hyperparameters(), "kind": kind, "data": fingerprint,
                                        "checkpoint": CHECKPOINT_FORMAT}))
    torch.manual_seed(config.seed)
    governor.hold()
    trainer = make_trainer(kind, config, Runtime(dtype="float32", device="cpu", allow_pickle=allow_pickle))
    optimizer = torch.optim.AdamW(trainer.param_groups, lr=config.lr)
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.pt"
    atomic_write_text(out / UNFINISHED, UNFINISHED_TEXT)
    at = _resume(checkpoint, run_id, trainer, optimizer)
    trainer.model.train()
    trainer.prepare(pairs, report)
    if at.epoch or at.pairs_done:
        done = [f"epochs 1-{at.epoch}/{config.epochs}"] if at.epoch else []
        done += [f"{at.pairs_done} of {n_pairs} pairs of epoch {at.epoch + 1}/{config.epochs}"] if at.pairs_done else []
        report.restored("train", f"{kind}-rm {' and '.join(done)} (from checkpoint)",
                        n_pairs * at.epoch + at.pairs_done)

    def save() -> None:
        _save_checkpoint(checkpoint, {"run_id": run_id, "trainer": trainer.state(), "optimizer": optimizer.state_dict(),
                                      "rng": torch.get_rng_state(), "losses": at.losses, "epoch": at.epoch,
                                      "pairs_done": at.pairs_done, "step_losses": at.step_losses})

    with stop_at_safe_points() as stop:
        while at.epoch < config.epochs:
            description = f"{kind}-rm epoch {at.epoch + 1}/{config.epochs}"
            advance = report.begin("train", description, n_pairs - at.pairs_done)
            if not _run_epoch(trainer, optimizer, pairs, config, at, advance, stop, on_step):
                assert stop.signum is not None  # _run_epoch stops early only when a signal asked it to
                save()
                raise TrainingStopped(stop.signum, out, at.epoch + 1, config.epochs, at.pairs_done, n_pairs)
            at.end_epoch()
            save()
    losses = at.losses
    trainer.model.eval()
    card = _write_outputs(out, kind, config, trainer,
                          {"losses": losses, "fingerprint": fingerprint, "pairs": n_pairs,
                           "threads": governor.describe(), "split": split})
    checkpoint.unlink(missing_ok=True)  # only an interrupted run needs it; it holds the optimizer state too
    (out / UNFINISHED).unlink(missing_ok=True)
    return card
