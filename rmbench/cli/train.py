"""``rmbench train``: the command line over :mod:`rmbench.train.trainer`.

Before training it prints the plan (pairs, epochs, kinds, steps); meanwhile one line per phase
(each epoch of each kind, the IM-RM's reference pass) and an overall line counting every pair
update of the job (pairs x epochs x kinds) whose eta is the whole job's, from a rate measured
per phase (:class:`rmbench.train.progress.JobEstimate`; ``~`` while a kind has not run yet).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from rmbench.cli.common import (
    FULL_PROGRESS_WIDTH,
    _RateColumn,
    app,
    console,
    err_console,
    interrupt_exit_code,
    progress_display,
    sigterm_as_interrupt,
    user_errors,
)


class _EtaColumn(ProgressColumn):
    """The overall line's eta from its :class:`JobEstimate`; other lines' from rich's own rate."""

    def __init__(self) -> None:
        super().__init__()
        self._rich = TimeRemainingColumn()

    def render(self, task) -> Text:
        from rmbench.train.progress import format_eta

        estimate = task.fields.get("estimate")
        if estimate is not None:
            return Text(format_eta(*estimate.remaining()), style="progress.remaining")
        if task.finished:
            return Text("done", style="progress.remaining")
        return Text.assemble("eta ", self._rich.render(task))


def _plain_eta(fields: dict) -> str | None:
    """The overall line's eta on a pipe or in a log (plain lines): the whole job's estimate."""
    from rmbench.train.progress import format_eta

    estimate = fields.get("estimate")
    return None if estimate is None else format_eta(*estimate.remaining())


def _columns(width: int) -> tuple[ProgressColumn, ...]:
    description = TextColumn("{task.description}", style="progress.description", markup=False,
                             table_column=Column(overflow="fold"))
    counts = (MofNCompleteColumn(), TextColumn("{task.fields[unit]}", markup=False), _RateColumn(digits=2),
              TimeElapsedColumn(), _EtaColumn())
    if width < FULL_PROGRESS_WIDTH:
        return (description, *counts)
    return (description, BarColumn(bar_width=None, table_column=Column(max_width=30)), *counts)


class _JobProgress:
    """The progress lines of a training job (rich bars, or plain lines off a terminal); passed to
    ``train_one`` as its ``progress`` (it has the ``begin``/``restored`` methods of
    :class:`rmbench.train.progress.PhaseReport`)."""

    def __init__(self, progress, kinds: list[str], n_pairs: int, n_texts: int, epochs: int) -> None:
        from rmbench.train.progress import JobEstimate, plan_phases

        self.progress = progress
        self.estimate = JobEstimate(plan_phases(kinds, n_pairs, n_texts, epochs))
        label = f"all: {'+'.join(kinds)}, {epochs} epoch{'s' * (epochs != 1)}"
        self.overall = progress.add_task(label, total=n_pairs * epochs * len(kinds), unit="pairs",
                                         estimate=self.estimate)

    def begin(self, kind: str, phase: str, description: str, total: int):
        unit = "texts" if phase == "reference" else "pairs"
        task = self.progress.add_task(description, total=total, unit=unit)
        self.estimate.start(kind, phase)

        def advance(n: int) -> None:
            self.estimate.advance(kind, phase, n)
            self.progress.advance(task, n)
            if phase == "train":
                self.progress.advance(self.overall, n)
        return advance

    def restored(self, kind: str, phase: str, description: str, items: int) -> None:
        self.progress.add_task(description, total=items, completed=items, unit="texts" if phase == "reference"
                               else "pairs")
        self.estimate.restore(kind, phase, items)
        if phase == "train":
            self.progress.advance(self.overall, items)


def _lora_settings(lora: bool, r: int | None, alpha: float | None, dropout: float | None,
                   targets: str | None) -> dict:
    from rmbench.errors import ConfigError

    given = {"lora_r": r, "lora_alpha": alpha, "lora_dropout": dropout, "lora_targets": targets}
    given = {k: v for k, v in given.items() if v is not None}
    if given and not lora:
        raise ConfigError(f"{', '.join('--' + k.replace('_', '-') for k in given)} appl"
                          f"{'ies' if len(given) == 1 else 'y'} only with --lora")
    if lora:
        from rmbench.train.lora import import_peft

        import_peft()  # its error before any data or weights load
    return {"lora": lora, **given}


@app.command("train")
def train_command(
    base: str = typer.Option(..., "--base", help="Base causal LM: a folder, a hub id or smollm2-135m-instruct."),
    data: str = typer.Option(..., "--data", help="Training pairs: a task name or a preference JSON Lines file."),
    kind: str = typer.Option("both", "--kind", help="ex, im or both."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder: OUT/ex and OUT/im."),
    epochs: int = typer.Option(1, "--epochs"),
    lr: float = typer.Option(1e-5, "--lr"),
    head_lr: float | None = typer.Option(None, "--head-lr", help="EX-RM head learning rate (default: --lr)."),
    beta: float = typer.Option(0.1, "--beta", help="IM-RM beta (DPO)."),
    batch_size: int = typer.Option(4, "--batch-size", help="Pairs per step."),
    seed: int = typer.Option(0, "--seed"),
    max_length: int = typer.Option(512, "--max-length", help="Tokens per text (longer ones lose their start)."),
    limit: int | None = typer.Option(None, "--limit",
                                     help="Train on a sample of N groups (as eval's --limit: by a hash "
                                        "of the group ids, over every slice)."),
    include: list[Path] = typer.Option([], "--include", metavar="DIR", help="Extra task entry folders."),
    lora: bool = typer.Option(False, "--lora", help="LoRA adapters instead of full fine-tuning, merged into the "
                              "saved weights (needs peft: pip install 'rmbench[lora]')."),
    lora_r: int | None = typer.Option(None, "--lora-r", help="LoRA rank (default 8)."),
    lora_alpha: float | None = typer.Option(None, "--lora-alpha", help="LoRA alpha; updates scale by "
                                               "alpha/r (default 16)."),
    lora_dropout: float | None = typer.Option(None, "--lora-dropout", help="Dropout on the LoRA inputs "
                                                 "(default 0)."),
    lora_targets: str | None = typer.Option(None, "--lora-targets", help="Modules that get adapters: "
                                               "all-linear (default: the attention and MLP projections) or "
                                               "comma-separated names such as q_proj,v_proj."),
    allow_pickle: bool = typer.Option(False, "--allow-pickle", help="Allow a base model in pickle files "
                                      "(pytorch_model.bin), which can run code when loaded."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads (default: the CPUs this process may "
                                          "use, less those other processes keep busy at the start)."),
    split: str = typer.Option("train", "--split", help="train: only the train part of the data (80%, a hash split "
                              "of group ids; rmbench eval of the model on the same data scores the other 20%); "
                              "all: every group."),
    eval_tasks: str | None = typer.Option(None, "--eval-tasks", help="Comma-separated tasks to evaluate during "
                                          "training with the model being trained, a run folder per evaluation in "
                                          "OUT/eval/KIND/step-NNNNNN (rmbench plot and leaderboard read them)."),
    eval_every: int | None = typer.Option(None, "--eval-every", help="Evaluate --eval-tasks every N update steps "
                                          "(and after the last step; default: after the last step only)."),
    eval_limit: int | None = typer.Option(None, "--eval-limit", help="Groups per task in those evaluations (as "
                                          "eval's --limit)."),
) -> None:
    """Train an EX-RM (linear head) and/or an IM-RM (DPO) from one base on the same pairs."""
    from rmbench.catalog import load_catalog
    from rmbench.models.threads import check_threads
    from rmbench.tasks.loading import load_groups
    from rmbench.train.models import distinct_responses
    from rmbench.train.progress import plan_line, split_line
    from rmbench.train.trainer import TrainConfig, preference_pairs, train_one, training_data

    with user_errors():
        check_threads(threads)
        config = TrainConfig(base=base, kind=kind, epochs=epochs, lr=lr, beta=beta, batch_size=batch_size, seed=seed,
                             max_length=max_length, head_lr=head_lr,
                             **_lora_settings(lora, lora_r, lora_alpha, lora_dropout, lora_targets))
        spec, split_record = training_data(data, split, load_catalog(include))
        _, groups = load_groups(spec, limit)
        split_record["groups"] = len(groups)
        kinds = ["ex", "im"] if kind == "both" else [kind]
        pairs = preference_pairs(groups)
        n_pairs, n_texts = len(pairs) // 2, len(distinct_responses(pairs))
        during = _evaluation(eval_tasks, eval_every, eval_limit, include, split_record, config, n_pairs)
        err_console.print(plan_line(kinds, n_pairs, n_texts, config), markup=False, highlight=False, soft_wrap=True)
        err_console.print(split_line(split_record), markup=False, highlight=False, soft_wrap=True)
        try:
            with sigterm_as_interrupt(), progress_display(_columns(err_console.width), "pairs",
                                                          eta=_plain_eta) as progress:
                job = _JobProgress(progress, kinds, n_pairs, n_texts, epochs)
                for k in kinds:
                    card = train_one(k, config, groups, out / k, job, allow_pickle=allow_pickle, threads=threads,
                                     split=split_record, on_step=during(k, out) if during else None)
                    console.print(f"{k.upper()}-RM: loss per epoch "
                                  f"{', '.join(f'{x:.4f}' for x in card['loss_per_epoch'])}; evaluate with: "
                                  f"rmbench eval --model {out / k}", markup=False, highlight=False)
        except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: stopped at a safe point (TrainingStopped) or at once
            _interrupted(exc)


def _evaluation(tasks: str | None, every: int | None, limit: int | None, include: list[Path], split: dict,
                config, n_pairs: int):
    """``--eval-tasks``: a factory ``during(kind, out) -> on_step`` of the evaluation hook that
    ``train_one`` calls after every update (None without the option)."""
    from rmbench.errors import ConfigError
    from rmbench.scoring.training_eval import TrainingEval
    from rmbench.train.trainer import step_count

    if tasks is None:
        if every is not None or limit is not None:
            raise ConfigError("--eval-every and --eval-limit apply only with --eval-tasks")
        return None
    if every is not None and every < 1:
        raise ConfigError(f"--eval-every must be >= 1, got {every}")
    names = tuple(t.strip() for t in tasks.split(",") if t.strip())
    last = step_count(config, n_pairs, config.epochs - 1, n_pairs)
    note = lambda m: err_console.print(f"note: {m}", markup=False, highlight=False, soft_wrap=True)  # noqa: E731
    # The training data's split record: a task that is the training data is scored on its held-out part.
    check = TrainingEval(names, limit=limit, include=tuple(str(i) for i in include), trained_on=split, warn=note)
    check.loaded_tasks()  # a misspelt task or a bad row fails before any training

    def during(kind: str, out: Path):
        from rmbench.core.specs import ModelSpec
        from rmbench.scoring.training_eval import step_name

        # A new training run into the same --out replaces its evaluations, as it replaces its models.
        evaluation = check.writing_to(out / "eval" / kind, overwrite=True)
        name = str(out / kind)

        def on_step(step: int, trainer) -> None:
            if step != last and (every is None or step % every):
                return
            spec = ModelSpec.make(step_name(name, step), "linear" if kind == "ex" else "implicit",
                                  {"model": name, "step": step, "trainer": "rmbench train"})
            result = evaluation.run(trainer.live_adapter(f"{name}@step-{step}"), spec, step, trainer.live_modules())
            console.print(f"{kind.upper()}-RM step {step}: wrote {result.folder}", markup=False, highlight=False)
        return on_step
    return during


def _interrupted(exc: KeyboardInterrupt) -> None:
    """One line on what an interrupted training run kept, and the exit code of its signal."""
    from rmbench.train.stopping import TrainingStopped

    if isinstance(exc, TrainingStopped):
        kept, code = exc.kept(), 128 + exc.signum
    else:  # before the first update step, or a second Ctrl-C
        kept, code = "each folder keeps its last checkpoint, if it saved one", interrupt_exit_code(exc)
    err_console.print(f"[bold yellow]interrupted:[/] {escape(kept)}; the same train command resumes from it "
                      f"(the folder is no model until it finishes)", highlight=False, soft_wrap=True)
    raise typer.Exit(code)
