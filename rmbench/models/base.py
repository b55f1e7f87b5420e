"""The reward-model interface and the capabilities an adapter may declare.

Every adapter is a :class:`RewardModel`: it scores whole batches of (prompt, response)
requests, has an :meth:`~RewardModel.identity` (what makes its numbers what they are: kind,
canonical arguments, weights content; never its display name) and a
:meth:`~RewardModel.describe` (how it ran). What else the engine and the runner may use is
declared by subclassing a capability, never discovered by probing attributes:

* :class:`TokenizedModel`: reads tokens. Token lengths and prompt-prefix lengths for batching,
  a context limit, and a :class:`Truncation` policy given at construction.
* :class:`StochasticModel`: draws dropout samples (what ``discretize`` needs).
* :class:`CompositeModel`: made of other models (``discretize``'s inner model, an implicit RM's
  reference); :func:`parts` walks them.
* :class:`PairVerdictModel`: gives pair verdicts (a pairwise LLM judge, a published JudgeBench
  file): its tasks take their ``verdict_args``.
* :class:`~rmbench.models.step_model.StepScoringModel` (in its own module): a process reward
  model (PRM), scoring each step of a solution, on a declared scale.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rmbench import __version__
from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.choices import TRUNCATION_SIDES, DType, TruncationSide, choice, device_choice, dtype_choice
from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.prompts import prompt_images
from rmbench.core.types import Prompt, prompt_to_json
from rmbench.errors import ConfigError

if TYPE_CHECKING:
    from rmbench.core.types import ComparisonGroup
    from rmbench.registry import PluginSource


@dataclass(frozen=True)
class ScoreRequest:
    """One response to score.

    ``utility`` is the ground truth, present only so that the ``oracle`` baseline can exist;
    real adapters must ignore it (and leave ``uses_utility`` False). ``context`` holds the other
    responses of the request's group, filled in only for a :class:`GroupContextModel` (whose
    score of a response may depend on them; the cache key then includes them). ``subset``: the
    group's subset, filled in only for a model that declares ``reads_subset`` (an LLM judge asks
    RewardBench 2's Ties rows with their own prompt); the cache key then includes it.
    """

    prompt: Prompt
    """The prompt the response answers (a string or a conversation)."""
    response: str
    """The response to score."""
    group_id: str = ""
    """The id of the response's group."""
    index: int = 0
    """The response's position in its group."""
    utility: int | None = None
    context: tuple[str, ...] = ()
    subset: str | None = None

    def key(self, with_utility: bool = False) -> str:
        """sha256 of the scored input: the prompt and the response (with the group's other
        responses when ``context`` is given, and the utility for the oracle)."""
        payload: dict[str, Any] = {"prompt": prompt_to_json(self.prompt), "response": self.response}
        if self.context:
            payload["context"] = list(self.context)
        if self.subset is not None:
            payload["subset"] = self.subset
        if with_utility:
            payload["utility"] = self.utility
        return sha256_hex(canonical_json(payload))


@dataclass(frozen=True)
class Runtime:
    """How to run models: never part of a task's comparability, recorded in every run.

    ``dtype``: ``auto`` (bf16 where the CPU has bf16 units or on a GPU, fp32 otherwise),
    ``float32``, ``bfloat16`` or ``float16`` (``fp32``, ``bf16``, ``fp16`` are spelt out).
    ``device``: ``auto``, ``cpu``, ``cuda``, ``mps`` (or with an index: ``cuda:1``). Both are
    checked here, once (:mod:`rmbench.core.choices`): a bad word is a one-line error naming
    ``--dtype``/``--device``.
    ``token_budget``: padded tokens per batch, ``max_batch``: requests per batch at most; None
    (the default): chosen for the device (8,192 and 64 on a CPU; on CUDA from the free memory:
    :mod:`rmbench.models.batching`).
    ``trust_remote_code``: let model repositories run their own Python code (off by default).
    ``allow_pickle``: let weights load from pickle files (``pytorch_model.bin``, ``.pt``), which
    can run code when unpickled; off by default, so only safetensors (and GGUF) weights load.
    ``threads``: CPU threads for torch's operators (None: follow the machine's load, see
    :mod:`rmbench.models.threads`).
    """

    dtype: DType = "auto"
    device: str = "auto"  # a Device word, or one with an index (cuda:1)
    trust_remote_code: bool = False
    allow_pickle: bool = False
    token_budget: int | None = None
    max_batch: int | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", dtype_choice(self.dtype))
        object.__setattr__(self, "device", device_choice(self.device))


@dataclass(frozen=True)
class Truncation:
    """How a tokenised model cuts a text longer than ``max_length`` tokens (None: never).

    ``side``: ``left`` (the default) drops the start of the prompt and keeps the response whole;
    ``right`` drops the end (checked here, as ``--truncation``). Part of a tokenised model's
    identity, so cached scores never mix settings.
    """

    max_length: int | None = None
    side: TruncationSide = "left"

    def __post_init__(self) -> None:
        choice(self.side, TRUNCATION_SIDES, "--truncation")
        m = self.max_length
        if m is not None and (isinstance(m, bool) or not isinstance(m, int) or m < 1):
            raise ConfigError(f"--max-length must be a positive integer, got {m!r}")

    def over(self, policy: Truncation | None) -> Truncation:
        """This policy with the fields that ``policy`` (the run's ``--max-length``/``--truncation``) sets."""
        if policy is None:
            return self
        return Truncation(policy.max_length if policy.max_length is not None else self.max_length, policy.side)


IDENTITY_EXCLUDED = ("runtime", "truncation")
"""Constructor arguments that are never part of an identity: how a model runs, and the
truncation policy (which a tokenised model records as its effective max length and side)."""


class RewardModel(ABC):
    """Base class of model adapters.

    Subclasses implement :meth:`score` over a whole batch, so an adapter can pad and vectorise
    as it likes. The engine plans batches (sorted by :meth:`lengths`, under a token budget),
    skips what its cache holds, and finally calls :meth:`postprocess` with whole groups in view.

    ``kind``: the registered kind name (identity uses it; a class without one is named by its
    import path). The constructor's arguments, bound with their defaults, are recorded for
    :meth:`identity`, so a model built in code and the same model built from a spec have the
    same identity.
    """

    kind: ClassVar[str | None] = None
    uses_utility: ClassVar[bool] = False
    """Whether the model reads :attr:`ScoreRequest.utility`, the ground truth: the ``oracle`` baseline
    only."""
    reads_subset: ClassVar[bool] = False
    """The engine fills :attr:`ScoreRequest.subset` for such a model."""
    reads_images: bool = False
    """Whether the model reads the images a prompt may carry (:attr:`rmbench.core.prompts.Message.images`).
    A model that does not is refused a task whose prompts carry images (:meth:`check_images`)
    rather than scoring their text alone; the baselines and published replays, which read no
    prompt, declare True."""
    may_abstain: ClassVar[bool] = False
    """Whether :meth:`postprocess` may give NaN, "no reward" (an LLM judge's unparsed answer): the
    runner then leaves that response out of the task's pairs and official scores
    (:func:`rmbench.core.unscored.drop_unscored`) and counts it."""
    max_batch: int | None = None
    """The adapter's own cap on requests per batch; None: none."""
    preferred_batch: int | None = None
    """Requests per batch the adapter wants when the run sets none (an LLM judge sends a batch's
    requests concurrently, so it wants many; a batch-mode judge sets it per instance); None: the device's default."""
    _init_args: dict[str, Any] | None = None
    plugin: PluginSource | None = None
    """The installed distribution whose entry point registered this model's kind (set by
    :func:`~rmbench.models.build_model`); None for a built-in kind or one registered in code."""

    def __new__(cls, *args: Any, **kwargs: Any):
        obj = super().__new__(cls)
        try:
            bound = inspect.signature(cls.__init__).bind(obj, *args, **kwargs)
        except TypeError:  # __init__ itself will raise the clear error
            return obj
        bound.apply_defaults()
        recorded: dict[str, Any] = {}
        for name, value in list(bound.arguments.items())[1:]:
            param = bound.signature.parameters[name]
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                recorded.update(value)
            elif name not in IDENTITY_EXCLUDED:
                recorded[name] = value
        obj._init_args = recorded
        return obj

    @abstractmethod
    def score(self, batch: Sequence[ScoreRequest]) -> Sequence[float] | np.ndarray:
        """One finite value per request, in order: a float, or a fixed-length vector of raw
        outputs that :meth:`postprocess` turns into a reward."""

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        """Cost of each request in tokens, for batching (default: characters / 4)."""
        return [1 + (_text_length(r.prompt) + len(r.response)) // 4 for r in batch]

    def check_groups(self, groups: Sequence[ComparisonGroup]) -> None:  # noqa: B027 - an optional hook
        """Refuse, before any response is scored (and any progress is shown), groups this model
        cannot give rewards for: a ValueError of one line (a published file that does not match
        the task's data). Default: every group is fine."""

    def check_images(self, groups: Sequence[ComparisonGroup]) -> None:
        """Refuse groups whose prompts carry images when the model reads text only
        (:attr:`reads_images` False): a ValueError of one line, before anything is scored.
        :attr:`reads_images` is asked only when some prompt carries images (a transformers model
        looks for an image processor in its checkpoint's files to answer)."""
        with_images = [g for g in groups if prompt_images(g.prompt)]
        if with_images and not self.reads_images:
            raise ValueError(f"it reads text only, but {len(with_images)} of the {len(groups)} groups' prompts "
                             f"carry images (group {with_images[0].id!r} first): scoring their text alone would "
                             f"hide the images; use a model kind that reads images")

    def postprocess(self, groups: Sequence[ComparisonGroup], raw: np.ndarray) -> np.ndarray:
        """Raw outputs of all responses (flattened in group order) -> one reward each."""
        if raw.ndim != 1:
            raise ValueError(f"{type(self).__name__} returned vectors but does not post-process them")
        return raw

    # --- identity ---------------------------------------------------------------------------
    def kind_name(self) -> str:
        """The registered kind, else the class's import path (``module:Class``)."""
        cls = type(self)
        return self.kind or f"{cls.__module__}:{cls.__qualname__}"

    def identity(self) -> dict[str, Any]:
        """What makes this model's numbers what they are, as JSON: its kind and canonical
        arguments (the constructor's, defaults filled in). Adapters with weights or code replace
        their location arguments by a hash of the content. Never the display name."""
        return {"kind": self.kind_name(), "args": _jsonable(self._init_args or {})}

    def fingerprint(self) -> str:
        """sha256 of :meth:`identity` and rmbench's version: keys the score cache (a new release
        re-scores); and, for a model with a part whose kind a plugin registered, that plugin's
        distribution, version and module hash (:attr:`plugin`: a new version, or an edit to an
        editable install's module, re-scores)."""
        return self.fingerprint_of(self.identity())

    def fingerprint_of(self, identity: dict[str, Any]) -> str:
        """sha256 of ``identity``, rmbench's version and the plugins of this model's parts (as
        :meth:`fingerprint`; a process RM's step cache keys its :meth:`step_identity` with it)."""
        plugins = sorted({source for p in parts(self) for source in p.plugins()})
        return sha256_hex(canonical_json({"identity": identity, "rmbench": __version__,
                                          **({"plugins": [p.to_json() for p in plugins]} if plugins else {})}))

    def plugins(self) -> tuple[PluginSource, ...]:
        """The installed distributions whose entry points registered what this adapter itself (not
        its parts) runs: its kind's (:attr:`plugin`); an LLM judge adds its protocol's."""
        return (self.plugin,) if self.plugin is not None else ()

    def describe(self) -> dict[str, Any]:
        """What the run record should say about how this model ran (dtype, device, versions)."""
        return {}

    def ran_with(self) -> dict[str, Any]:
        """How this adapter ran in this process, known only once it has run (a GPU's name, the
        attention kernels): the run records it among the run's counters, apart from
        :meth:`describe`, so a fully cached re-run describes itself as the cold run did. Default: nothing."""
        return {}

    def close(self) -> None:  # noqa: B027  (an optional hook; the default holds nothing)
        """Release what this adapter holds outside Python's memory (an inference engine's
        processes and threads), now rather than at interpreter exit. The runner calls it
        (:func:`close_parts`) once the model's scoring ends, even when scoring failed. Safe to
        call twice; the adapter stays usable (it loads again on the next batch). Default: nothing."""


class TokenizedModel(ABC):
    """A model that reads tokens: the engine plans its batches with :meth:`RewardModel.lengths`
    in tokens and :meth:`prefix_lengths`; the runner refuses texts past :meth:`context_limit`
    and counts the texts ``truncation`` cuts."""

    if TYPE_CHECKING:  # an attribute (HFTokenizedModel) or a property (DiscretizedRM: its inner model's)

        @property
        def truncation(self) -> Truncation: ...

    @abstractmethod
    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        """Tokens of each request's whole text, untruncated."""

    prompt_reuse: bool = True
    """Whether :meth:`prefix_lengths`' sharing is used: the engine turns it off for a scoring call
    whose cheapest plan keeps no prompt's responses together (:func:`use_prompt_reuse`)."""

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        """Tokens at the start of each request that other requests with the same prompt can
        reuse (a causal model's prompt KV cache), or None when the model reuses none. The engine
        then keeps a prompt's requests in one batch."""
        return None

    @abstractmethod
    def context_limit(self) -> int | None:
        """The longest input the model takes, if known."""

    def truncated(self, batch: Sequence[ScoreRequest]) -> int:
        """How many of these texts are longer than ``truncation.max_length`` tokens (lose tokens)."""
        limit = self.truncation.max_length
        return 0 if limit is None else sum(n > limit for n in self.lengths(batch))

    def check_context(self, batch: Sequence[ScoreRequest]) -> None:
        """Refuse a text that would still be longer than the context after truncation: positions
        past it give garbage or crash, and a huge text would hang. The message names the first."""
        if not batch:
            return
        limit, max_length = self.context_limit(), self.truncation.max_length
        if limit is None or (max_length is not None and max_length <= limit):
            return
        for request, n in zip(batch, self.lengths(batch)):
            if n <= limit:
                continue
            if max_length is not None:
                raise ConfigError(f"--max-length {max_length} is longer than the model's context of {limit} "
                                  f"tokens, and group {request.group_id!r}, response {request.index} is {n} "
                                  f"tokens; pass --max-length {limit} or less")
            raise ConfigError(f"group {request.group_id!r}, response {request.index} is {n} tokens, longer than "
                              f"the model's context of {limit}; pass --max-length {limit} to truncate such texts "
                              f"(--truncation left, the default, keeps the response and drops the start of the "
                              f"prompt), or drop the row")


class StochasticModel(ABC):
    """A model that can score with dropout forced on (MC dropout)."""

    @abstractmethod
    def sample(self, batch: Sequence[ScoreRequest], n_samples: int, p: float, variant: str,
               seed: int) -> np.ndarray:
        """(len(batch), n_samples) values with dropout at rate ``p``: ``full`` inside the model,
        ``head`` on its final hidden states only. Seeded: same inputs and seed, same values."""


class CompositeModel(ABC):
    """A model made of other models."""

    @abstractmethod
    def children(self) -> Sequence[RewardModel]:
        """The models this one scores through, outermost first."""


class GroupContextModel(ABC):  # noqa: B024  (a marker base: nothing to implement)
    """A model whose score of a response may depend on the other responses of its group (e.g.
    RewardBench's DPO truncation, decided by the longest answer of a pair): the engine fills
    :attr:`ScoreRequest.context` for it, and the cache key includes that context."""


class PairVerdictModel(ABC):  # noqa: B024  (a marker base: nothing to implement)
    """A model that gives pair verdicts: its reward gap on a pair is a verdict, +1, 0 or -1 (a
    ``judge`` in mode ``pairwise``), or its pairs are scored by the verdicts of the games it
    played (a published JudgeBench file). A task scored for it takes the arguments its kind
    declares for verdicts (:attr:`rmbench.tasks.base.Task.verdict_args`: JudgeBench's
    ``single_game: false``, both games' rule) where ``--task-arg`` does not set them, on the
    groups it reads for any other model (verdict arguments change scores, never groups)."""

    def gives_pair_verdicts(self) -> bool:
        """Whether this instance's pairs are scored by verdicts (default: yes; a published file
        says once read: a JudgeBench file of one game read as scores is a plain reward model)."""
        return True


class CallingModel(ABC):
    """A model that calls a server for its scores (an LLM judge): the runner gives it a store
    for its calls (:meth:`use_call_store`, keyed by :meth:`call_fingerprint`), instead of the
    score cache, so every re-run reads the calls back and re-derives its scores and judgments
    from them; and collects its judgments for the run folder (:meth:`judgments`)."""

    @abstractmethod
    def call_fingerprint(self) -> str:
        """sha256 of what makes a call's answer what it is (the served model, never its address)."""

    @abstractmethod
    def use_call_store(self, store: Any) -> None:
        """Keep calls in ``store`` (``get_many(keys) -> {key: dict}``, ``put(key, dict)``)."""

    @abstractmethod
    def judgments(self, requests: Sequence[ScoreRequest]) -> list[dict[str, Any]]:
        """The calls behind the scores of ``requests`` (scored in this process), one JSON row per call."""

    def reply_counts(self, rows: Sequence[Mapping[str, Any]], left_out: int) -> JudgeReplies | None:
        """How one task's replies (its :meth:`judgments` rows) were read and scored; ``left_out``:
        the responses given no reward. Default: None (nothing to say)."""
        return None


def parts(model: RewardModel) -> Iterator[RewardModel]:
    """``model`` and every model it is made of (:class:`CompositeModel`), outermost first."""
    todo = [model]
    while todo:
        m = todo.pop(0)
        yield m
        if isinstance(m, CompositeModel):
            todo += list(m.children())


def close_parts(model: RewardModel) -> None:
    """:meth:`RewardModel.close` on ``model`` and every model it is made of; each part is closed
    even when another's ``close`` raises (the first error is raised after all are tried)."""
    first: BaseException | None = None
    for part in parts(model):
        try:
            part.close()
        except Exception as exc:  # noqa: BLE001 - closing the others first
            first = first or exc
    if first is not None:
        raise first


def tokenized_parts(model: RewardModel) -> list[TokenizedModel]:
    """The parts of ``model`` that tokenise, outermost first."""
    return [m for m in parts(model) if isinstance(m, TokenizedModel)]


def use_prompt_reuse(model: RewardModel, on: bool) -> None:
    """Turn the prompt KV reuse of ``model`` and its parts on or off (the engine, per scoring
    call: rewards are the same either way, to float rounding; only the speed differs)."""
    for part in tokenized_parts(model):
        part.prompt_reuse = on


def _jsonable(value: Any) -> Any:
    """A JSON form of constructor arguments: numbers as floats (``beta: 1`` from a YAML file is
    ``beta=1.0`` in code), tuples as lists, other objects by type and repr."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, RewardModel):
        return value.identity()
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return {"type": f"{type(value).__module__}.{type(value).__qualname__}", "repr": repr(value)}


def _text_length(prompt: Prompt) -> int:
    return len(prompt) if isinstance(prompt, str) else sum(len(m.content) for m in prompt)
