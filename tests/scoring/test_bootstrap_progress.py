"""A large task's bootstrap shows a bar of resamples (the metric phase of PPE's correctness sets
takes 20 s to minutes): through the runner's progress factory, with its own unit where the
factory takes one, and as plain lines off a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from rmbench.cli import common
from rmbench.scoring import runner
from rmbench.scoring.config import EvalConfig


class Recorder:
    """A progress factory that records its bars: description, total, unit and what was advanced."""

    def __init__(self, takes_unit: bool) -> None:
        self.bars: list[dict] = []
        self.takes_unit = takes_unit

    def __call__(self, description, total, *rest, **kw):
        if not self.takes_unit and (rest or kw):
            raise AssertionError("a factory without unit was given one")
        bar = {"description": description, "total": total, "unit": kw.get("unit"), "done": 0}
        self.bars.append(bar)
        return lambda n: bar.__setitem__("done", bar["done"] + n)


def _factory(takes_unit: bool) -> Recorder:
    recorder = Recorder(takes_unit)
    if takes_unit:
        return recorder

    def plain(description, total):  # a factory of the older form: (description, total) only
        return recorder(description, total)

    plain.bars = recorder.bars  # type: ignore[attr-defined]
    return plain  # type: ignore[return-value]


@pytest.mark.parametrize("takes_unit", [True, False])
def test_a_large_tasks_bootstrap_has_a_bar_of_resamples(monkeypatch, takes_unit):
    monkeypatch.setattr(runner, "BOOTSTRAP_BAR_FROM", 0)  # every task counts as large
    factory = _factory(takes_unit)
    record = runner.evaluate(EvalConfig(model="length", tasks=["ties_sample"], n_bootstrap=30, use_cache=False),
                             progress=factory)
    slices = {(m.subset, m.shift) for m in record.tasks[0].metrics if m.metric == "ds_auc"}  # one per slice
    bars = factory.bars
    assert bars[0]["description"] == "length on ties_sample" and bars[0]["unit"] is None  # scoring: responses
    ci = [b for b in bars if b["description"] == "length on ties_sample: 95% CIs"]
    assert len(ci) == 1
    # 30 resamples of each slice (the task, and each of its subsets), every one reported done
    assert len(slices) > 1 and ci[0]["total"] == 30 * len(slices) and ci[0]["done"] == ci[0]["total"]
    assert ci[0]["unit"] == ("resamples" if takes_unit else None)


def test_a_small_tasks_bootstrap_has_none():
    factory = Recorder(True)
    runner.evaluate(EvalConfig(model="length", tasks=["ties_sample"], n_bootstrap=30, use_cache=False),
                    progress=factory)
    assert [b["description"] for b in factory.bars] == ["length on ties_sample"]


def test_the_cli_display_names_each_bars_unit(monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(common, "plain_line", lines.append)
    monkeypatch.setattr(common, "err_console", Console(file=io.StringIO()))  # not a terminal: plain lines
    with common.progress_bars("responses") as factory:
        scoring, ci = factory("m on t", 4), factory("m on t: 95% CIs", 6, unit="resamples")
        scoring(4)
        ci(6)
    assert any(line.startswith("m on t: done, 4/4 responses") for line in lines), lines
    assert any(line.startswith("m on t: 95% CIs: done, 6/6 resamples") for line in lines), lines
