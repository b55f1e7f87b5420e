"""Weights & Biases (``--log-to wandb``): one W&B run per rmbench run.

The run is named by the run folder, its config is the run's (:mod:`~rmbench.results.trackers.payload`),
the metrics are logged at one step (their last value is the run's summary), each leaderboard
section is a ``wandb.Table``, the report a ``wandb.Html`` panel, and ``rmbench-results.json`` (the
run's results.json) with the report
an artifact of type ``rmbench-run``. Settings: W&B's own environment (``WANDB_MODE=offline``,
``WANDB_PROJECT``, ``WANDB_ENTITY``, ``WANDB_DIR``, ``WANDB_API_KEY`` ...), or the options below;
the project is ``rmbench`` where neither names one.
"""

from __future__ import annotations

import os
import re
from typing import Literal, cast

from rmbench.core.options import Option
from rmbench.results.trackers.payload import TrackedRun
from rmbench.results.trackers.sink import TrackerSink


class WandbSink(TrackerSink):
    name = "wandb"
    library = "wandb"
    package = "wandb"
    extra = "wandb"
    options = (Option("project", help="the W&B project (WANDB_PROJECT; default rmbench)"),
               Option("entity", help="the team or user (WANDB_ENTITY)"),
               Option("group", help="the run group (WANDB_RUN_GROUP)"),
               Option("mode", ("online", "offline", "disabled"), "W&B's mode (WANDB_MODE)", default=None),
               Option("dir", help="the folder of W&B's local files (WANDB_DIR)"),
               Option("tags", help="comma-separated tags (WANDB_TAGS)"))
    credentials = "W&B reads WANDB_API_KEY (or the login `wandb login` saved)"

    def log(self, run: TrackedRun, step: int = 0) -> str:
        import wandb

        s = self.setting
        project = s("project") or (None if os.environ.get("WANDB_PROJECT") else "rmbench")
        given_tags = s("tags")
        tags = [t.strip() for t in given_tags.split(",") if t.strip()] if given_tags is not None else None
        mode = cast(Literal["online", "offline", "disabled"] | None, s("mode"))  # one of its choices
        w = wandb.init(project=project, entity=s("entity"), group=s("group"), mode=mode,
                       dir=s("dir"), tags=tags, name=run.name, job_type="eval", config=dict(run.config))
        where = w.url or f"offline run in {os.path.dirname(w.dir)} (wandb sync uploads it)"
        ok = False
        try:
            w.log({**run.scalars(), **{key: wandb.Table(dataframe=frame) for key, frame in run.tables},
                   "report": wandb.Html(run.report.read_text(encoding="utf-8"))}, step=step)
            artifact = wandb.Artifact(re.sub(r"[^\w.-]", "_", run.name), type="rmbench-run")
            for path in run.files:
                artifact.add_file(str(path))
            w.log_artifact(artifact)
            ok = True
        finally:
            w.finish(exit_code=0 if ok else 1)
        return where
