"""trackio (``--log-to trackio``): one trackio run per rmbench run, in a trackio project.

The run is named by the run folder, its config is the run's, the metrics are logged at one
step, each leaderboard section is a ``trackio.Table``, and ``rmbench-results.json`` (the run's
results.json) and report.html are
artifacts (type ``rmbench-run``). Where: trackio's local database (``$TRACKIO_DIR``, by default
``~/.cache/huggingface/trackio``; trackio reads it once, when it is imported, so it is set in the
environment, not as an option), or a Hugging Face Space (``TRACKIO_SPACE_ID`` or the
``space_id`` option; the Hub's token from ``HF_TOKEN`` or ``hf auth login``). The project is
``rmbench`` unless the option names one. trackio's CPU and GPU monitors stay off: an evaluation
that has finished has no system metrics to log.
"""

from __future__ import annotations

from rmbench.core.options import Option
from rmbench.results.trackers.payload import TrackedRun
from rmbench.results.trackers.sink import TrackerSink


class TrackioSink(TrackerSink):
    name = "trackio"
    library = "trackio"
    package = "trackio"
    extra = "trackio"
    options = (Option("project", help="the trackio project (default rmbench)"),
               Option("group", help="the run group"),
               Option("space_id", help="a Hugging Face Space to log to (TRACKIO_SPACE_ID)"))
    credentials = "trackio reads the Hub's token from HF_TOKEN (or hf auth login)"

    def log(self, run: TrackedRun, step: int = 0) -> str:
        import trackio

        s = self.setting
        project = s("project") or "rmbench"
        tracked = trackio.init(project=project, name=run.name, group=s("group"), space_id=s("space_id"),
                               config=dict(run.config), auto_log_cpu=False, auto_log_gpu=False)
        try:
            tracked.log({**run.scalars(), **{key: trackio.Table(dataframe=frame) for key, frame in run.tables}},
                        step=step)
            for path in run.files:
                trackio.log_artifact(path, name=f"{run.name}-{path.stem}", type="rmbench-run")
        finally:
            trackio.finish()
        return f"project {project!r}, run {run.name!r}"
