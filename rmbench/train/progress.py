"""How long ``rmbench train`` will take: the plan line and an estimate for the whole job.

A job is a sequence of *phases*, each a (kind, phase) pair with a number of items:

* ``("ex", "train")``: pairs x epochs EX-RM updates;
* ``("im", "reference")``: the IM-RM reference log-probs, one inference pass over the
  distinct training responses (texts), before the first update;
* ``("im", "train")``: pairs x epochs IM-RM updates.

Their costs per item differ (an IM update runs the LM head's log-softmax over the response
tokens, the reference pass has no backward), so one rate extrapolated over the whole job is
wrong. The estimate keeps a rate per phase, measured on that phase's own steps:

    remaining = sum over phases p of  (items_p - done_p) * seconds_per_item_p

seconds_per_item_p = (seconds of p's steps after its first) / (items of those steps); the first
step of a phase (allocations, the optimizer's state) counts only while it is the only one.
A phase not yet started is priced relative to the measured ones with :data:`PRIOR_COST`
(seconds per item in units of an EX-RM pair update; on a quiet 2-core CPU, SmolLM2-135M and
the persona pairs, full fine-tuning: EX 1.47 and IM 1.42 pairs/s, reference 14 texts/s; LoRA:
EX 2.08, IM 2.03 pairs/s):

    seconds_per_item_p ~= PRIOR_COST[p] * (sum of measured seconds) / (sum of measured items * PRIOR_COST)

and the estimate is *provisional* (shown with ``~``) until every phase with work left has
been measured, i.e. after the first steps of each kind. Loading the base and saving the
outputs (seconds) are not counted. Work restored from a checkpoint counts as done, untimed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

PRIOR_COST = {"train": {"ex": 1.0, "im": 1.05}, "reference": {"im": 0.1}}
"""Seconds per item relative to an EX-RM pair update, for phases not yet measured."""


def prior_cost(kind: str, phase: str) -> float:
    return PRIOR_COST.get(phase, {}).get(kind, 1.0)


def plan_phases(kinds: Sequence[str], n_pairs: int, n_texts: int, epochs: int) -> list[tuple[str, str, int]]:
    """The phases of a job, in the order they run: (kind, phase, items)."""
    out = []
    for kind in kinds:
        if kind == "im":
            out.append((kind, "reference", n_texts))
        out.append((kind, "train", n_pairs * epochs))
    return out


def plan_line(kinds: Sequence[str], n_pairs: int, n_texts: int, config) -> str:
    """One line that says what the job will do, printed before it starts."""
    steps = math.ceil(n_pairs / config.batch_size) * config.epochs
    tuning = "full fine-tuning"
    if config.lora:
        tuning = (f"LoRA r={config.lora_r}, alpha={config.lora_alpha:g}, dropout={config.lora_dropout:g} on "
                  f"{config.lora_targets}{' layers' * (config.lora_targets == 'all-linear')} (merged when saved)")
    line = (f"plan: {n_pairs} pairs x {config.epochs} epoch{'s' * (config.epochs != 1)} x {len(kinds)} "
            f"kind{'s' * (len(kinds) != 1)} ({', '.join(kinds)}) = {n_pairs * config.epochs * len(kinds)} pair "
            f"updates in {steps * len(kinds)} steps of <= {config.batch_size} pairs")
    if "im" in kinds:
        line += f", and the IM-RM's reference log-probs of {n_texts} texts (one inference pass)"
    return f"{line}; {tuning}, max_length {config.max_length}, float32 on cpu"


def split_line(split: dict) -> str:
    """One line that says which part of the data the job trains on."""
    if split["part"] == "all":
        return (f"data: every group of {split['data']} ({split['groups']}), no held-out part (--split all): "
                f"rmbench eval of these models on it scores their own training rows")
    return (f"data: the train part of {split['data']} ({split['groups']} groups; {split['rule']}); rmbench eval of "
            f"these models on the same data scores only its held_out part")


@dataclass
class _Phase:
    kind: str
    phase: str
    total: int
    done: int = 0
    steps: int = 0
    first_items: int = 0
    first_seconds: float = 0.0
    items: int = 0  # timed items after the first step
    seconds: float = 0.0
    last_items: int = 0

    def rate(self) -> float | None:
        """Measured seconds per item, or None before the first step."""
        if self.items:
            return self.seconds / self.items
        return self.first_seconds / self.first_items if self.first_items else None


class JobEstimate:
    """Remaining seconds of a whole training job; see the module docstring for the formula.

    ``phases``: (kind, phase, items) as from :func:`plan_phases`. The caller reports
    :meth:`start` when a phase (or another epoch of it) begins, :meth:`advance` after each step,
    :meth:`restore` for items a checkpoint already holds. ``clock``: seconds, monotonic.
    """

    def __init__(self, phases: Sequence[tuple[str, str, int]], clock: Callable[[], float] = time.monotonic) -> None:
        self.phases = {(k, p): _Phase(k, p, n) for k, p, n in phases}
        self.clock = clock
        self._current: _Phase | None = None
        self._last = clock()

    def _phase(self, kind: str, phase: str) -> _Phase:
        return self.phases.setdefault((kind, phase), _Phase(kind, phase, 0))

    def start(self, kind: str, phase: str) -> None:
        self._current, self._last = self._phase(kind, phase), self.clock()

    def advance(self, kind: str, phase: str, n: int) -> None:
        p, now = self._phase(kind, phase), self.clock()
        dt, self._last, self._current = now - self._last, now, p
        p.done, p.steps, p.last_items = p.done + n, p.steps + 1, n
        if p.steps == 1:
            p.first_items, p.first_seconds = n, dt
        else:
            p.items, p.seconds = p.items + n, p.seconds + dt

    def restore(self, kind: str, phase: str, n: int) -> None:
        p = self._phase(kind, phase)
        p.done += n

    def remaining(self) -> tuple[float | None, bool]:
        """(seconds left, provisional); seconds is None before any step was timed."""
        measured = [(p, rate, p.items or p.first_items) for p in self.phases.values()
                    if (rate := p.rate()) is not None]
        if not measured:
            return None, True
        scale = (sum(rate * n for _, rate, n in measured)
                 / sum(prior_cost(p.kind, p.phase) * n for p, _, n in measured))
        total, provisional = 0.0, False
        for p in self.phases.values():
            left = max(p.total - p.done, 0)
            if left:
                rate = p.rate()
                if rate is None:
                    rate, provisional = scale * prior_cost(p.kind, p.phase), True
                total += left * rate
        current = self._current
        current_rate = current.rate() if current is not None else None
        if current is not None and current.total > current.done and current_rate is not None:
            # count down through the step under way, at most by the time one step is expected to take
            step = current_rate * min(current.last_items, current.total - current.done)
            total -= min(self.clock() - self._last, step)
        return max(total, 0.0), provisional


def format_eta(seconds: float | None, provisional: bool) -> str:
    """``eta 1:02:03``; ``eta ~1:02:03`` while some phase is still unmeasured; ``eta ?`` before any step."""
    if seconds is None:
        return "eta ?"
    s = int(round(seconds))
    return f"eta {'~' if provisional else ''}{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class PhaseReport:
    """What :func:`rmbench.train.trainer.train_one` tells its ``progress`` argument, for one kind.

    ``progress`` is either a plain factory ``progress(description, total) -> advance(n)`` or an
    object with ``begin(kind, phase, description, total) -> advance(n)`` and, optionally,
    ``restored(kind, phase, description, items)`` (work a checkpoint held), which the CLI's
    whole-job progress uses to know which phase each step belongs to.
    """

    def __init__(self, progress, kind: str) -> None:
        self.progress, self.kind = progress, kind

    def begin(self, phase: str, description: str, total: int) -> Callable[[int], None]:
        if self.progress is None:
            return lambda n: None
        begin = getattr(self.progress, "begin", None)
        return begin(self.kind, phase, description, total) if begin else self.progress(description, total)

    def restored(self, phase: str, description: str, items: int) -> None:
        restored = getattr(self.progress, "restored", None)
        if restored is not None:
            restored(self.kind, phase, description, items)


def quiet_hf_progress():
    """transformers' and huggingface_hub's own bars (``Loading weights``, ``Writing model shards``,
    downloads) off while training, as they were after it: :func:`rmbench.models.quiet.quiet_loading`
    with the download bars off too."""
    from rmbench.models.quiet import quiet_loading

    return quiet_loading(downloads=False)
