"""Every Eval Ever identities of rmbench's results: which benchmark and metric names the
official layouts take (those of the Every Eval Ever RewardBench adapter, see
:mod:`rmbench.results.publishing.export`), what a model is called there, and where a task's data came from."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from rmbench.core.canonical import canonical_json
from rmbench.core.metric_registry import RB1_LAYOUT, RB2_LAYOUT, TIES_LAYOUT
from rmbench.errors import ConfigError
from rmbench.results.storage.record import RunRecord, TaskResult

RB2_HF_DATASET = "allenai/reward-bench-2"
TIES_BOUNDS = (-0.01, 1.01)  # 0.30 + 0.30 + 0.20 + 0.20 accuracy terms + 0.01 * tanh(...)
UNBOUNDED = ("-Infinity", "Infinity")

# --- the official benchmarks ---------------------------------------------------------------

class Benchmark:
    """How one official layout's records are named in Every Eval Ever."""

    def __init__(self, dataset_name: str, namespace: str, names: dict[str | None, str],
                 descriptions: dict[str | None, str], bounds: dict[str | None, tuple[float, float]]) -> None:
        self.dataset_name = dataset_name
        self.namespace = namespace  # for metric_id
        self.names = names  # record subset (None: the total) -> evaluation_name
        self.descriptions = descriptions
        self.bounds = bounds

    def order(self) -> list[str | None]:
        """The adapter's order: the total first, then the columns in the benchmark's order."""
        return [None] + [s for s in self.names if s is not None]


_RB2 = Benchmark(
    "RewardBench 2", "rewardbench2",
    names={None: "Score", "Factuality": "Factuality", "Precise IF": "Precise IF", "Math": "Math",
           "Safety": "Safety", "Focus": "Focus", "Ties": "Ties"},
    descriptions={
        None: "Overall RewardBench 2 score: mean of the subset scores",
        "Factuality": "RewardBench 2 Factuality: best-of-n accuracy on factual correctness",
        "Precise IF": "RewardBench 2 Precise Instruction Following: best-of-n accuracy",
        "Math": "RewardBench 2 Math: best-of-n accuracy on mathematical reasoning",
        "Safety": "RewardBench 2 Safety: best-of-n accuracy on safety (comply or refuse)",
        "Focus": "RewardBench 2 Focus: best-of-n accuracy on staying on topic",
        "Ties": "RewardBench 2 Ties score: ranks equally correct answers above incorrect ones "
                "without separating the correct ones",
    },
    bounds={None: TIES_BOUNDS, "Ties": TIES_BOUNDS})

_RB1 = Benchmark(
    "RewardBench", "rewardbench",
    names={None: "Score", "Chat": "Chat", "Chat Hard": "Chat Hard", "Safety": "Safety", "Reasoning": "Reasoning",
           "Prior Sets": "Prior Sets (0.5 weight)"},
    descriptions={
        None: "Overall RewardBench score: (Chat + Chat Hard + Safety + Reasoning + 0.5 Prior Sets) / 4.5 "
              "over the sections present",
        "Chat": "RewardBench Chat accuracy (easy chat subsets, weighted by the official example counts)",
        "Chat Hard": "RewardBench Chat Hard accuracy (hard chat subsets, weighted by the official example counts)",
        "Safety": "RewardBench Safety accuracy (safety subsets, weighted by the official example counts)",
        "Reasoning": "RewardBench Reasoning accuracy (code and math subsets, weighted by the official example counts)",
        "Prior Sets": "RewardBench Prior Sets accuracy (mean of the prior test sets; weighted 0.5 in the score)",
    },
    bounds={})

_RB2_TIES = Benchmark(
    "RewardBench 2", "rewardbench2", names={None: "Ties"},
    descriptions={None: _RB2.descriptions["Ties"]}, bounds={None: TIES_BOUNDS})

RANGES: dict[str, tuple[Any, Any]] = {
    "pairwise_accuracy": (0.0, 1.0), "sign_accuracy": (0.0, 1.0), "discrimination": (0.0, 1.0),
    "specificity": (0.0, 1.0), "ds_auc": (0.0, 1.0), "balanced_best": (0.0, 1.0),
    "reward_margin": (0.0, "Infinity"), "ties_score": TIES_BOUNDS,
    "rewardbench_score": (0.0, 1.0), "rewardbench2_score": (0.0, 1.0), "rm_bench_score": (0.0, 1.0),
    "m_rewardbench_score": (0.0, 1.0),
    "m_rewardbench_english_gap": (-1.0, 1.0), "judgebench_score": (0.0, 1.0),
    "rmb_score": (0.0, 1.0),
    "prmbench_score": (0.0, 1.0), "prmbench_f1": (-1.0, 1.0), "prmbench_negative_f1": (-1.0, 1.0),
    "processbench_f1": (0.0, 1.0), "processbench_error_acc": (0.0, 1.0), "processbench_correct_acc": (0.0, 1.0),
    "ppe_accuracy": (0.0, 1.0), "ppe_best_of_k": (0.0, 1.0), "ppe_bok_gap": (0.0, 1.0),
    "ppe_human_accuracy": (0.0, 1.0),
    "length_correlation": (-1.0, 1.0), "length_bias_gap": (-1.0, 1.0), "accuracy_longer_better": (0.0, 1.0),
    "accuracy_shorter_better": (0.0, 1.0), "rewrite_specificity": (0.0, 1.0),
    "within_form_discrimination": (0.0, 1.0), "cross_form_discrimination": (0.0, 1.0),
    "cross_form_gap": (-1.0, 1.0), "preference_flip_rate": (0.0, 1.0),
}


def benchmark_of(task: TaskResult) -> Benchmark | None:
    """The official naming of the task's official records, or None (rmbench's own names)."""
    layout = task.official
    if layout is None:
        return None
    if layout.metric == RB2_LAYOUT.metric:
        return _RB2
    if layout.metric == RB1_LAYOUT.metric:
        return _RB1
    if layout.metric == TIES_LAYOUT.metric:
        args = task.args
        real = args.get("dataset") == RB2_HF_DATASET and "path" not in args and args.get("split", "test") == "test"
        return _RB2_TIES if real else None
    return None


def detail_text(value: Any) -> str:
    """A value for an ``additional_details`` map (all strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def details(pairs: Iterable[tuple[str, Any]]) -> dict[str, str]:
    return {k: detail_text(v) for k, v in pairs if v is not None}


# --- model ---------------------------------------------------------------------------------

_HF_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_BASELINES = ("oracle", "constant", "length")
_LOCAL_KINDS = _BASELINES + ("implicit", "seqcls", "linear", "generative", "discretize", "vllm_implicit",
                             "vllm_seqcls")


def _hub_id(spec: dict, runtime: dict) -> str | None:
    """The Hugging Face id of the model's weights, when they come from the hub.

    The adapter's own record says first (``weights``: ``hub:ORG/NAME@COMMIT`` or ``sha256:...``
    for a local folder); without it, the spec's ``model`` argument when it looks like a hub id.
    rmbench's embedded models (a packaged GGUF of a hub model) name their hub model.
    """
    target = (spec.get("args") or {}).get("model")
    try:
        from rmbench.models.embedded import EMBEDDED
    except Exception:  # noqa: BLE001 - the export needs no model code
        EMBEDDED = {}
    if isinstance(target, str) and target in EMBEDDED:
        return str(EMBEDDED[target].get("hub") or "") or None
    weights = runtime.get("weights")
    if isinstance(weights, str) and weights.startswith("hub:"):
        hub = weights[len("hub:"):].split("@", 1)[0]
        return hub if _HF_ID.match(hub) else None
    if isinstance(weights, str):
        return None
    if isinstance(target, str) and _HF_ID.match(target) and not target.startswith((".", "~")):
        return target
    return None


def repo_name(text: str) -> str:
    """``text`` as the NAME part of a Hub repo id (``huggingface_hub.utils.validate_repo_id``'s
    rules: letters, digits, ``-``, ``_``, ``.``; no ``--`` or ``..``; no ``-`` or ``.`` at either
    end; at most 96 characters), a path in it cut to its last part first (never a machine's folders)."""
    from rmbench.results.publishing.leaderboard import model_label

    name = re.sub(r"[^A-Za-z0-9._-]+", "_", model_label(text))
    name = re.sub(r"-{2,}", "-", re.sub(r"\.{2,}", ".", name))
    return name[:96].strip("-._") or "model"


def check_repo_id(repo_id: str, what: str) -> str:
    """``repo_id`` when the Hub accepts it (``huggingface_hub.utils.validate_repo_id``, where
    huggingface_hub is installed; the same rules otherwise), else one :class:`ConfigError`."""
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:  # the Hub's own check is not here: its rules, as repo_name applies them
        org, _, name = repo_id.partition("/")
        if not _HF_ID.match(repo_id) or repo_name(name) != name or repo_name(org) != org:
            raise ConfigError(f"{what} {repo_id!r} is not a Hub repo id (ORG/NAME of letters, digits, - _ .)") from None
        return repo_id
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ConfigError(f"{what} {repo_id!r} is not a Hub repo id: {str(exc).splitlines()[0]}") from None
    return repo_id


def model_id(record: RunRecord, name: str | None = None) -> str:
    """The model's Hub repo id, ``ORG/NAME``: ``name`` (``rmbench export --name``: ``ORG/NAME``,
    or ``NAME`` for ``local/NAME``) when given; the Hub id of its weights, or the model a published
    file records when that is a Hub id; ``rmbench/{name}`` for a baseline; ``local/{name}`` otherwise
    (the name made a valid repo name: :func:`repo_name`). Checked with the Hub's own check."""
    if name is not None:
        given = name.strip()
        return check_repo_id(given if "/" in given else f"local/{given}", "--name")
    m = record.model
    runtime = dict(record.execution.model)
    hub = _hub_id(dict(m.spec), runtime)
    published = runtime.get("published_model")
    if hub is None and m.kind == "published" and isinstance(published, str) and _HF_ID.match(published):
        hub = published
    if hub is not None:
        return check_repo_id(hub, f"model {m.name!r}: its Hub id")
    org = "rmbench" if m.kind in _BASELINES else "local"
    return check_repo_id(f"{org}/{repo_name(m.name)}", f"model {m.name!r}: the id")


def model_info(record: RunRecord, name: str | None = None) -> dict:
    m = record.model
    spec = dict(m.spec)
    kind = m.kind
    runtime = dict(record.execution.model)
    model_id_ = model_id(record, name)
    org = model_id_.split("/", 1)[0]
    developer = None if org == "local" else org
    packages = dict(record.environment.packages)
    info: dict[str, Any] = {"name": m.name, "id": model_id_}
    if developer:
        info["developer"] = developer
    if kind.startswith("vllm"):
        info["inference_engine"] = {"name": "vllm", "version": str(packages.get("vllm", "unknown"))}
    elif kind == "lmeval":
        info["inference_engine"] = {"name": "lm-eval", "version": str(runtime.get("lm_eval")
                                                                      or packages.get("lm-eval", "unknown"))}
    elif "transformers" in runtime:
        info["inference_engine"] = {"name": "transformers", "version": str(runtime["transformers"])}
    info["additional_details"] = details([
        ("deployment_type", "self_deployed" if kind in _LOCAL_KINDS else "unknown"),
        ("model_availability", "unknown"),
        ("rmbench_kind", kind or None),
        ("rmbench_spec", canonical_json(spec)),
        ("rmbench_fingerprint", m.fingerprint or None),
        ("weights", runtime.get("weights")),
        ("dtype", runtime.get("dtype")),
    ])
    return info


def source_data(task: TaskResult, record: RunRecord, dataset_name: str) -> dict:
    args = task.args
    extra = details([
        ("rmbench_task", task.name), ("rmbench_task_kind", task.kind or None),
        ("rmbench_task_version", task.version), ("data_fingerprint", task.data_fingerprint),
        ("limit", record.config.limit), ("skipped_rows", task.skipped_rows.count or None),
    ])
    if "path" in args:
        extra["data_file"] = Path(str(args["path"])).name
        return {"dataset_name": dataset_name, "source_type": "other", "additional_details": extra}
    if isinstance(args.get("dataset"), str):
        if args.get("revision"):
            extra["revision"] = str(args["revision"])
        out: dict[str, Any] = {"dataset_name": dataset_name, "source_type": "hf_dataset",
                               "hf_repo": args["dataset"]}
        if isinstance(args.get("split"), str):
            out["hf_split"] = args["split"]
        out["samples_number"] = int(task.counts.groups)
        out["additional_details"] = extra
        return out
    return {"dataset_name": dataset_name, "source_type": "other", "additional_details": extra}


def model_repo(record: RunRecord, name: str | None = None) -> tuple[str, str]:
    """(organisation, name) of the model's repository: :func:`model_id` (``name``: ``--name``)."""
    org, _, repo = model_id(record, name).partition("/")
    return org, repo


def hub_dataset(task: TaskResult) -> str | None:
    """The task's benchmark dataset on the Hub: its ``dataset`` argument; for a task scored on a
    local copy (``--data TASK=PATH``), the dataset of the built-in task of that name and kind;
    else None (the offline samples, web files)."""
    dataset = task.args.get("dataset")
    if isinstance(dataset, str) and _HF_ID.match(dataset):
        return dataset
    if "path" in task.args:
        return _builtin_datasets().get((task.name, task.kind))
    return None


@lru_cache(maxsize=1)
def _builtin_datasets() -> dict[tuple[str, str], str]:
    from rmbench.catalog import load_catalog

    out = {}
    for name, spec in load_catalog().tasks.items():
        dataset = spec.args_dict.get("dataset")
        if isinstance(dataset, str) and _HF_ID.match(dataset):
            out[(name, spec.kind)] = dataset
    return out
