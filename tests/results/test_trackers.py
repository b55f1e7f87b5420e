"""Experiment trackers (issue 45, item 4): ``rmbench eval --log-to wandb|mlflow|tensorboard|trackio``.

Each tracker runs in its offline mode on a tiny eval and its log is read back through the
tracker's own reader (W&B's transaction log through its protobuf records, MlflowClient on a
``file:`` store, TensorBoard's EventAccumulator, trackio's SQLite storage); the numbers must
equal results.json's. The expected keys are derived here from the raw results.json by the
documented naming rule (docs/how-to/trackers.md), not by the code under test.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.core.metric_registry import metric_def
from rmbench.results.storage.folder import find_runs
from rmbench.results.storage.record import Estimate, MetricRecord
from rmbench.results.trackers.payload import metric_key, safe_part
from rmbench.results.trackers.sink import without_credentials

runner = CliRunner()
SECRET = "rmbench-test-secret-4f1c9e7d2b"  # an API key in the environment, which no tracker file may hold


def _holds_no_secret(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
EVAL = ["eval", "--tasks", "ties_sample", "--eps", "0,0.1", "--bootstrap", "20"]


def _eval(tmp_path: Path, model: str, *log: str) -> tuple[Path, dict]:
    out = tmp_path / model
    result = runner.invoke(app, [*EVAL, "--model", model, "--out", str(out), *log])
    assert result.exit_code == 0, result.output
    return out, json.loads((out / "results.json").read_text())


def expected_numbers(doc: dict) -> dict[str, float]:
    """KEY, KEY_ci_low, KEY_ci_high of every headline record (headline, official score and the
    metrics beside it, their shift gaps) on every slice, from the raw results.json."""
    def part(text: str) -> str:
        text = re.sub(r"[^A-Za-z0-9_.\- ]", "_", text)
        return "_" if text.strip(".") == "" else text

    out: dict[str, float] = {}
    for task in doc["tasks"]:
        names = task["headline"] + ([task["official"]["metric"], *task["official"]["beside"]]
                                    if task["official"] else [])
        names += [n + "_shift_gap" for n in names]
        for m in task["metrics"]:
            if m["metric"] not in names:
                continue
            parts = [task["name"]] + (["subset", m["subset"]] if m["subset"] is not None else []) \
                + (["shift", m["shift"]] if m["shift"] is not None else [])
            eps = f"_eps{m['eps']:g}" if m["metric"].removesuffix("_shift_gap") in ("discrimination", "specificity") \
                else ""
            key = "/".join(part(p) for p in parts + [m["metric"] + eps])
            for suffix, field in (("", "value"), ("_ci_low", "ci_low"), ("_ci_high", "ci_high")):
                if m[field] is not None:
                    out[key + suffix] = m[field]
    return out


def _overall(doc: dict, metric: str, eps: float | None = None) -> dict:
    return next(m for m in doc["tasks"][0]["metrics"] if m["metric"] == metric and m["subset"] is None
                and m["shift"] is None and (eps is None or m["eps"] == eps))


def test_keys_follow_the_documented_rule():
    def rec(metric, subset=None, shift=None, eps=None):
        return MetricRecord("rb2", subset, shift, metric, eps, "sigma" if eps is not None else None,
                            Estimate(0.5), 10)

    assert metric_key(rec("pairwise_accuracy")) == "rb2/pairwise_accuracy"
    assert metric_key(rec("discrimination", eps=0.1)) == "rb2/discrimination_eps0.1"
    assert metric_key(rec("specificity", eps=0.0)) == "rb2/specificity_eps0"
    assert metric_key(rec("rewardbench2_score", subset="Precise IF")) == "rb2/subset/Precise IF/rewardbench2_score"
    assert metric_key(rec("discrimination_shift_gap", shift="translation:fr", eps=0.1)) == \
        "rb2/shift/translation_fr/discrimination_shift_gap_eps0.1"
    assert metric_key(rec("balanced_best", eps=0.754)) == "rb2/balanced_best"  # eps reached, not asked: no eps
    assert [safe_part(p) for p in ("a/b", "..", "", "σ", "x.y-z w")] == ["a_b", "_", "_", "_", "x.y-z w"]
    shown = without_credentials("no http://me:key@host:5000/api at file:/a@b")
    assert shown == "no http://***@host:5000/api at file:/a@b"
    assert metric_def("discrimination").eps_dependent and not metric_def("balanced_best").eps_dependent


# --- W&B offline ----------------------------------------------------------------------------

def wandb_records(path: Path) -> list:
    """The protobuf records of a W&B transaction log (run-ID.wandb): W&B's 7-byte header, then
    LevelDB's log format (32 KiB blocks, each record a 7-byte header: crc32c, length, type
    FULL=1/FIRST=2/MIDDLE=3/LAST=4), each record a ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:8]
    pos, block, pending, out = 7, 32768, b"", []
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        if kind == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def test_wandb_offline_logs_config_metrics_table_and_report(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="the wandb tracker needs pip install 'rmbench[wandb]'")
    for name, value in (("WANDB_MODE", "offline"), ("WANDB_DIR", str(tmp_path / "w")), ("WANDB_SILENT", "true"),
                        ("WANDB_PROJECT", "rmbench-test"), ("WANDB_API_KEY", SECRET),
                        # W&B's staging, cache and settings folders: here, not in the user's home
                        ("WANDB_DATA_DIR", str(tmp_path / "data")), ("WANDB_CACHE_DIR", str(tmp_path / "cache")),
                        ("WANDB_CONFIG_DIR", str(tmp_path / "config"))):
        monkeypatch.setenv(name, value)
    (tmp_path / "w").mkdir()
    out, doc = _eval(tmp_path, "length", "--log-to", "wandb")
    [run_dir] = (tmp_path / "w" / "wandb").glob("offline-run-*")
    records = wandb_records(next(run_dir.glob("run-*.wandb")))
    history = {}  # a key with "/" comes as a one-part nested_key; a media object as one item per field
    for r in records:
        for item in r.history.item if r.WhichOneof("record_type") == "history" else ():
            key = item.key or (item.nested_key[0] if len(item.nested_key) == 1 else tuple(item.nested_key))
            history[key] = json.loads(item.value_json)
    [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    config = {u.key: json.loads(u.value_json) for u in run.config.update}
    numbers = {k: v for k, v in history.items() if isinstance(k, str) and not k.startswith("_")}
    assert numbers == expected_numbers(doc)
    d = _overall(doc, "discrimination", 0.1)
    assert history["ties_sample/discrimination_eps0.1"] == d["value"]
    assert history["ties_sample/discrimination_eps0.1_ci_low"] == d["ci_low"]
    assert run.display_name == "length" and run.project == "rmbench-test"
    assert config["model"]["name"] == "length" and config["config"]["eps"] == [0.0, 0.1]
    assert config["tasks"]["ties_sample"]["comparability_key"] == doc["tasks"][0]["comparability_key"]
    table = json.loads((run_dir / "files" / history["leaderboard", "path"]).read_text())
    assert table["data"][0][0] == "length" and "ties_sample D@0.1σ ci_low" in table["columns"]
    assert "<html" in (run_dir / "files" / history["report", "path"]).read_text().lower()
    _holds_no_secret(tmp_path)


# --- MLflow file store ----------------------------------------------------------------------

def test_mlflow_file_store_logs_config_metrics_table_and_artifacts(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow tracker needs pip install 'rmbench[mlflow]'")
    from mlflow import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps its file store behind this
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", SECRET)
    out, doc = _eval(tmp_path, "length", "--log-to", "mlflow", "--log-arg", "mlflow.experiment=rm-evals")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("rm-evals")
    [run] = client.search_runs([experiment.experiment_id])
    assert run.data.metrics == expected_numbers(doc)
    assert run.info.run_name == "length" and run.info.status == "FINISHED"
    assert run.data.params["model.name"] == "length" and json.loads(run.data.params["config.eps"]) == [0.0, 0.1]
    assert run.data.tags["rmbench.model"] == "length"
    files = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"rmbench-results.json", "report.html", "config.json", "leaderboard.json"} <= files
    assert [f.path for f in find_runs([tmp_path])] == [out]  # the store holds no folder with a results.json
    table = client.load_table(experiment.experiment_id, "leaderboard.json", run_ids=[run.info.run_id])
    a = _overall(doc, "pairwise_accuracy")
    assert list(table["model"]) == ["length"]
    assert abs(table["ties_sample acc"][0] - a["value"]) <= 5e-11  # MLflow writes its tables' JSON to 10 places
    _holds_no_secret(tmp_path)


def test_mlflow_file_store_refused_before_scoring(tmp_path, monkeypatch):
    pytest.importorskip("mlflow", reason="the mlflow tracker needs pip install 'rmbench[mlflow]'")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    result = runner.invoke(app, [*EVAL, "--model", "length", "--out", str(tmp_path / "r"), "--log-to", "mlflow"])
    assert result.exit_code == 2 and "error: --log-to mlflow:" in result.output
    assert "MLFLOW_ALLOW_FILE_STORE" in result.output and not (tmp_path / "r").exists()
    if importlib.util.find_spec("sqlalchemy") is None:  # mlflow-skinny: no database store
        monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
        result = runner.invoke(app, [*EVAL, "--model", "length", "--out", str(tmp_path / "r"), "--log-to", "mlflow"])
        assert result.exit_code == 2 and not (tmp_path / "r").exists()
        assert "is a database, which needs the full mlflow package (mlflow-skinny lacks sqlalchemy)" in result.output


# --- TensorBoard event files ------------------------------------------------------------------

def _events(logdir: Path) -> tuple[dict[str, float], dict[str, str]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    acc.Reload()
    numbers, texts = {}, {}
    for tag in acc.Tags()["tensors"]:
        [event] = acc.Tensors(tag)
        if acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            numbers[tag] = tensor_util.make_ndarray(event.tensor_proto).item()
        else:
            texts[tag.removesuffix("/text_summary")] = event.tensor_proto.string_val[0].decode()
    return numbers, texts


def test_tensorboard_event_files_read_back_and_a_rerun_replaces_them(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard tracker needs pip install 'rmbench[tensorboard]'")
    out, doc = _eval(tmp_path, "constant", "--log-to", "tensorboard")
    numbers, texts = _events(out / "tensorboard")
    assert numbers == expected_numbers(doc)  # float64 tensors: equal, not rounded to float32
    undefined = [m for m in doc["tasks"][0]["metrics"] if m["value"] is None]
    assert undefined and all(not math.isnan(v) for v in numbers.values())  # a nan is left out, never logged
    assert "| constant" in texts["leaderboard"] and '"name": "constant"' in texts["config"]
    assert {p.name for p in (out / "tensorboard").iterdir()} >= {"rmbench-results.json", "report.html"}
    assert [f.path for f in find_runs([tmp_path])] == [out]  # never a second run folder inside the run
    _eval(tmp_path, "constant", "--log-to", "tensorboard")  # the same run again: its folder replaced
    assert len(list((out / "tensorboard").glob("events.out.tfevents.*"))) == 1
    assert _events(out / "tensorboard")[0] == numbers


def test_a_failing_tracker_keeps_the_run_and_rmbench_log_logs_it_again(tmp_path):
    pytest.importorskip("tensorboard", reason="the tensorboard tracker needs pip install 'rmbench[tensorboard]'")
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    out = tmp_path / "run"
    result = runner.invoke(app, [*EVAL, "--model", "length", "--tasks", "translation_shift_sample", "--out", str(out),
                                 "--log-to", "tensorboard", "--log-arg", f"tensorboard.logdir={blocker}"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert line.startswith(f"error: tensorboard: logging the run in {out} failed (")
    assert line.endswith(f"rmbench log {out} --to tensorboard logs them again")
    doc = json.loads((out / "results.json").read_text())  # written first, untouched
    again = runner.invoke(app, ["log", str(out), "--to", "tensorboard"])
    assert again.exit_code == 0, again.output
    numbers, texts = _events(out / "tensorboard")
    assert numbers == expected_numbers(doc)  # every slice: the shifts and their gaps
    [gap] = [m for m in doc["tasks"][0]["metrics"] if m["metric"] == "pairwise_accuracy_shift_gap"
             and m["shift"] == "translation:fr"]
    assert numbers["translation_shift_sample/shift/translation_fr/pairwise_accuracy_shift_gap"] == gap["value"]
    assert "translation:fr" in texts["leaderboard/original_vs_shifted"]


# --- trackio local --------------------------------------------------------------------------

READ_TRACKIO = """
import json, sys
from trackio.sqlite_storage import SQLiteStorage
project, run = sys.argv[1:3]
print(json.dumps({"logs": SQLiteStorage.get_logs(project, run), "config": SQLiteStorage.get_run_config(project, run)}))
"""


def test_trackio_local_database_reads_back(tmp_path):
    """In processes of their own: trackio reads TRACKIO_DIR once, when it is first imported, and this
    process may have imported it already (TRL's callbacks do)."""
    if importlib.util.find_spec("trackio") is None:
        pytest.skip("the trackio tracker needs pip install 'rmbench[trackio]'")
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "TRACKIO_DIR": str(tmp_path / "trackio"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "constant"
    ran = subprocess.run([sys.executable, "-m", "rmbench", *EVAL, "--model", "constant", "--out", str(out),
                          "--log-to", "trackio", "--log-arg", "trackio.project=rm-evals"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    doc = json.loads((out / "results.json").read_text())
    assert (tmp_path / "trackio" / "rm-evals.db").is_file()
    read = subprocess.run([sys.executable, "-c", READ_TRACKIO, "rm-evals", "constant"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert read.returncode == 0, read.stderr
    back = json.loads(read.stdout)
    [logged] = back["logs"]  # one step
    assert {k: v for k, v in logged.items() if k not in ("step", "timestamp", "leaderboard")} == expected_numbers(doc)
    table = logged["leaderboard"]
    assert logged["step"] == 0 and table["_type"] == "trackio.table" and table["_value"][0]["model"] == "constant"
    config = back["config"]
    assert config["model"]["name"] == "constant" and config["run_folder"] == "constant"


# --- choosing trackers ----------------------------------------------------------------------

@pytest.mark.parametrize("tracker,module,package", [("wandb", "wandb", "wandb"), ("mlflow", "mlflow", "mlflow-skinny"),
                                                    ("tensorboard", "tensorboard", "tensorboard"),
                                                    ("trackio", "trackio", "trackio")])
def test_a_missing_extra_is_one_line_with_the_install_command_before_scoring(tmp_path, monkeypatch, tracker,
                                                                             module, package):
    monkeypatch.setitem(sys.modules, module, None)  # import of it fails as when it is not installed
    out = tmp_path / "r"
    result = runner.invoke(app, [*EVAL, "--model", "length", "--out", str(out), "--log-to", tracker])
    assert result.exit_code == 2
    assert result.output.strip() == (f"error: --log-to {tracker} needs the {package} package, which is not "
                                     f"installed: pip install 'rmbench[{tracker}]'")
    assert not out.exists()  # refused before any model was scored


def test_bad_tracker_names_and_options_are_one_line(tmp_path):
    cases = [(["--log-to", "wandbb"], "unknown tracker 'wandbb'; did you mean 'wandb'"),
             (["--log-to", "tensorboard", "--log-arg", "wandb.project=x"], "'wandb' is not a tracker this command"),
             (["--log-to", "tensorboard", "--log-arg", "tensorboard.api_key=x"],
              "--log-to tensorboard has no option 'api_key' (its options: logdir=TEXT); credentials are never"),
             (["--log-to", "wandb", "--log-arg", "wandb.mode=live"],  # checked by its Option, installed or not
              "--log-to wandb: option mode='live': use one of online, offline, disabled (its options: project=TEXT,"),
             (["--log-to", "tensorboard", "--log-arg", "logdir=x"], "expected TRACKER.KEY=VALUE")]
    for args, message in cases:
        result = runner.invoke(app, [*EVAL, "--model", "length", "--out", str(tmp_path / "r"), *args])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, args
        assert not (tmp_path / "r").exists()


def test_a_run_whose_report_cannot_be_made_is_one_line_per_tracker(tmp_path, monkeypatch):
    pytest.importorskip("tensorboard", reason="the tensorboard tracker needs pip install 'rmbench[tensorboard]'")
    import rmbench.results.publishing.report as report

    out, _ = _eval(tmp_path, "length")

    def broken(*args, **kwargs):
        raise RuntimeError("no report today")

    monkeypatch.setattr(report, "build_report", broken)
    result = runner.invoke(app, ["log", str(out), "--to", "tensorboard"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"error: tensorboard: logging the run in {out} failed (RuntimeError: no report today)" in result.output
    assert (out / "results.json").is_file() and not (out / "tensorboard").exists()


def test_rmbench_log_names_its_own_option_in_its_errors(tmp_path, monkeypatch):
    """``rmbench log --to TRACKER`` says ``--to``, the option it was given, never ``--log-to``."""
    monkeypatch.setitem(sys.modules, "wandb", None)
    missing = runner.invoke(app, ["log", str(tmp_path), "--to", "wandb"])
    assert missing.exit_code == 2 and missing.output.strip() == (
        "error: --to wandb needs the wandb package, which is not installed: pip install 'rmbench[wandb]'")
    for args, message in [(["--to", "tensorboard", "--log-arg", "tensorboard.api_key=x"],
                           "--to tensorboard has no option 'api_key'"),
                          (["--to", "tensorboard", "--log-arg", "wandb.project=x"],
                           "is not a tracker this command logs to (--to tensorboard)")]:
        result = runner.invoke(app, ["log", str(tmp_path), *args])
        assert result.exit_code == 2 and message in result.output and "--log-to" not in result.output, args


# --- a plugin's tracker -------------------------------------------------------------------

def test_a_tracker_added_through_the_plugin_api_logs_every_headline_number(tmp_path):
    """The seventh kind of plugin: a ``TrackerSink`` from ``rmbench.plugins``, registered with
    ``register_tracker`` (a package: the ``rmbench.trackers`` entry points), then ``--log-to`` it."""
    from rmbench.plugins import Option, TrackedRun, TrackerSink, register_tracker
    from rmbench.registry import RegistryError
    from rmbench.results.trackers.registry import TRACKERS

    class JsonFile(TrackerSink):
        name = "test-json"
        library = package = "json"
        extra = "none"
        options = (Option("path", help="the file written"),)
        credentials = "none needed"

        def log(self, run: TrackedRun, step: int = 0) -> str:
            path = Path(str(self.setting("path")))
            path.write_text(json.dumps({m.key: m.record.value for m in run.metrics}))
            return str(path)

    register_tracker("test-json", JsonFile, description="a test's JSON file")
    try:
        logged = tmp_path / "logged.json"
        _, doc = _eval(tmp_path, "constant", "--log-to", "test-json", "--log-arg", f"test-json.path={logged}")
        values = {k: v for k, v in expected_numbers(doc).items() if not k.endswith(("_ci_low", "_ci_high"))}
        got = json.loads(logged.read_text())
        assert {k: v for k, v in got.items() if not math.isnan(v)} == values and values  # NaN: not in results.json
        with pytest.raises(RegistryError, match="duplicate tracker name 'test-json'"):
            register_tracker("test-json", JsonFile)
    finally:
        TRACKERS._entries.pop("test-json", None)
