"""A judge protocol as data: what an LLM judge is asked and how its reply is read, one record each.

A :class:`JudgeProtocol` is a name and a mode (``rating``, ``pairwise``, ``fourway``; ``steps`` and
``critic``, which score each step of a solution: :mod:`rmbench.models.judge.step_judge`), a messages
builder, a reply parser, the rating scale (mode rating), the official client it reproduces if
any (:class:`Official`: its ``max_tokens``, ``top_p`` and ``n``) and the text hashed into the
judge's identity. :class:`~rmbench.models.judge.protocol.Protocol` asks its record for everything
that differs between protocols; it holds no protocol name. The built-in records (RewardBench 2's
ratings, its Ties ratings and its best-of-4; JudgeBench's ``arena_hard`` and ``vanilla``) live in
:mod:`rmbench.models.judge.builtin_protocols`; a template file (``--model-arg prompt=FILE``)
becomes one through :mod:`rmbench.models.judge.template`.

The registry's keys are ``MODE/NAME`` (``rating/rewardbench2``, ``fourway/rewardbench2``,
``pairwise/arena_hard``): ``--model-arg mode=MODE --model-arg prompt=NAME`` picks one. A package
adds a protocol through the ``rmbench.judge_protocols`` entry-point group, loaded on first use:
the entry point, named ``MODE/NAME``, names a :class:`JudgeProtocol` (``my_pkg.judge:PROMETHEUS``);
in one process, :func:`register_judge_protocol` does the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rmbench.errors import ConfigError, did_you_mean
from rmbench.registry import PluginSource, Registry, RegistryError

ENTRY_POINT_GROUP = "rmbench.judge_protocols"
MODES = ("rating", "pairwise", "fourway", "steps", "critic")
ORDERS = ("both", "file", "random")
"""How a pairwise protocol shows a pair (:attr:`JudgeProtocol.order`): ``both``, two games, one
per order (JudgeBench's); ``file``, one game in the group's own order (Multimodal RewardBench's);
``random``, one game per sample in an order drawn for it (VL-RewardBench's)."""
STEP_MODES = ("steps", "critic")
"""The modes that score each step of a solution (a judge in them is a process reward model)."""
DEFAULT_PROTOCOL = {"rating": "rewardbench2", "pairwise": "vanilla", "fourway": "rewardbench2", "steps": "rlhflow",
                    "critic": "processbench"}
"""The protocol a mode uses when no ``prompt`` is given."""
DEFAULT_MAX_TOKENS = {"rating": 1024, "pairwise": 2048, "fourway": 2048, "steps": 1, "critic": 8192}
"""``max_tokens`` for a protocol that names neither an official client nor its own."""

Messages = tuple[tuple[str, str], ...]
TopLogprobs = Sequence[Sequence[tuple[str, float]]]


@dataclass(frozen=True)
class Official:
    """What an official client sends for one protocol (besides the messages): its temperature (0
    unless it says), and no seed unless it names one (ProcessBench's critic samples with ``seed=42``)."""

    client: str
    """The official client's name (the benchmark's script or package)."""
    max_tokens: int
    """The ``max_tokens`` it asks for."""
    top_p: float | None = None
    """Its ``top_p``; None: not sent."""
    n: int | None = None
    """Its ``n`` (completions per request); None: not sent."""
    seed: int | None = None
    """Its ``seed``; None: not sent."""
    temperature: float | None = 0.0
    """Its ``temperature``; None: not sent (the server's default)."""
    extra: tuple[tuple[str, Any], ...] = ()
    """Other body keys it sends, as (key, value) pairs (VL-RewardBench's ``("stream", False)``)."""


@dataclass(frozen=True)
class JudgeProtocol:
    """One judge protocol: how a request becomes messages and a reply a verdict.

    ``messages(question, answers, subset)``: the chat messages (role, content) for ``answers`` in
    the order shown (one for rating; A, B for pairwise; slots A-D for fourway; the steps of a
    solution up to the one asked about for steps; all its steps for critic; the question is then
    the problem); ``subset`` is the
    row's subset (RewardBench 2 asks its Ties rows with their own prompt). ``parse(text)``: the
    verdict in a reply's text, or None: a number (rating; one outside ``scale`` is no verdict), a
    label ``"A>B"``, ``"B>A"`` or ``"A=B"`` (pairwise; a pair's two games combine by JudgeBench's
    vote), a slot ``"A"``..``"D"`` (fourway), the last step's P(correct), 1.0 or 0.0 (steps), or
    the index of the earliest wrong step, -1 for none (critic). ``text``: the protocol's prompt
    text, whose sha256 is in the judge's identity and every judgment (``protocol_sha256``).
    """

    name: str
    """The protocol's name, unique within its mode (``vanilla``)."""
    mode: str
    """How a judge answers: ``rating``, ``pairwise``, ``fourway``, ``steps`` or ``critic``."""
    messages: Callable[[str, Sequence[str], str | None], Messages]
    parse: Callable[[str], Any]
    text: str
    description: str = ""
    """One line for ``rmbench models list``."""
    scale: tuple[float, float] | None = None
    """Mode rating: the lowest and highest grade; a parsed grade outside is no verdict."""
    official: Official | None = None
    """The official client this protocol reproduces under ``fidelity=official`` (None: read strictly)."""
    max_tokens: int | None = None
    """The default ``max_tokens`` when there is no official client (else :data:`DEFAULT_MAX_TOKENS`)."""
    follow_up: Callable[[Messages, str, str], Messages | None] | None = None
    """``(messages sent, the reply's text as read, the reply's text) -> the messages to send next``,
    or None to stop (JudgeBench's arena_hard asks once more when a reply has no label)."""
    expected: Callable[[TopLogprobs], float | None] | None = None
    """``score=expected``: the expected grade from a reply's ``top_logprobs`` (None: not offered)."""
    template: str | None = None
    """A template file's whole text (the identity shows it in place of the name)."""
    probability: Callable[[TopLogprobs], float | None] | None = None
    """Mode steps, ``score=probability``: the step's P(correct) from a reply's ``top_logprobs`` (None: not there)."""
    order: str = "both"
    """Mode pairwise: how the pair is shown (:data:`ORDERS`). ``both``: two games whose labels
    ``"A>B"``/``"B>A"``/``"A=B"`` combine by JudgeBench's vote; ``file`` or ``random``: ONE game
    (per sample), whose ``parse`` gives the answer shown first ``"A"``, the second ``"B"``, or None."""
    samples: int = 1
    """Mode pairwise, one game: how many times it is asked (K, the ``n`` model argument's default);
    a response wins when more than half of the K answers pick it (VL-RewardBench's majority)."""
    image_mime: str | None = None
    """How the prompt's images are labelled (:attr:`~rmbench.models.judge.wire.ChatRequest.image_mime`):
    None, the type sniffed from the bytes; ``"from-name"``, from the file name; else that type."""

    def __post_init__(self) -> None:
        """A malformed record fails where it is built (a plugin: as it loads), naming the protocol."""
        where = f"judge protocol {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"{where}: the name must be a non-empty string")
        if self.mode not in MODES:
            raise ValueError(f"{where}: mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not callable(self.messages) or not callable(self.parse) or not isinstance(self.text, str):
            raise ValueError(f"{where}: messages and parse must be functions and text a string")
        if self.scale is not None and (self.mode != "rating" or len(self.scale) != 2
                                       or not float(self.scale[0]) < float(self.scale[1])):
            raise ValueError(f"{where}: scale is (lowest, highest) grade, lowest < highest, in mode rating only; "
                             f"got {self.scale!r} in mode {self.mode!r}")
        if self.expected is not None and self.mode != "rating":
            raise ValueError(f"{where}: expected (score=expected) is for mode rating")
        if self.probability is not None and self.mode != "steps":
            raise ValueError(f"{where}: probability (score=probability) is for mode steps")
        if self.order not in ORDERS or (self.order != "both" and self.mode != "pairwise"):
            raise ValueError(f"{where}: order must be one of {', '.join(ORDERS)}, and other than 'both' in mode "
                             f"pairwise only; got {self.order!r} in mode {self.mode!r}")
        if (isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1
                or (self.samples > 1 and self.order == "both")):
            raise ValueError(f"{where}: samples (K answers per item) is a positive integer, over 1 only for a "
                             f"one-game pairwise protocol (order file or random); got {self.samples!r}")

    @property
    def single_game(self) -> bool:
        """Whether a pair is asked as one game (per sample), not two (:attr:`order`)."""
        return self.order != "both"

    @property
    def key(self) -> str:
        """``MODE/NAME``, the registry's key (:func:`protocol_key`)."""
        return protocol_key(self.mode, self.name)

    @property
    def default_max_tokens(self) -> int:
        """The official client's ``max_tokens``, else the protocol's own, else the mode's default."""
        if self.official is not None:
            return self.official.max_tokens
        return self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS[self.mode]


def protocol_key(mode: str, name: str) -> str:
    """The registry key of protocol ``name`` in ``mode``: ``MODE/NAME``."""
    return f"{mode}/{name}"


PROTOCOLS: Registry[JudgeProtocol] = Registry("judge protocol", entry_point_group=ENTRY_POINT_GROUP,
                                               kind=JudgeProtocol, key=lambda p: p.key)


def register_judge_protocol(key: str | JudgeProtocol, protocol: JudgeProtocol | str | None = None, *,
                            description: str = "") -> None:
    """Register ``protocol`` under its key ``MODE/NAME`` in this process (a :class:`JudgeProtocol`,
    or a lazy ``"module:attr"`` naming one; a key already registered is a RegistryError); an
    installed package uses the ``rmbench.judge_protocols`` entry points instead.
    ``register_judge_protocol(protocol)``, the older form, takes the key from the protocol."""
    key, protocol = PROTOCOLS.named(key, protocol, "register_judge_protocol")
    if isinstance(protocol, JudgeProtocol) and ("/" in protocol.name or protocol.template is not None):
        raise RegistryError(f"judge protocol {protocol.name!r}: a registered name has no '/' (its key is MODE/NAME) "
                            f"and a template file is not registered (it is given as prompt=FILE)")
    PROTOCOLS.register(key, protocol, origin=f"register_judge_protocol({key!r})",
                       description=description or (protocol.description if isinstance(protocol, JudgeProtocol) else ""))


def protocol_names(mode: str) -> list[str]:
    """The names of the protocols registered for ``mode``."""
    prefix = f"{mode}/"
    return [key[len(prefix):] for key in PROTOCOLS.names() if key.startswith(prefix)]


def protocol_source(protocol: JudgeProtocol) -> PluginSource | None:
    """The installed distribution whose entry point registered ``protocol`` (None: built in, registered
    in code, or a template file)."""
    if protocol.template is not None or protocol.key not in PROTOCOLS:
        return None
    return PROTOCOLS.source(protocol.key)


def is_registered(mode: str, name: str) -> bool:
    return protocol_key(mode, name) in PROTOCOLS


def judge_protocol(mode: str, name: str) -> JudgeProtocol:
    """The registered protocol ``name`` of ``mode``; an unknown one is one line listing the mode's."""
    key = protocol_key(mode, name)
    if key not in PROTOCOLS:
        names = protocol_names(mode)
        raise ConfigError(f"judge prompt {name!r} is neither a named {mode} protocol ({', '.join(names)}) nor a "
                          f"file{did_you_mean(name, names)}")
    return PROTOCOLS.get(key)  # one that is not a JudgeProtocol of its key: a RegistryError naming its origin


def infer_mode(mode: str | None, prompt: str | None) -> str:
    """The judge's mode: ``mode`` when given; else the one mode whose registry holds a protocol
    named ``prompt`` (``prompt=vl_rewardbench`` is pairwise), else ``rating``."""
    if mode is not None:
        return mode
    if prompt is not None:
        modes = [m for m in MODES if is_registered(m, prompt)]
        if len(modes) == 1:
            return modes[0]
    return "rating"


def listing() -> list[tuple[str, str, str]]:
    """Every registered protocol as ``(MODE/NAME, description, origin)``, for ``rmbench models list``
    (a plugin's protocol that fails to load: ``BROKEN: its error`` as its description)."""
    return [(key, desc if broken is None else f"BROKEN: {broken}", origin) for key in PROTOCOLS.names()
            for (desc, origin), broken in [(PROTOCOLS.describe(key), PROTOCOLS.load_error(key))]]


# --- the built-in protocols: one registration each (loaded on first use) ---------------------------

_BUILTIN = "rmbench.models.judge.builtin_protocols:"

for _key, _attr, _description in (
    ("rating/rewardbench2", "RB2_RATINGS", "RewardBench 2's 1-10 rating (Ties rows: its Ties prompt); official: "
     "run_generative_v2.py --score_w_ratings"),
    ("rating/rewardbench2_ties", "RB2_TIES_RATINGS", "RewardBench 2's Ties rating prompt for every row, "
     "1-10; official: run_generative_v2.py's Ties ratings"),
    ("fourway/rewardbench2", "RB2_FOURWAY", "RewardBench 2's best-of-4, [[A]]..[[D]]; official: "
     "run_generative_v2.py"),
    ("pairwise/arena_hard", "ARENA_HARD", "JudgeBench's arena_hard, [[A>>B]]..[[B>>A]], asked once more without a "
     "label; official: run_judge.py"),
    ("pairwise/vanilla", "VANILLA", "JudgeBench's vanilla, Output (a) / Output (b); official: run_judge.py"),
    ("steps/rlhflow", "STEPS_RLHFLOW", "a chat PRM answering +/- after each step (RLHFlow's); official: ProcessBench "
     "run_eval_prm_rlhflow.py"),
    ("critic/processbench", "CRITIC_PROCESSBENCH", "ProcessBench's critique template, the earliest wrong paragraph "
     "in \\boxed{}; official: ProcessBench run_eval.py"),
    ("pairwise/vl_rewardbench", "VL_REWARDBENCH", "VL-RewardBench's prompt with the image, one game per sample in a "
     "drawn order, K=10 samples, majority; official: inference_hf.py"),
    ("pairwise/mm_rewardbench", "MM_REWARDBENCH", "Multimodal RewardBench's MT-Bench-style prompt with the image, one "
     "game in file order, [[A]]/[[B]]; official: 1_run_model_as_judge_gpt4o.py"),
):
    PROTOCOLS.register(_key, _BUILTIN + _attr, description=_description, origin="built-in")
