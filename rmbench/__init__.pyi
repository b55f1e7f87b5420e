"""Type stub of rmbench's public API: the names of ``rmbench.__all__`` (see ``__init__.py``)."""

# isort: skip_file
# (the order is the API reference's: docs/gen/references.py writes its sections in this order)

from rmbench.catalog import load_catalog
from rmbench.core.metric_registry import MetricDef, OfficialLayout, register_metric
from rmbench.core.specs import ModelSpec, TaskSpec
from rmbench.core.types import ComparisonGroup, Message
from rmbench.errors import ConfigError, DataError, RMBenchError
from rmbench.integrations.trl import RMBenchCallback
from rmbench.models import register_model_kind
from rmbench.models.base import (CallingModel, CompositeModel, GroupContextModel, PairVerdictModel, RewardModel,
                                 Runtime, ScoreRequest, StochasticModel, TokenizedModel, Truncation)
from rmbench.results.statistics.compare import compare_runs
from rmbench.results.statistics.verify import Verification, verify_runs
from rmbench.results.storage.folder import RunFolder, find_runs, load_run, read_run
from rmbench.results.storage.rewards_file import RewardRow, load_rewards
from rmbench.core.options import FormatOption, Option
from rmbench.results.publishing.formats import OutputFormat, RenderContext, register_format
from rmbench.models.judge.judge_protocol import JudgeProtocol, Official, register_judge_protocol
from rmbench.results.publishing.report import ReportOptions, build_report, write_report
from rmbench.results.storage.record import Estimate, MetricRecord, RunRecord, TaskResult
from rmbench.scoring.config import EvalConfig, ExecutionSettings, RunSpec
from rmbench.scoring.backends import score_batch
from rmbench.scoring.engines import Backend, BackendOptions, Engine, register_engine
from rmbench.scoring.memory import MemoryRetries
from rmbench.scoring.rerun import evaluate_on_run_tasks
from rmbench.scoring.runner import evaluate
from rmbench.scoring.suite import evaluate_models
from rmbench.tasks import register_task_kind
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.grouped import grouped
from rmbench.tasks.schemas import RowSchema
from rmbench.tasks.loading import load_groups
from rmbench.tasks.rows import RowReader
from rmbench.tasks.sources import iter_rows

__version__: str
__all__ = [
    "__version__",
    "evaluate",
    "EvalConfig",
    "RunSpec",
    "ExecutionSettings",
    "evaluate_models",
    "RMBenchCallback",
    "load_run",
    "read_run",
    "find_runs",
    "load_rewards",
    "RunFolder",
    "compare_runs",
    "verify_runs",
    "Verification",
    "evaluate_on_run_tasks",
    "write_report",
    "build_report",
    "ReportOptions",
    "RewardRow",
    "RunRecord",
    "TaskResult",
    "MetricRecord",
    "Estimate",
    "ComparisonGroup",
    "Message",
    "TaskSpec",
    "ModelSpec",
    "Task",
    "TaskScores",
    "grouped",
    "RowSchema",
    "RowReader",
    "iter_rows",
    "load_groups",
    "load_catalog",
    "OfficialLayout",
    "MetricDef",
    "register_metric",
    "RewardModel",
    "ScoreRequest",
    "Runtime",
    "Truncation",
    "TokenizedModel",
    "StochasticModel",
    "CompositeModel",
    "GroupContextModel",
    "CallingModel",
    "PairVerdictModel",
    "register_task_kind",
    "register_model_kind",
    "register_engine",
    "Engine",
    "Backend",
    "BackendOptions",
    "score_batch",
    "MemoryRetries",
    "register_format",
    "OutputFormat",
    "Option",
    "FormatOption",
    "RenderContext",
    "register_judge_protocol",
    "JudgeProtocol",
    "Official",
    "RMBenchError",
    "ConfigError",
    "DataError",
]
