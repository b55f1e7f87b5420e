"""The plugin API, declared: every name of ``rmbench.plugins``, loaded lazily from this stub (see
``__init__.py``), by what it serves.

Each ``# --- ... ---`` line opens a group of the API reference's table (docs/gen/references.py
reads them); each ``from module import name as name`` line is a name and where it lives (``as``:
PEP 484's explicit re-export, so this stub needs no ``__all__``).
"""

# isort: skip_file
# (the order is the API reference's table: grouped by what each name serves)

# --- a task kind ---
from rmbench.tasks.base import Task as Task, TaskScores as TaskScores
from rmbench.tasks.grouped import grouped as grouped
from rmbench.tasks.schemas import RowSchema as RowSchema
from rmbench.tasks.rows import RowReader as RowReader
from rmbench.tasks.sources import iter_rows as iter_rows
from rmbench.core.types import ComparisonGroup as ComparisonGroup, Message as Message
from rmbench.core.metric_registry import MetricDef as MetricDef
from rmbench.core.metric_registry import OfficialLayout as OfficialLayout, OfficialColumn as OfficialColumn
from rmbench.core.step_groups import StepGroup as StepGroup
from rmbench.tasks import register_task_kind as register_task_kind

# --- a computed metric ---
from rmbench.core.metric_declaration import ComputedMetric as ComputedMetric, Computation as Computation
from rmbench.core.metric_def import Counted as Counted
from rmbench.core.pairs import PooledPairs as PooledPairs
from rmbench.core.weighted import WeightedBlock as WeightedBlock, PairColumn as PairColumn, PairSet as PairSet
from rmbench.core.weighted_order import ratio as ratio
from rmbench.core.metric_check import check_metric as check_metric
from rmbench.core.metric_registry import register_metric as register_metric

# --- a leaderboard format ---
from rmbench.results.publishing.formats import OutputFormat as OutputFormat
from rmbench.core.options import Option as Option, FormatOption as FormatOption
from rmbench.results.publishing.formats import RenderContext as RenderContext
from rmbench.results.publishing.leaderboard import Leaderboard as Leaderboard
from rmbench.results.publishing.leaderboard_tables import Section as Section, Table as Table, Column as Column
from rmbench.results.storage.record import Estimate as Estimate
from rmbench.results.publishing.formats import register_format as register_format

# --- an export format ---
from rmbench.results.publishing.export_formats import ExportFormat as ExportFormat, Export as Export
from rmbench.results.publishing.export_formats import ExportFile as ExportFile, ExportOptions as ExportOptions
from rmbench.results.storage.folder import RunFolder as RunFolder
from rmbench.results.publishing.export_formats import register_export_format as register_export_format

# --- an engine ---
from rmbench.scoring.engines import Engine as Engine, Backend as Backend, BackendOptions as BackendOptions
from rmbench.scoring.backends import score_batch as score_batch
from rmbench.scoring.memory import MemoryRetries as MemoryRetries
from rmbench.scoring.engines import register_engine as register_engine

# --- a model kind ---
from rmbench.models.base import RewardModel as RewardModel, ScoreRequest as ScoreRequest, Runtime as Runtime
from rmbench.models.base import Truncation as Truncation, TokenizedModel as TokenizedModel
from rmbench.models.base import StochasticModel as StochasticModel, CompositeModel as CompositeModel
from rmbench.models.base import GroupContextModel as GroupContextModel, CallingModel as CallingModel
from rmbench.models.base import PairVerdictModel as PairVerdictModel
from rmbench.models.step_model import StepScoringModel as StepScoringModel, StepRequest as StepRequest
from rmbench.models import register_model_kind as register_model_kind

# --- a judge protocol ---
from rmbench.models.judge.judge_protocol import JudgeProtocol as JudgeProtocol, Official as Official
from rmbench.models.judge.judge_protocol import register_judge_protocol as register_judge_protocol

# --- a tracker ---
from rmbench.results.trackers.sink import TrackerSink as TrackerSink
from rmbench.results.trackers.payload import TrackedRun as TrackedRun, TrackedMetric as TrackedMetric
from rmbench.results.trackers.registry import register_tracker as register_tracker

# --- errors ---
from rmbench.errors import RMBenchError as RMBenchError, ConfigError as ConfigError, DataError as DataError
