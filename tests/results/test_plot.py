"""rmbench.results.publishing.plot: D(eps)-Spec(eps) curves and shift bars drawn from real (built-in model) runs."""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from rmbench.errors import ConfigError  # noqa: E402
from rmbench.results.publishing.plot import (  # noqa: E402
    curve_data,
    ds_curve_svg,
    eps_label,
    plot_ds_curves,
    plot_runs,
    plot_shift_bars,
    run_labels,
)
from rmbench.results.storage.folder import RunFolder, load_run  # noqa: E402
from rmbench.scoring.runner import EvalConfig, evaluate  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TIES_BUILTIN = Path(__file__).resolve().parents[2] / "tasks" / "data" / "ties_builtin.jsonl"


def _run(root: Path, name: str, model: str, task: str = "ties_sample", **kw) -> RunFolder:
    evaluate(EvalConfig(model=model, tasks=(task,), n_bootstrap=20, use_cache=False, **kw), out_dir=root / name)
    return load_run(root / name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, RunFolder]:
    root = tmp_path_factory.mktemp("plot_runs")
    return {"length": _run(root, "len", "length"), "oracle": _run(root, "oracle", "oracle"),
            "constant": _run(root, "const", "constant"),
            "raw": _run(root, "len_raw", "length", eps=(0.0, 5.0), eps_unit="raw"),
            "shift": _run(root, "len_shift", "length", "paraphrase_shift_sample"),
            "shift_oracle": _run(root, "oracle_shift", "oracle", "paraphrase_shift_sample")}


def _recorded(folder: RunFolder, task: str = "ties_sample") -> tuple:
    rec = folder.record
    return tuple((e, rec.metric(task, "specificity", eps=e).value, rec.metric(task, "discrimination", eps=e).value)
                 for e in sorted(rec.task(task).eps))


def _check_png(path: Path) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC


def _check_svg(path: Path) -> None:
    root = ET.fromstring(path.read_bytes())
    assert root.tag.endswith("svg")


def test_plot_runs_writes_every_figure(runs, tmp_path):
    notes: list[str] = []
    out = tmp_path / "figs"
    paths = plot_runs(list(runs.values()), out, warn=notes.append)
    names = sorted(p.name for p in paths)
    assert names == ["paraphrase_shift_sample_shift.png", "paraphrase_shift_sample_shift.svg",
                     "ties_sample_ds_curve.png",
                     "ties_sample_ds_curve.svg"]
    assert sorted(p.name for p in out.iterdir()) == names  # nothing half-written or left over
    for p in paths:
        (_check_png if p.suffix == ".png" else _check_svg)(p)
    # A paired shift task has no specificity pairs: no curve, and a note says so.
    assert any("paraphrase_shift_sample" in n and "no D-Spec curve" in n for n in notes)


def test_plot_runs_task_filter_and_unknown_task(runs, tmp_path):
    paths = plot_runs([runs["length"], runs["shift"]], tmp_path, formats=("png",), tasks=("ties_sample",))
    assert [p.name for p in paths] == ["ties_sample_ds_curve.png"]
    with pytest.raises(ConfigError, match="no run has task 'nope'"):
        plot_runs([runs["length"]], tmp_path, tasks=("nope",))


@pytest.mark.parametrize("name", ["length", "oracle", "constant", "raw"])
def test_marked_points_are_the_recorded_metrics(runs, name):
    folder = runs[name]
    c = curve_data(folder, "ties_sample")
    assert c.note is None and c.dense
    assert c.recorded == _recorded(folder)  # exactly the records' values
    assert len(c.recorded) == 2
    assert c.label == folder.record.model_name and c.eps_unit == folder.record.task("ties_sample").eps_unit


@pytest.mark.parametrize("name", ["length", "oracle", "constant", "raw"])
def test_dense_curve_passes_through_recorded_points(runs, name):
    c = curve_data(runs[name], "ties_sample")
    for e, spec, d in c.recorded:
        i = np.flatnonzero(c.eps == e)
        assert i.size == 1, f"recorded eps {e} not on the grid"
        assert abs(c.spec[i[0]] - spec) <= 1e-12 and abs(c.d[i[0]] - d) <= 1e-12


@pytest.mark.parametrize("name", ["length", "oracle", "constant", "raw"])
def test_curve_is_monotone_and_reaches_the_end(runs, name):
    c = curve_data(runs[name], "ties_sample")
    assert np.all(np.diff(c.eps) > 0) and c.eps[0] == 0.0
    assert np.all(np.diff(c.d) <= 0) and np.all(np.diff(c.spec) >= 0)
    assert np.all((0 <= c.d) & (c.d <= 1) & (0 <= c.spec) & (c.spec <= 1))
    assert c.d[-1] == 0.0 and c.spec[-1] == 1.0  # the grid goes far enough: D reaches 0, Spec 1


def test_dense_grid_is_dense(runs):
    c = curve_data(runs["length"], "ties_sample")
    assert c.eps.size >= 100
    assert eps_label(0.1, "sigma") == "eps=0.1σ" and eps_label(0.0, "sigma") == "eps=0"
    assert eps_label(5.0, "raw") == "eps=5"


def test_oracle_reaches_the_ideal_corner(runs):
    c = curve_data(runs["oracle"], "ties_sample")
    assert np.any((c.spec == 1.0) & (c.d == 1.0))
    assert all(s == 1.0 and d == 1.0 for _, s, d in c.recorded)


def _trimmed_run(tmp_path: Path) -> RunFolder:
    data = tmp_path / "ties_part.jsonl"
    data.write_text("".join(TIES_BUILTIN.read_text(encoding="utf-8").splitlines(keepends=True)[:16]),
                    encoding="utf-8")
    folder = _run(tmp_path, "part", "length", data=(("ties_sample", str(data)),))
    data.unlink()  # the data file is gone (and the built-in copy is other data)
    return folder


def _rewardless_run(tmp_path: Path) -> RunFolder:
    folder = _run(tmp_path, "norewards", "length")
    (folder.path / "rewards.jsonl").unlink()
    return folder


@pytest.mark.parametrize("make", [_trimmed_run, _rewardless_run], ids=["data deleted", "rewards deleted"])
def test_lost_data_draws_the_recorded_points_with_a_note(tmp_path, make):
    folder = make(tmp_path)
    c = curve_data(folder, "ties_sample")
    assert not c.dense and c.note is not None and "recorded points" in c.note
    assert c.recorded == _recorded(folder)
    assert list(zip(c.eps, c.spec, c.d)) == list(c.recorded)
    notes: list[str] = []
    paths = plot_ds_curves([folder], "ties_sample", tmp_path / "figs" / "curve", warn=notes.append)
    assert [p.name for p in paths] == ["curve.png", "curve.svg"]
    _check_png(paths[0]), _check_svg(paths[1])
    assert notes == [c.note]


def test_shift_bars(runs, tmp_path):
    paths = plot_shift_bars([runs["shift"], runs["shift_oracle"], runs["length"]], "paraphrase_shift_sample",
                            tmp_path / "shift")
    assert [p.name for p in paths] == ["shift.png", "shift.svg"]
    _check_png(paths[0]), _check_svg(paths[1])
    assert runs["shift"].record.task("paraphrase_shift_sample").shifts == ("none", "paraphrase")
    with pytest.raises(ConfigError, match="no shifts"):
        plot_shift_bars([runs["length"]], "ties_sample", tmp_path / "no_shift")


def test_svg_is_inline_and_deterministic(runs, tmp_path):
    folders = [runs["length"], runs["oracle"]]
    a, b = ds_curve_svg(folders, "ties_sample"), ds_curve_svg(folders, "ties_sample")
    assert a == b and a.startswith("<svg") and "<?xml" not in a and "DOCTYPE" not in a
    ET.fromstring(a)
    p1 = plot_ds_curves(folders, "ties_sample", tmp_path / "one", formats=("svg",))[0]
    p2 = plot_ds_curves(folders, "ties_sample", tmp_path / "two", formats=("svg",))[0]
    assert p1.read_bytes() == p2.read_bytes()
    # Runs without the task are left out; a task no run has is refused.
    assert ds_curve_svg(folders + [runs["shift"]], "ties_sample") == a
    with pytest.raises(ConfigError):
        ds_curve_svg([runs["shift"]], "ties_sample")


def test_shift_task_curve_svg_says_it_is_undefined(runs):
    c = curve_data(runs["shift"], "paraphrase_shift_sample")
    assert not c.defined and c.recorded == () and "no specificity pairs" in c.note
    ET.fromstring(ds_curve_svg([runs["shift"]], "paraphrase_shift_sample"))  # a figure, not an error


def test_same_model_twice_is_told_apart(runs, tmp_path):
    copy = tmp_path / "len_again"
    shutil.copytree(runs["length"].path, copy)
    again = load_run(copy)
    assert run_labels([runs["length"], again, runs["oracle"]]) == ["length (len)", "length (len_again)", "oracle"]
    paths = plot_ds_curves([runs["length"], again], "ties_sample", tmp_path / "twice", formats=("png",))
    _check_png(paths[0])


def test_bad_format_writes_nothing(runs, tmp_path):
    with pytest.raises(ConfigError, match="figure format 'bmpx'"):
        plot_ds_curves([runs["length"]], "ties_sample", tmp_path / "x", formats=("png", "bmpx"))
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_is_a_config_error(runs, tmp_path, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ConfigError, match=r"pip install 'rmbench\[plot\]'"):
        plot_runs([runs["length"]], tmp_path)
    with pytest.raises(ConfigError, match="needs matplotlib"):
        ds_curve_svg([runs["length"]], "ties_sample")


def _lines_and_labels(fig):
    ax = fig.axes[0]
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 1]
    return curves, [t.get_text() for t in ax.texts if t.get_text().startswith("eps=")]


def test_identical_curves_are_told_apart_and_named(runs, tmp_path):
    from rmbench.results.publishing.plot import ds_figure

    copy = tmp_path / "len_again"
    shutil.copytree(runs["length"].path, copy)
    fig, notes = ds_figure([runs["length"], load_run(copy)], "ties_sample")
    curves, labels = _lines_and_labels(fig)
    assert len(curves) == 2 and curves[0].get_linestyle() != curves[1].get_linestyle()
    assert np.array_equal(curves[0].get_xdata(), curves[1].get_xdata())  # the same points, drawn twice
    assert curves[1].get_label().endswith("= length (len)")
    assert "length (len_again): identical to length (len) (drawn '--' over it)" in notes
    # the copy's eps labels would sit on the first curve's: only the first curve's are written
    alone, _ = ds_figure([runs["length"]], "ties_sample")
    assert len(labels) == len(_lines_and_labels(alone)[1])
    markers = [line.get_marker() for line in fig.axes[0].get_lines() if len(line.get_xdata()) == 1]
    assert {"o", "s"} <= set(markers)  # each run's recorded points in its own marker


def test_eps_labels_are_thinned_where_points_crowd(runs, tmp_path):
    from rmbench.results.publishing.plot import ds_figure
    from rmbench.results.publishing.plot_marks import LABEL_ROOM

    # constant sits at (1, 0) at every eps; a length run with a large eps ends next to it
    near = _run(tmp_path, "len_wide", "length", eps=(0.0, 0.1, 50.0))
    fig, _ = ds_figure([runs["constant"], near], "ties_sample")
    ax = fig.axes[0]
    labelled = [t.xy for t in ax.texts if t.get_text().startswith("eps=")]
    for i, a in enumerate(labelled):
        for b in labelled[:i]:
            assert np.hypot(a[0] - b[0], a[1] - b[1]) >= LABEL_ROOM, (a, b)
    points = sum(len({(s, d) for _, s, d in _recorded(f)}) for f in (runs["constant"], near))
    assert (1.0, 0.0) in labelled and len(labelled) == points - 1  # length's eps=50σ label left out


def test_a_run_keeps_its_colour_in_every_figure_of_a_build(tmp_path):
    """issue 32: colours follow a run's place among all the build's runs, not among those that
    have the figure's task."""
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    from rmbench.results.publishing.plot import ds_figure
    from rmbench.results.publishing.plot_canvas import colour
    from rmbench.results.storage.folder import load_run
    from rmbench.scoring.runner import EvalConfig, evaluate

    evaluate(EvalConfig(model="oracle", tasks=("paraphrase_invariance_sample",), n_bootstrap=10),
             out_dir=tmp_path / "a")
    evaluate(EvalConfig(model="length", tasks=("ties_sample", "paraphrase_invariance_sample"), n_bootstrap=10),
             out_dir=tmp_path / "b")
    runs = [load_run(tmp_path / "a"), load_run(tmp_path / "b")]
    fig, _ = ds_figure(runs, "ties_sample")  # only run b has ties_sample
    lines = [line for line in fig.axes[0].get_lines() if line.get_label().startswith("length")]
    assert lines and to_hex(lines[0].get_color()) == to_hex(colour(1))
    fig, _ = ds_figure(runs, "paraphrase_invariance_sample")
    colours = {line.get_label().split()[0]: to_hex(line.get_color()) for line in fig.axes[0].get_lines()
               if line.get_label().startswith(("oracle", "length"))}
    assert colours == {"oracle": to_hex(colour(0)), "length": to_hex(colour(1))}
