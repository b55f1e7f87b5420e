"""Task kinds: the registry and building a task from a spec.

A *kind* is a Task class (or factory) registered here, with what its class declares (its own
scores as metrics, the row schemas it reads), or by a third-party package through the
``rmbench.tasks`` entry-point group. A *named task* (``ties``) is a YAML/TOML entry that
instantiates a kind with arguments; see :mod:`rmbench.catalog`. The built-in kinds are
registered with their classes at the end of this module: their modules import numpy and
:mod:`rmbench.core` only, and what they declare must be known before any task is built (the
metrics reference, a leaderboard of older runs, which schema a row looks like).

Layer: beside :mod:`rmbench.models`, above :mod:`rmbench.core`. Holds the ``Task`` base and its
row readers (``base``), one module per family of kinds (``ties``, ``rewardbench``, ``jsonl``,
``shift``, ``rewrite_invariance``, ``domain``, ``persona``, ``hamiltonian``, ``rm_bench``,
``m_rewardbench``, ``judgebench``, ``processbench``, ``ppe``, ``ppe_human``, ``rmb``, ``vl_rewardbench``,
``mm_rewardbench``, ``prmbench``), where data comes from (``sources``), loading with ``--data`` overrides
(``loading``), what ``rmbench tasks show`` says of a task (``describe``) and the plugin skeleton
(``scaffold``). May import :mod:`rmbench.core` and the shared top-level modules only.
"""

from __future__ import annotations

from rmbench.core.metric_registry import declare_metric
from rmbench.core.specs import TaskSpec
from rmbench.registry import Registry
from rmbench.registry.factories import instantiate
from rmbench.tasks.base import Task
from rmbench.tasks.schemas import ROW_SCHEMAS

TASK_KINDS: Registry = Registry("task", entry_point_group="rmbench.tasks")


def build_task(spec: TaskSpec) -> Task:
    """Instantiate the task a spec describes (registering what its kind declares, for a kind
    loaded lazily: an entry point's); errors name the task and what was wrong."""
    task = instantiate(TASK_KINDS, spec, "task", "groups", Task, _PluginTask)
    origin = spec.kind if ":" in spec.kind else TASK_KINDS.origin(spec.kind)
    declare_kind(spec.kind, task.inner if isinstance(task, _PluginTask) else task, origin=origin)
    if ":" not in spec.kind:  # a registered kind: an entry point's distribution enters the task's key
        task.plugin = TASK_KINDS.source(spec.kind)
    return task


class _PluginTask(Task):
    """Wraps a plugin object that has ``groups()`` but does not subclass Task."""

    def __init__(self, inner, spec=None) -> None:
        self.inner = inner
        self.description = getattr(inner, "description", "")

    def groups(self):
        return self.inner.groups()


def register_task_kind(name: str, target: object, *, description: str = "") -> None:
    """Register a task kind in this process (public API: ``rmbench.register_task_kind``).

    ``target`` is a Task subclass or factory, or a lazy ``"module:attr"`` (or
    ``"file.py:attr"``) string imported on first use. The name then works wherever a built-in
    kind does (``--tasks {name}``, entry files' ``kind:``). A name that is already
    registered is a :class:`~rmbench.registry.RegistryError`. An installed package registers
    through the ``rmbench.tasks`` entry-point group instead, so that every process sees it.

    This one call is the whole registration: the class's own declarations come with it, its
    ``scores`` as metrics (:func:`rmbench.core.metric_registry.declare_metric`) and its
    ``row_schemas`` (:data:`rmbench.tasks.schemas.ROW_SCHEMAS`); a lazy target's when it
    is first built (:func:`build_task`), as an entry point's."""
    origin = f"register_task_kind({name!r})"
    if name in TASK_KINDS:  # refused before its declarations are taken
        TASK_KINDS.register(name, target, description=description, origin=origin)
    if not isinstance(target, str):
        declare_kind(name, target, origin=origin)
    TASK_KINDS.register(name, target, description=description, origin=origin)


def declare_kind(name: str, kind: object, *, origin: str = "built-in") -> None:
    """Register what the kind ``name`` (a Task class, a factory or a task built by it) declares:
    its ``scores`` as metrics (a second declaration of a name must be identical) and its
    ``row_schemas`` as read by ``name``, each entry with the kind's ``origin``. Idempotent."""
    for definition in getattr(kind, "scores", ()) or ():
        declare_metric(definition.name, definition, origin=f"task kind {name!r} ({origin})")
    schemas = tuple(getattr(kind, "row_schemas", ()) or ())
    if schemas:
        ROW_SCHEMAS.register(name, schemas, origin=f"task kind {name!r} ({origin})")


def _builtin(name: str, kind: type[Task], description: str) -> None:
    declare_kind(name, kind)
    TASK_KINDS.register(name, kind, description=description)


__all__ = ["TASK_KINDS", "Task", "build_task", "declare_kind", "register_task_kind"]


# The built-in kinds, registered with their classes (each declares its scores and row schemas).
from rmbench.tasks.domain import DomainShiftTask  # noqa: E402
from rmbench.tasks.hamiltonian import HamiltonianTask  # noqa: E402
from rmbench.tasks.jsonl import GroupsTask, PreferenceTask  # noqa: E402
from rmbench.tasks.judgebench import JudgeBenchTask  # noqa: E402
from rmbench.tasks.m_rewardbench import MRewardBenchTask  # noqa: E402
from rmbench.tasks.mm_rewardbench import MMRewardBenchTask  # noqa: E402
from rmbench.tasks.persona import PersonaTask  # noqa: E402
from rmbench.tasks.ppe import PPECorrectnessTask  # noqa: E402
from rmbench.tasks.ppe_human import PPEHumanTask  # noqa: E402
from rmbench.tasks.prmbench import PRMBenchTask  # noqa: E402
from rmbench.tasks.processbench import ProcessBenchTask  # noqa: E402
from rmbench.tasks.rewardbench import RewardBench2Task, RewardBenchTask  # noqa: E402
from rmbench.tasks.rewrite_invariance import RewriteInvarianceTask  # noqa: E402
from rmbench.tasks.rm_bench import RMBenchTask  # noqa: E402
from rmbench.tasks.rmb import RMBTask  # noqa: E402
from rmbench.tasks.shift import PairedShiftTask  # noqa: E402
from rmbench.tasks.ties import TiesTask  # noqa: E402
from rmbench.tasks.vl_rewardbench import VLRewardBenchTask  # noqa: E402

_builtin("rb2_ties", TiesTask,
         "RewardBench 2 Ties (RB2 schema: id, prompt, chosen list, rejected list)")
_builtin("preference", PreferenceTask,
         "preference pairs: prompt, chosen, rejected")
_builtin("groups", GroupsTask,
         "comparison groups in rmbench's own JSON Lines format")
_builtin("paired_shift", PairedShiftTask,
         "original vs paraphrased/translated pairs (paper format: orig_chosen, orig_index...)")
_builtin("rewrite_invariance", RewriteInvarianceTask,
         "each answer beside its rewrite (paired shift format): Spec across forms, D "
         "within/across")
_builtin("domain_shift", DomainShiftTask,
         "one RM on several domains (preference files), each beside the in-domain one")
_builtin("rewardbench", RewardBenchTask,
         "RewardBench v1 pairs (prompt, chosen, rejected, subset), official weighted score")
_builtin("rewardbench2", RewardBench2Task,
         "RewardBench 2 rows (chosen/rejected lists, subset): best-of-n + Ties, official score")
_builtin("hamiltonian", HamiltonianTask,
         "verify Hamiltonian cycles: valid cycle vs random non-cycle (seeded generator)")
_builtin("persona", PersonaTask,
         "persona statements with templated yes/no answers, original vs held-out forms")
_builtin("rm_bench", RMBenchTask,
         "RM-Bench rows (chosen/rejected in 3 styles, domain): official hard/normal/easy, Spec "
         "across styles")
_builtin("m_rewardbench", MRewardBenchTask,
         "M-RewardBench: RewardBench in 23 languages, per-language official scores, "
         "paired with the English rows (translation shift)")
_builtin("judgebench", JudgeBenchTask,
         "JudgeBench pairs (response_A, response_B, label A>B/B>A, source): official accuracy "
         "per category (knowledge, reasoning, math, coding)")
_builtin("ppe_correctness", PPECorrectnessTask,
         "PPE correctness sets (32 answers a prompt, each correct or not): accuracy, exact "
         "best-of-K curve and its gap to the oracle, Spec among equally correct answers")
_builtin("ppe_human", PPEHumanTask,
         "PPE human preference (Chatbot Arena pairs, winner or tie): accuracy per category "
         "and language, Spec over the human ties")
_builtin("vl_rewardbench", VLRewardBenchTask,
         "VL-RewardBench (image + question, two human-ranked responses; data.jsonl and its image "
         "folder): official accuracy per group (general, hallucination, reasoning), overall, macro")
_builtin("mm_rewardbench", MMRewardBenchTask,
         "Multimodal RewardBench (image + prompt, two responses, one better; all_data.json and its "
         "image folder): official accuracy per category and overall, a tie decided by its seeded coin")
_builtin("rmb", RMBTask,
         "RMB pairwise and Best-of-N items (conversation_input, chosen/reject or bon_best/"
         "loser_list, category_path): official accuracy per scenario, set and goal, overall")
_builtin("prmbench", PRMBenchTask,
         "PRMBench solutions (modified_process, error_steps, classification), scored step by "
         "step by a PRM: official PRMScore per error type, per category and overall")
_builtin("processbench", ProcessBenchTask,
         "ProcessBench solutions (problem, steps, label = first wrong step or -1), scored step by step "
         "by a process reward model: official error/correct accuracy and F1 per split, mean F1")
