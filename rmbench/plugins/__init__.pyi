"""Type stub of rmbench's plugin API: the names of ``rmbench.plugins.__all__`` (see ``__init__.py``)."""

# isort: skip_file
# (grouped as rmbench/plugins/__init__.py's _NAMES, by what each name serves; the API reference reads that)

# a task kind
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.grouped import grouped
from rmbench.tasks.schemas import RowSchema
from rmbench.tasks.rows import RowReader
from rmbench.tasks.sources import iter_rows
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import ComparisonGroup, Message
from rmbench.core.metric_registry import MetricDef, OfficialColumn, OfficialLayout
from rmbench.tasks import register_task_kind

# a computed metric
from rmbench.core.metric_declaration import Computation, ComputedMetric
from rmbench.core.metric_def import Counted
from rmbench.core.pairs import PooledPairs
from rmbench.core.weighted import PairColumn, PairSet, WeightedBlock
from rmbench.core.weighted_order import ratio
from rmbench.core.metric_check import check_metric
from rmbench.core.metric_registry import register_metric

# a leaderboard format
from rmbench.core.options import FormatOption, Option
from rmbench.results.publishing.formats import OutputFormat, RenderContext, register_format
from rmbench.results.publishing.leaderboard import Leaderboard
from rmbench.results.publishing.leaderboard_tables import Column, Section, Table
from rmbench.results.storage.record import Estimate

# an engine
from rmbench.scoring.engines import Backend, BackendOptions, Engine, register_engine
from rmbench.scoring.backends import score_batch
from rmbench.scoring.memory import MemoryRetries

# a model kind
from rmbench.models.base import (CallingModel, CompositeModel, GroupContextModel, PairVerdictModel, RewardModel,
                                 Runtime, ScoreRequest, StochasticModel, TokenizedModel, Truncation)
from rmbench.models.step_model import StepRequest, StepScoringModel
from rmbench.models import register_model_kind

# a judge protocol
from rmbench.models.judge.judge_protocol import JudgeProtocol, Official, register_judge_protocol

# errors
from rmbench.errors import ConfigError, DataError, RMBenchError

__all__ = [
    "Task",
    "TaskScores",
    "grouped",
    "RowSchema",
    "RowReader",
    "iter_rows",
    "ComparisonGroup",
    "Message",
    "MetricDef",
    "OfficialLayout",
    "OfficialColumn",
    "StepGroup",
    "register_task_kind",
    "ComputedMetric",
    "Computation",
    "Counted",
    "PooledPairs",
    "WeightedBlock",
    "PairColumn",
    "PairSet",
    "ratio",
    "check_metric",
    "register_metric",
    "OutputFormat",
    "Option",
    "FormatOption",
    "RenderContext",
    "Leaderboard",
    "Section",
    "Table",
    "Column",
    "Estimate",
    "register_format",
    "Engine",
    "Backend",
    "BackendOptions",
    "score_batch",
    "MemoryRetries",
    "register_engine",
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
    "StepScoringModel",
    "StepRequest",
    "register_model_kind",
    "JudgeProtocol",
    "Official",
    "register_judge_protocol",
    "RMBenchError",
    "ConfigError",
    "DataError",
]
