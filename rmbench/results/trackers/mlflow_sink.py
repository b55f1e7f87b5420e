"""MLflow (``--log-to mlflow``): one MLflow run per rmbench run, through ``MlflowClient``.

The run is named by the run folder and tagged with the model; the config is logged twice, as
flat parameters (``model.name``, ``config.eps``, ``tasks.ties.comparability_key`` ...) and whole
as ``config.json``; the metrics at one step (exact); each leaderboard section as an MLflow table
(``leaderboard.json``, ``leaderboard/<section>.json``, which MLflow writes to 10 decimal places);
``rmbench-results.json`` (the run's results.json) and report.html as artifacts.

Settings: MLflow's own environment (``MLFLOW_TRACKING_URI``, ``MLFLOW_EXPERIMENT_NAME``,
``MLFLOW_TRACKING_TOKEN`` ...) or the options below; the experiment is ``rmbench`` where neither
names one. ``mlflow-skinny`` (the ``mlflow`` extra) logs to a tracking server (``http(s)://``) and
to a local file store (``file:``; MLflow 3 asks for ``MLFLOW_ALLOW_FILE_STORE=true`` there); its
default local store, ``sqlite:///mlflow.db``, needs the full ``mlflow`` package. Both are checked
before any model is scored (:meth:`MlflowSink.check`).
"""

from __future__ import annotations

import importlib.util
import os
import time
from itertools import islice

from rmbench.core.options import Option
from rmbench.errors import ConfigError, write_error_text
from rmbench.results.trackers.payload import TrackedRun, flat_config
from rmbench.results.trackers.sink import TrackerSink, without_credentials

DEFAULT_EXPERIMENT = "rmbench"
_DATABASES = ("sqlite", "postgresql", "mysql", "mssql")  # SQLAlchemy stores
_BATCH_METRICS, _BATCH_PARAMS = 1000, 100  # MLflow's limits per log_batch call


def _chunks(items: list, n: int):
    it = iter(items)
    while chunk := list(islice(it, n)):
        yield chunk


class MlflowSink(TrackerSink):
    name = "mlflow"
    library = "mlflow"
    package = "mlflow-skinny"
    extra = "mlflow"
    options = (Option("tracking_uri",
                      help="where runs go: http(s)://server, file:/path, sqlite:///file.db (MLFLOW_TRACKING_URI)"),
               Option("experiment", help="the experiment's name (MLFLOW_EXPERIMENT_NAME; default rmbench)"))
    credentials = "MLflow reads MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD"

    def _client(self):
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        uri = self._uri()
        if uri.partition(":")[0].split("+")[0] in _DATABASES and importlib.util.find_spec("sqlalchemy") is None:
            raise ConfigError(f"{self.flag} mlflow: the tracking store {without_credentials(uri)} is a database, which "
                              f"needs the full mlflow package (mlflow-skinny lacks sqlalchemy): pip install mlflow, or "
                              f"set MLFLOW_TRACKING_URI to a server (http://...) or a file: store")
        try:
            return MlflowClient(tracking_uri=uri)  # builds the store: no request yet
        except MlflowException as exc:
            raise ConfigError(f"{self.flag} mlflow: {without_credentials(' '.join(exc.message.split()))}") from None
        except OSError as exc:  # a file: store on a full disk or in a read-only folder (it is made here)
            where = f" ({exc.filename})" if exc.filename else ""
            raise ConfigError(f"{self.flag} mlflow: cannot write the tracking store {without_credentials(uri)}{where}: "
                              f"{write_error_text(exc)}") from None

    def _uri(self) -> str:
        from mlflow.tracking import get_tracking_uri

        return self.setting("tracking_uri") or get_tracking_uri()

    def check(self) -> None:
        super().check()
        self._client()

    def log(self, run: TrackedRun, step: int = 0) -> str:
        from mlflow.entities import Metric, Param

        client = self._client()
        name = self.setting("experiment") or os.environ.get("MLFLOW_EXPERIMENT_NAME") or DEFAULT_EXPERIMENT
        experiment = client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment is not None else client.create_experiment(name)
        tracked = client.create_run(experiment_id, run_name=run.name,
                                    tags={"rmbench.model": run.record.model.name, "rmbench.run_folder": run.name,
                                          "rmbench.tasks": ",".join(run.record.task_names)})
        run_id = tracked.info.run_id
        status = "FAILED"
        try:
            now = int(time.time() * 1000)
            for chunk in _chunks([Metric(k, v, now, step) for k, v in run.scalars().items()], _BATCH_METRICS):
                client.log_batch(run_id, metrics=chunk)
            for chunk in _chunks([Param(k, v) for k, v in flat_config(run.config).items()], _BATCH_PARAMS):
                client.log_batch(run_id, params=chunk)
            client.log_dict(run_id, dict(run.config), "config.json")
            for key, frame in run.tables:
                client.log_table(run_id, frame, f"{key}.json")
            for path in run.files:
                client.log_artifact(run_id, str(path))
            status = "FINISHED"
        finally:
            client.set_terminated(run_id, status)
        return f"{without_credentials(self._uri())}, experiment {name!r}, run {run_id}"
