"""A judge protocol's settings: its record, sampling and reading, each argument checked once.

:class:`ProtocolSettings` holds what ``--model-arg`` chose (the mode and prompt resolved to a
:class:`~rmbench.models.judge.judge_protocol.JudgeProtocol`, a registered one or a template
file's; ``max_tokens``, temperature, ``n``, seed; the reading of a reply's value ``score``, of an
answer with no verdict ``unparsed`` and of a cut-off or reasoning reply ``fidelity``), with the
official client's sampling filled in where fidelity is ``official``, and says what the run records
of them (:meth:`ProtocolSettings.identity`, :meth:`ProtocolSettings.reading`,
:meth:`ProtocolSettings.no_verdict_scored`). :class:`~rmbench.models.judge.protocol.Protocol`
adds the calls it makes and the values its replies give.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from rmbench.errors import ConfigError
from rmbench.models.judge.judge_protocol import (
    DEFAULT_PROTOCOL,
    MODES,
    JudgeProtocol,
    infer_mode,
    is_registered,
    judge_protocol,
    protocol_source,
)
from rmbench.models.judge.one_game import seeded_hash
from rmbench.models.judge.template import read_template
from rmbench.registry import PluginSource

FIDELITIES = ("official", "strict")
SCORES = {"rating": ("rating", "expected"), "pairwise": ("rating",), "fourway": ("rating",),
          "steps": ("probability", "verdict"), "critic": ("verdict",)}
"""Each mode's readings of a reply's value (``--model-arg score``), its default first: ``expected``
(the expected grade) and ``probability`` (P(+) of a step) read ``top_logprobs``."""
LOGPROB_SCORES = ("expected", "probability")
UNPARSED = ("official", "skip")
"""``official``: an answer with no verdict scored as the official client scores it; ``skip``: left
out. ``rewardbench`` (the older name) reads as ``official``."""


@dataclass(frozen=True)
class ProtocolSettings:
    """A judge protocol (a registered one or a template file's) with its sampling and reading: the
    arguments, checked once (:meth:`make`), and what the run records of them."""

    spec: JudgeProtocol
    max_tokens: int
    temperature: float | None
    n: int
    seed: int | None
    score: str
    unparsed: str
    fidelity: str
    top_p: float | None = None
    n_key: int | None = None
    extra: tuple[tuple[str, Any], ...] = ()
    """Other body keys the official client sends (fidelity official)."""
    plugin: PluginSource | None = None
    """The installed distribution whose entry point registered the protocol (None: built in, a file)."""

    @classmethod
    def make(cls, mode: str | None, prompt: str | None, max_tokens: int | None, temperature: float | None,
             n: int | None, seed: int | None, score: str | None, unparsed: str | None,
             fidelity: str | None = None) -> Self:
        """``mode`` None: the mode whose registry names ``prompt`` (:func:`infer_mode`);
        ``temperature`` None: the official client's (fidelity official), else 0; ``n`` None: the
        protocol's K samples (one-game pairwise), else 1."""
        mode = infer_mode(mode, prompt)
        if mode not in MODES:
            raise ConfigError(f"judge mode must be one of {', '.join(MODES)}, got {mode!r}")
        spec = resolve(mode, prompt or DEFAULT_PROTOCOL[mode])
        official = spec.official
        fidelity = _fidelity(fidelity, official is not None, spec)
        score = _score(mode, score, spec)
        if score == "expected" and spec.expected is None:
            raise ConfigError(f"judge score=expected: the {mode} protocol {spec.name!r} does not read a rating's "
                              f"top_logprobs (rewardbench2's ratings do); use score=rating")
        unparsed = "official" if unparsed == "rewardbench" else unparsed
        if unparsed is None:
            unparsed = "official" if fidelity == "official" else "skip"
        if unparsed not in UNPARSED:
            raise ConfigError(f"judge unparsed must be 'official' (score an answer with no verdict as the official "
                              f"client does; 'rewardbench' is the older name) or 'skip' (leave the response out), "
                              f"got {unparsed!r}")
        if n is None:
            n = spec.samples
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or (n > 1 and mode != "rating"
                                                                       and not spec.single_game):
            raise ConfigError(f"judge n (ratings averaged; a one-game pairwise protocol's samples per item) must be "
                              f"a positive integer, and 1 for the other protocols; got {n!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigError(f"judge seed must be an integer, got {seed!r}")
        if seed is None and n > 1 and not spec.single_game:
            seed = 0  # n ratings of one prompt are told apart by their seeds: seed .. seed+n-1
        official_sampling = official is not None and fidelity == "official"
        if temperature is None:
            temperature = official.temperature if official is not None and official_sampling else 0.0
        if seed is None and official is not None and fidelity == "official":
            seed = official.seed  # ProcessBench's critic samples with seed 42; the others send none
        if max_tokens is None:
            max_tokens = spec.default_max_tokens
        top_p = official.top_p if official and fidelity == "official" else None
        n_key = official.n if official and fidelity == "official" else None
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(temperature, int | float)):
            raise ConfigError(f"judge temperature must be a number, got {temperature!r}")
        extra = official.extra if official is not None and official_sampling else ()
        return cls(spec, int(max_tokens), None if temperature is None else float(temperature), n, seed, score,
                   unparsed, fidelity, top_p, n_key, extra, protocol_source(spec))

    @property
    def mode(self) -> str:
        return self.spec.mode

    @property
    def prompt(self) -> str:
        """The protocol's name (a template file's path as given)."""
        return self.spec.name

    @property
    def template(self) -> str | None:
        """A template file's text, else None."""
        return self.spec.template

    @property
    def order_seed(self) -> int:
        """The seed of the pair order and the best-of-4 slots (0 when no seed is given)."""
        return self.seed if self.seed is not None else 0

    def identity(self) -> dict[str, Any]:
        """The prompt's text (a named protocol by name and its module's text hash), the sampling
        and the reading (``fidelity``)."""
        out = {"mode": self.mode, "prompt": self.prompt if self.template is None else {"template": self.template},
               "prompt_sha256": self.text_sha256,
               "max_tokens": self.max_tokens, "temperature": self.temperature, "n": self.n, "seed": self.seed,
               "score": self.score, "unparsed": self.unparsed, "fidelity": self.fidelity}
        if self.top_p is not None:
            out["top_p"] = self.top_p
        if self.extra:
            out["extra"] = dict(self.extra)
        if self.plugin is not None:
            out["plugin"] = self.plugin.to_json()
        return out

    @functools.cached_property
    def text_sha256(self) -> str:
        """sha256 of the protocol's text (a template's, or a named protocol's prompts), computed once."""
        return seeded_hash(self.spec.text)

    @property
    def official_client(self) -> str | None:
        """The official client this protocol reproduces (fidelity official), else None."""
        official = self.spec.official
        return official.client if official is not None and self.fidelity == "official" else None

    def reading(self) -> str:
        """How a cut-off reply and a ``<think>`` block are read, in words (for results.json)."""
        if self.fidelity == "official":
            return (f"as {self.official_client} reads them: the reply's content parsed whatever the finish reason, "
                    f"<think> text included")
        return "strictly: a reply cut off by max_tokens is no verdict; only the text after the last </think> is read"

    def no_verdict_scored(self) -> str:
        """How an answer with no verdict is scored, in words (for results.json)."""
        if self.unparsed == "skip":
            return "left out of the pairs and the official scores"
        if self.mode == "rating":
            return "rated -1, as RewardBench 2's client does"
        if self.mode == "fourway":
            return "no winner (every value 0; RewardBench 2's 0.25 for the row), as RewardBench 2's client does"
        if self.mode == "steps":
            return "never: a reply not starting with '+' is '-', as ProcessBench's RLHFlow script reads it"
        if self.mode == "critic":
            return ("every step's score NaN (no step named): left out and counted, as an unparsed judge answer; "
                    "ProcessBench counts such an answer wrong whatever the label")
        if self.spec.single_game:
            return ("counted among the K answers, neither response picked (no majority: a reward tie, no verdict), as "
                    f"{self.official_client or 'the official scoring'} counts it")
        return "no decision for the game (a pair with none is not correct), as JudgeBench does"


def _score(mode: str, score: str | None, spec: JudgeProtocol) -> str:
    """The reading of a reply's value: :data:`SCORES` lists each mode's, its default first."""
    allowed = SCORES[mode]
    score = allowed[0] if score is None else score
    if score not in allowed:
        raise ConfigError(f"judge score must be {' or '.join(repr(s) for s in allowed)} in mode {mode}, got {score!r}")
    if score == "probability" and spec.probability is None:
        raise ConfigError(f"judge score=probability: the steps protocol {spec.name!r} does not read a reply's "
                          f"top_logprobs; use score=verdict")
    return score


def resolve(mode: str, prompt: str) -> JudgeProtocol:
    """The registered ``mode`` protocol named ``prompt``, else the template file at that path."""
    if is_registered(mode, prompt) or not Path(prompt).is_file():
        return judge_protocol(mode, prompt)  # an unknown name that is no file: one line naming the mode's
    return read_template(prompt, mode)


def _fidelity(fidelity: str | None, has_official: bool, spec: JudgeProtocol) -> str:
    """The reading: ``official`` by default for a protocol with an official client, ``strict`` for
    any other (a template file, a protocol with no official client to follow)."""
    if fidelity is None:
        return "official" if has_official else "strict"
    if fidelity not in FIDELITIES:
        raise ConfigError(f"judge fidelity must be 'official' (read and score replies as the official client does) "
                          f"or 'strict' (a cut-off reply or a label inside <think> is never a verdict), got "
                          f"{fidelity!r}")
    if fidelity == "official" and not has_official:
        what = "a template file" if spec.template is not None else f"the {spec.mode} protocol {spec.name!r}"
        raise ConfigError(f"judge fidelity=official: the prompt {spec.name!r} is {what}, which has no official "
                          f"client to follow; leave fidelity out (it is read strictly)")
    return fidelity
