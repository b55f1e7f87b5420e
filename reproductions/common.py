"""Helpers the reproduction scripts share: scoring a model on groups, table cells, the machine line."""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rmbench.core.types import ComparisonGroup
from rmbench.models import Runtime, build_model, parse_model_spec
from rmbench.results.statistics.summary import summarize
from rmbench.results.storage.record import MetricRecord
from rmbench.scoring.engine import score_groups

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def score(model: str | Path, groups: Sequence[ComparisonGroup], runtime: Runtime) -> np.ndarray:
    """Rewards of ``model`` (a preset, a ``--model`` string or a trained folder) for every response."""
    rm = build_model(parse_model_spec(str(model)), runtime)
    rewards, _ = score_groups(rm, groups, runtime)
    return rewards


def metrics(task: str, groups: Sequence[ComparisonGroup], rewards: np.ndarray, units: np.ndarray | None = None,
            eps: Sequence[float] = (0.0,), **kw) -> dict[tuple, MetricRecord]:
    """summarize() keyed by (shift or 'none', metric, eps), overall subset only."""
    out = {}
    for r in summarize(task, groups, rewards, eps, group_units=units, n_bootstrap=1000, **kw):
        if r.subset is None:
            out[(r.shift or "none", r.metric, r.eps)] = r
    return out


def cell(r: MetricRecord | None, digits: int = 3) -> str:
    return "-" if r is None else r.estimate.format(digits)


def tqdm_progress(description: str, total: int):
    """A progress bar for rmbench.train.trainer.train_one: returns its advance(n) callback."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, unit="pair").update


def machine_line(runtime: Runtime | None = None) -> str:
    import torch
    import transformers

    from rmbench import __version__
    from rmbench.models.hf.loading import resolve_dtype

    dtype = f", scoring in {resolve_dtype(runtime.dtype, 'cpu')}" if runtime else ""
    return (f"{platform.machine()} ({torch.get_num_threads()} threads){dtype}, python {platform.python_version()}, "
            f"torch {torch.__version__}, transformers {transformers.__version__}, rmbench {__version__}")
