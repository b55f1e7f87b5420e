"""A write the machine refuses (issue 53, item 6): a full disk (ENOSPC), a read-only file system
(EROFS) or no permission (EACCES) is one ``error:`` line naming the file and the cause, exit code
2, no traceback and no file left half-written, for every command that writes: ``eval`` (its run
folder, ``--report``), ``export``, ``report``, ``leaderboard build`` in every format, ``plot``,
and the trackers (the MLflow store's check, TensorBoard's writer thread).

Two ways to fill the disk: the atomic writer patched to write half the bytes and then raise (every
test here), and a real full tmpfs mounted in a private mount namespace (``unshare -m``), where
the machine allows it (root on Linux; skipped elsewhere with the reason).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rmbench.files as files
from rmbench.cli.app import app
from rmbench.errors import WriteError
from rmbench.scoring.runner import EvalConfig, evaluate

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
CAUSES = {errno.ENOSPC: "No space left on device (the disk is full)",
          errno.EROFS: "Read-only file system (the file system is read-only)",
          errno.EACCES: "Permission denied"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for model in ("length", "oracle"):
        evaluate(EvalConfig(model=model, tasks=("ties_sample",), n_bootstrap=20, use_cache=False),
                 out_dir=root / model)
    return root


def refuse_writes(monkeypatch, code: int = errno.ENOSPC) -> list[Path]:
    """Every atomic write writes half its bytes, then fails with ``code``; returns the temporary
    files it began (each must be gone afterwards)."""
    begun: list[Path] = []

    def half_then_fail(fd: int, data: bytes) -> None:
        begun.append(Path(os.readlink(f"/proc/self/fd/{fd}")) if Path("/proc/self/fd").is_dir() else Path())
        with os.fdopen(fd, "wb") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            raise OSError(code, os.strerror(code))

    monkeypatch.setattr(files, "_write_all", half_then_fail)
    return begun


def one_error_line(result, path: Path, code: int = errno.ENOSPC) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    assert lines[0] == f"error: cannot write {path}: {CAUSES[code]}", result.output
    return lines[0]


def nothing_left(folder: Path, begun: list[Path]) -> None:
    """No file under ``folder``, and none of the temporary files begun, is left behind."""
    assert begun, "the patched writer was never called"
    assert all(not p.exists() for p in begun if p != Path()), begun
    left = [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []
    assert left == [], left


def test_the_writer_leaves_nothing_and_keeps_an_earlier_file(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("earlier\n")
    begun = refuse_writes(monkeypatch)
    with pytest.raises(WriteError) as caught:
        files.atomic_write_text(path, "x" * 10_000)
    assert str(caught.value) == f"cannot write {path}: {CAUSES[errno.ENOSPC]}"
    assert isinstance(caught.value, OSError) and caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(path)
    assert path.read_text() == "earlier\n"  # the earlier file stands, whole
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"] and not begun[0].exists()


@pytest.mark.parametrize("code", sorted(CAUSES))
def test_export_on_a_full_disk_is_one_line(runs, tmp_path, monkeypatch, code):
    begun = refuse_writes(monkeypatch, code)
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", str(runs / "length"), "--out", str(out)])
    one_error_line(result, out / "length.json", code)
    nothing_left(out, begun)
    assert not out.exists()  # nor the folder made for it


def test_report_on_a_full_disk_is_one_line(runs, tmp_path, monkeypatch):
    begun = refuse_writes(monkeypatch)
    out = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(runs), "--out", str(out)])
    one_error_line(result, out)
    nothing_left(tmp_path, begun)


@pytest.mark.parametrize("suffix", ["md", "csv", "json", "html", "tex"])
def test_leaderboard_build_on_a_full_disk_is_one_line_in_every_format(runs, tmp_path, monkeypatch, suffix):
    begun = refuse_writes(monkeypatch)
    out = tmp_path / f"board.{suffix}"
    result = runner.invoke(app, ["leaderboard", "build", str(runs), "--out", str(out)])
    one_error_line(result, out)
    nothing_left(tmp_path, begun)


def test_plot_on_a_full_disk_is_one_line(runs, tmp_path, monkeypatch):
    begun = refuse_writes(monkeypatch)
    out = tmp_path / "plots"
    result = runner.invoke(app, ["plot", str(runs), "--out", str(out), "--format", "svg"])
    one_error_line(result, out / "ties_sample_ds_curve.svg")
    nothing_left(out, begun)
    assert not out.exists()


def test_eval_on_a_full_disk_writes_no_run_and_says_so_in_one_line(tmp_path, monkeypatch):
    begun = refuse_writes(monkeypatch)
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample", "--bootstrap", "5",
                                 "--no-cache", "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: cannot write the run to {out} ({out / 'rewards.jsonl'}): {CAUSES[errno.ENOSPC]}; no results.json "
        f"was written there"), result.output
    nothing_left(tmp_path, begun)


def test_eval_report_on_a_full_disk_is_one_line_after_the_run(runs, tmp_path, monkeypatch):
    out = tmp_path / "run"
    shutil.copytree(runs / "length", out)
    real = files._write_all

    def only_reports(fd: int, data: bytes) -> None:  # the run folder is written; report.html is not
        if b"<html" in data[:200].lower() or b"<!doctype" in data[:200].lower():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    monkeypatch.setattr(files, "_write_all", only_reports)
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample", "--bootstrap", "20",
                                 "--no-cache", "--out", str(out), "--report"])
    one_error_line(result, out / "report.html")
    assert (out / "results.json").is_file() and not (out / "report.html").exists()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_a_lock_file_that_cannot_be_written_is_one_line_and_left_out(tmp_path, monkeypatch):
    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    out = tmp_path / "deep" / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample", "--bootstrap", "5",
                                 "--no-cache", "--out", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"cannot write its lock file {tmp_path / 'deep' / '.run.rmbench-lock'}: {CAUSES[errno.ENOSPC]}" \
        in result.output
    assert list(tmp_path.iterdir()) == []  # neither the lock file nor the folder made for it


def test_an_os_error_outside_the_writer_is_still_one_line(runs, tmp_path, monkeypatch):
    """The CLI's net: an OSError of a write that does not go through the atomic writer (a
    library's file) is one line naming the file, exit code 2."""
    from rmbench.results.publishing import report

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "elsewhere"))

    monkeypatch.setattr(report, "atomic_write_text", full)
    result = runner.invoke(app, ["report", str(runs), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.strip().splitlines()[-1] == f"error: {tmp_path / 'elsewhere'}: {CAUSES[errno.ENOSPC]}"


def test_mlflow_store_on_a_full_disk_is_refused_before_scoring(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="the mlflow tracker needs pip install 'rmbench[mlflow]'")
    store = tmp_path / "mlruns"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store / "0" / "meta.yaml"))

    monkeypatch.setattr(mlflow, "MlflowClient", full)
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "ties_sample", "--bootstrap", "5",
                                 "--no-cache", "--out", str(out), "--log-to", "mlflow",
                                 "--log-arg", f"mlflow.tracking_uri=file:{store}"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert (f"error: --log-to mlflow: cannot write the tracking store file:{store} ({store / '0' / 'meta.yaml'}): "
            f"{CAUSES[errno.ENOSPC]}") in result.output
    assert not out.exists()  # refused before scoring


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_tensorboard_writer_thread_on_a_full_disk_is_one_line_and_no_event_file(runs, tmp_path, monkeypatch):
    pytest.importorskip("tensorboard", reason="the tensorboard tracker needs pip install 'rmbench[tensorboard]'")
    from tensorboard.summary.writer import record_writer

    def full(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(record_writer.RecordWriter, "write", full)  # in the writer thread
    logdir = tmp_path / "tb"
    result = runner.invoke(app, ["log", str(runs / "length"), "--to", "tensorboard",
                                 "--log-arg", f"tensorboard.logdir={logdir}"])
    assert result.exit_code == 1, result.output  # a tracker's failure: exit 1, the run stays written
    assert "Traceback" not in result.output and "Exception in thread" not in result.output, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: tensorboard: logging the run in {runs / 'length'} failed (WriteError: cannot "
                           f"write {logdir / 'length'}: {CAUSES[errno.ENOSPC]})"), line
    assert [p for p in logdir.rglob("*") if p.is_file()] == []


# --- a real full disk ---------------------------------------------------------------------------

def _can_mount_tmpfs() -> str | None:
    """Why a private tmpfs cannot be mounted here (None: it can)."""
    if sys.platform != "linux" or shutil.which("unshare") is None:
        return "needs Linux and unshare(1)"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (unshare -m)"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True, text=True)
    return None if probe.returncode == 0 else f"cannot mount a tmpfs here: {probe.stderr.strip()}"


@pytest.mark.parametrize("command", ["export", "report", "leaderboard-html", "leaderboard-tex", "plot", "eval"])
def test_a_real_full_tmpfs_is_one_line(runs, tmp_path, command):
    why = _can_mount_tmpfs()
    if why is not None:
        pytest.skip(why)
    disk = tmp_path / "disk"
    disk.mkdir()
    out = {"export": disk / "export", "report": disk / "report.html", "leaderboard-html": disk / "board.html",
           "leaderboard-tex": disk / "board.tex", "plot": disk / "plots", "eval": disk / "run"}[command]
    args = {"export": ["export", str(runs / "length"), "--out", str(out)],
            "report": ["report", str(runs), "--out", str(out)],
            "leaderboard-html": ["leaderboard", "build", str(runs), "--out", str(out)],
            "leaderboard-tex": ["leaderboard", "build", str(runs), "--out", str(out)],
            "plot": ["plot", str(runs), "--out", str(out)],
            "eval": ["eval", "--model", "length", "--tasks", "ties_sample", "--bootstrap", "5", "--no-cache",
                     "--out", str(out)]}[command]
    rmbench = " ".join(f"'{a}'" for a in [sys.executable, "-m", "rmbench", *args])
    script = (f"mount -t tmpfs -o size=64k tmpfs '{disk}' && (dd if=/dev/zero of='{disk}/fill' bs=4k 2>/dev/null; "
              f"true) && {rmbench}; code=$?; find '{disk}' -type f ! -name fill; exit $code")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, env=env,
                          timeout=300)
    text = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device (the disk is full)" in errors[0], text
    assert str(disk) in errors[0], text
    assert not [line for line in done.stdout.splitlines() if line.startswith(str(disk))], text  # no file left


def test_a_full_cache_disk_does_not_stop_a_model_fingerprint(tmp_path, monkeypatch):
    """The index of weight-file hashes is a speed-up in the user cache: a write it cannot make is
    passed over (the fingerprint is the same), never the run's end."""
    from rmbench.models.hf import identity

    weights = tmp_path / "model"
    weights.mkdir()
    (weights / "config.json").write_text("{}")
    monkeypatch.setattr(identity, "user_cache_dir", lambda: tmp_path / "cache")
    begun = refuse_writes(monkeypatch)
    first = identity.folder_fingerprint(weights)
    assert begun and not (tmp_path / "cache" / "file_hashes.json").exists()
    monkeypatch.undo()
    monkeypatch.setattr(identity, "user_cache_dir", lambda: tmp_path / "cache")
    assert identity.folder_fingerprint(weights) == first
    assert (tmp_path / "cache" / "file_hashes.json").is_file()
