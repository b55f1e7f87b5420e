"""rmbench's public API, declared: every name of ``rmbench.__all__``, loaded lazily from this stub
(see ``__init__.py``). Each ``from module import name as name`` line is a name and where it lives
(``as``: PEP 484's explicit re-export, so this stub needs no ``__all__``)."""

# isort: skip_file
# (the order is the API reference's: docs/gen/references.py writes its sections in this order)

from rmbench.catalog import load_catalog as load_catalog
from rmbench.core.metric_registry import (
    MetricDef as MetricDef,
    OfficialLayout as OfficialLayout,
    register_metric as register_metric,
)
from rmbench.core.specs import ModelSpec as ModelSpec, TaskSpec as TaskSpec
from rmbench.core.types import ComparisonGroup as ComparisonGroup, Message as Message
from rmbench.errors import (
    ConfigError as ConfigError,
    DataError as DataError,
    RMBenchError as RMBenchError,
)
from rmbench.integrations.trl import RMBenchCallback as RMBenchCallback
from rmbench.models import register_model_kind as register_model_kind
from rmbench.models.base import (
    CallingModel as CallingModel,
    CompositeModel as CompositeModel,
    GroupContextModel as GroupContextModel,
    RewardModel as RewardModel,
    Runtime as Runtime,
    ScoreRequest as ScoreRequest,
    StochasticModel as StochasticModel,
    TokenizedModel as TokenizedModel,
    Truncation as Truncation,
    PairVerdictModel as PairVerdictModel,
)
from rmbench.results.statistics.compare import compare_runs as compare_runs
from rmbench.results.statistics.verify import Verification as Verification, verify_runs as verify_runs
from rmbench.results.storage.folder import (
    RunFolder as RunFolder,
    find_runs as find_runs,
    load_run as load_run,
    read_run as read_run,
)
from rmbench.results.storage.rewards_file import RewardRow as RewardRow, load_rewards as load_rewards
from rmbench.core.options import FormatOption as FormatOption, Option as Option
from rmbench.results.publishing.formats import (
    OutputFormat as OutputFormat,
    RenderContext as RenderContext,
    register_format as register_format,
)
from rmbench.models.judge.judge_protocol import (
    JudgeProtocol as JudgeProtocol,
    Official as Official,
    register_judge_protocol as register_judge_protocol,
)
from rmbench.results.publishing.report import (
    ReportOptions as ReportOptions,
    build_report as build_report,
    write_report as write_report,
)
from rmbench.results.storage.record import (
    Estimate as Estimate,
    MetricRecord as MetricRecord,
    RunRecord as RunRecord,
    TaskResult as TaskResult,
)
from rmbench.scoring.config import (
    EvalConfig as EvalConfig,
    ExecutionSettings as ExecutionSettings,
    RunSpec as RunSpec,
)
from rmbench.scoring.backends import score_batch as score_batch
from rmbench.scoring.engines import (
    Backend as Backend,
    BackendOptions as BackendOptions,
    Engine as Engine,
    register_engine as register_engine,
)
from rmbench.scoring.memory import MemoryRetries as MemoryRetries
from rmbench.scoring.rerun import evaluate_on_run_tasks as evaluate_on_run_tasks
from rmbench.scoring.runner import evaluate as evaluate
from rmbench.scoring.suite import evaluate_models as evaluate_models
from rmbench.tasks import register_task_kind as register_task_kind
from rmbench.tasks.base import Task as Task, TaskScores as TaskScores
from rmbench.tasks.grouped import grouped as grouped
from rmbench.tasks.schemas import RowSchema as RowSchema
from rmbench.tasks.loading import load_groups as load_groups
from rmbench.tasks.rows import RowReader as RowReader
from rmbench.tasks.sources import iter_rows as iter_rows

__version__: str
