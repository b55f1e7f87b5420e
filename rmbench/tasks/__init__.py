"""Task kinds: the registry and building a task from a spec.

A *kind* is a Task class (or factory) registered here or by a third-party package through the
``rmbench.tasks`` entry-point group. A *named task* (``ties``) is a YAML/TOML entry that
instantiates a kind with arguments; see :mod:`rmbench.catalog`.

Layer: beside :mod:`rmbench.models`, above :mod:`rmbench.core`. Holds the ``Task`` base and its
row readers (``base``), one module per family of kinds (``ties``, ``rewardbench``, ``jsonl``,
``shift``, ``rewrite_invariance``, ``domain``, ``persona``, ``hamiltonian``, ``rm_bench``,
``m_rewardbench``, ``judgebench``, ``ppe``, ``ppe_human``, ``rmb``), where data comes from
(``sources``), loading with ``--data`` overrides (``loading``) and the plugin skeleton
(``scaffold``). May import :mod:`rmbench.core` and the shared top-level modules only.
"""

from __future__ import annotations

from rmbench.core.specs import TaskSpec
from rmbench.registry import Registry, instantiate
from rmbench.tasks.base import Task

TASK_KINDS: Registry = Registry("task", entry_point_group="rmbench.tasks")
TASK_KINDS.register("rb2_ties", "rmbench.tasks.ties:TiesTask",
                    description="RewardBench 2 Ties (RB2 schema: id, prompt, chosen list, rejected list)")
TASK_KINDS.register("preference", "rmbench.tasks.jsonl:PreferenceTask",
                    description="preference pairs: prompt, chosen, rejected")
TASK_KINDS.register("groups", "rmbench.tasks.jsonl:GroupsTask",
                    description="comparison groups in rmbench's own JSON Lines format")
TASK_KINDS.register("paired_shift", "rmbench.tasks.shift:PairedShiftTask",
                    description="original vs paraphrased/translated pairs (paper format: orig_chosen, orig_index...)")
TASK_KINDS.register("rewrite_invariance", "rmbench.tasks.rewrite_invariance:RewriteInvarianceTask",
                    description="each answer beside its rewrite (paired shift format): Spec across forms, D "
                    "within/across")
TASK_KINDS.register("domain_shift", "rmbench.tasks.domain:DomainShiftTask",
                    description="one RM on several domains (preference files), each beside the in-domain one")
TASK_KINDS.register("rewardbench", "rmbench.tasks.rewardbench:RewardBenchTask",
                    description="RewardBench v1 pairs (prompt, chosen, rejected, subset), official weighted score")
TASK_KINDS.register("rewardbench2", "rmbench.tasks.rewardbench:RewardBench2Task",
                    description="RewardBench 2 rows (chosen/rejected lists, subset): best-of-n + Ties, official score")
TASK_KINDS.register("hamiltonian", "rmbench.tasks.hamiltonian:HamiltonianTask",
                    description="verify Hamiltonian cycles: valid cycle vs random non-cycle (seeded generator)")
TASK_KINDS.register("persona", "rmbench.tasks.persona:PersonaTask",
                    description="persona statements with templated yes/no answers, original vs held-out forms")
TASK_KINDS.register("rm_bench", "rmbench.tasks.rm_bench:RMBenchTask",
                    description="RM-Bench rows (chosen/rejected in 3 styles, domain): official hard/normal/easy, Spec "
                    "across styles")
TASK_KINDS.register("m_rewardbench", "rmbench.tasks.m_rewardbench:MRewardBenchTask",
                    description="M-RewardBench: RewardBench in 23 languages, per-language official scores, "
                                "paired with the English rows (translation shift)")
TASK_KINDS.register("judgebench", "rmbench.tasks.judgebench:JudgeBenchTask",
                    description="JudgeBench pairs (response_A, response_B, label A>B/B>A, source): official accuracy "
                                "per category (knowledge, reasoning, math, coding)")
TASK_KINDS.register("ppe_correctness", "rmbench.tasks.ppe:PPECorrectnessTask",
                    description="PPE correctness sets (32 answers a prompt, each correct or not): accuracy, exact "
                                "best-of-K curve and its gap to the oracle, Spec among equally correct answers")
TASK_KINDS.register("ppe_human", "rmbench.tasks.ppe_human:PPEHumanTask",
                    description="PPE human preference (Chatbot Arena pairs, winner or tie): accuracy per category "
                                "and language, Spec over the human ties")
TASK_KINDS.register("rmb", "rmbench.tasks.rmb:RMBTask",
                    description="RMB pairwise and Best-of-N items (conversation_input, chosen/reject or bon_best/"
                                "loser_list, category_path): official accuracy per scenario, set and goal, overall")


def build_task(spec: TaskSpec) -> Task:
    """Instantiate the task a spec describes; errors name the task and what was wrong."""
    return instantiate(TASK_KINDS, spec, "task", "groups", Task, _PluginTask)


class _PluginTask(Task):
    """Wraps a plugin object that has ``groups()`` but does not subclass Task."""

    def __init__(self, inner, spec=None) -> None:
        self.inner = inner
        self.description = getattr(inner, "description", "")

    def groups(self):
        return self.inner.groups()


def register_task_kind(name: str, target: object, description: str = "") -> None:
    """Register a task kind in this process (public API: ``rmbench.register_task_kind``).

    ``target`` is a Task subclass or factory, or a lazy ``"module:attr"`` (or
    ``"file.py:attr"``) string imported on first use. The name then works wherever a built-in
    kind does (``--tasks {name}``, entry files' ``kind:``). A name that is already
    registered is a :class:`~rmbench.registry.RegistryError`. An installed package registers
    through the ``rmbench.tasks`` entry-point group instead, so that every process sees it."""
    TASK_KINDS.register(name, target, description=description, origin=f"register_task_kind({name!r})")


__all__ = ["TASK_KINDS", "register_task_kind", "Task", "build_task"]
