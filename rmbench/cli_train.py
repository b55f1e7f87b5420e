"""``rmbench train``: the command line over :mod:`rmbench.train`."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from rmbench.cli_common import _progress_factory, _RateColumn, app, console, err_console, user_errors


@app.command("train")
def train_command(
    base: str = typer.Option(..., "--base", help="Base causal LM: a folder, a hub id or smollm2-135m-instruct."),
    data: str = typer.Option(..., "--data", help="Training pairs: a task name or a preference JSON Lines file."),
    kind: str = typer.Option("both", "--kind", help="ex, im or both."),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder: OUT/ex and OUT/im."),
    epochs: int = typer.Option(1, "--epochs"),
    lr: float = typer.Option(1e-5, "--lr"),
    head_lr: Optional[float] = typer.Option(None, "--head-lr", help="EX-RM head learning rate (default: --lr)."),
    beta: float = typer.Option(0.1, "--beta", help="IM-RM beta (DPO)."),
    batch_size: int = typer.Option(4, "--batch-size", help="Pairs per step."),
    seed: int = typer.Option(0, "--seed"),
    max_length: int = typer.Option(512, "--max-length", help="Tokens per text (longer ones lose their start)."),
    limit: Optional[int] = typer.Option(None, "--limit", help="Use only the first N groups."),
    include: List[Path] = typer.Option([], "--include", help="Extra task entry folders."),
    lora: bool = typer.Option(False, "--lora", help="LoRA instead of full fine-tuning (needs peft)."),
    allow_pickle: bool = typer.Option(False, "--allow-pickle", help="Allow a base model in pickle files "
                                      "(pytorch_model.bin), which can run code when loaded."),
) -> None:
    """Train an EX-RM (linear head) and/or an IM-RM (DPO) from one base on the same pairs."""
    from rmbench.catalog import load_catalog
    from rmbench.errors import ConfigError
    from rmbench.tasks.jsonl import PreferenceTask
    from rmbench.tasks.loading import load_groups
    from rmbench.train import TrainConfig, train_one

    with user_errors():
        if lora:
            raise ConfigError("--lora is not available yet: rmbench train does full fine-tuning")
        config = TrainConfig(base=base, kind=kind, epochs=epochs, lr=lr, beta=beta, batch_size=batch_size, seed=seed,
                             max_length=max_length, head_lr=head_lr)
        if Path(data).is_file():
            groups = list(PreferenceTask(path=data).groups())[:limit]
        else:
            _, groups = load_groups(load_catalog(include).task_spec(data), limit)
        with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("pairs"), _RateColumn(), TimeElapsedColumn(), TextColumn("eta"),
                      TimeRemainingColumn(), console=err_console) as progress:
            for k in (["ex", "im"] if kind == "both" else [kind]):
                card = train_one(k, config, groups, out / k, _progress_factory(progress), allow_pickle=allow_pickle)
                console.print(f"{k.upper()}-RM: loss per epoch {', '.join(f'{x:.4f}' for x in card['loss_per_epoch'])}"
                              f"; evaluate with: rmbench eval --model {out / k}", markup=False, highlight=False)
