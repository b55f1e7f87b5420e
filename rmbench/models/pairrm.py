"""``pairrm:CHECKPOINT``: a pairwise preference model (LLM-Blender's PairRM and kin), which reads
the prompt and two responses at once and gives a preference logit.

The checkpoint is LLM-Blender's transformers layout, ``DebertaV2PairRM`` (as
``llm-blender/PairRM-hf`` and ``mightbe/Better-PairRM``): a DeBERTa-v2 ``config.json`` with the
ids of its three prefix tokens (``source_prefix_id``, ``cand1_prefix_id``, ``cand2_prefix_id``)
and ``n_tasks``, weights ``pretrained_model.*`` (the encoder) and ``head_layer.*`` (dropout,
linear 2h -> h, tanh, dropout, linear h -> ``n_tasks``), and a tokenizer holding ``<|source|>``,
``<|candidate1|>`` and ``<|candidate2|>`` at those ids. Anything else is refused in one line when
the model is built, before any weights load (a single-response reward model: ``seqcls:``;
LLM-Blender's own ranker folder, ``llm-blender/PairRM``: its transformers twin ``-hf``).

Model arguments: ``format`` (``conversation``, the default, or ``plain``), ``score`` (``logit``,
the default, or ``verdict``), ``source_max_length`` (1224) and ``candidate_max_length`` (412).
What it reads and how the logits combine: :mod:`rmbench.models.pairrm_inputs`. In short, every
response of a group is compared with every other in both orders, and its reward is LLM-Blender's
ranking score ``r_i = (1/n) sum_{j != i} [L(i, j) - L(j, i)]``; on a pair, ``r_a - r_b`` is the
comparison logit LLM-Blender's ``compare`` returns (``> 0``: ``a`` preferred). A group of ``n``
responses costs ``n (n - 1)`` model inputs (RewardBench 2's best-of-4: 12), each ordered pair run
once per batch however many of the batch's requests need it, in passes of at most
:data:`PASS_TOKENS` padded tokens.

A :class:`~rmbench.models.base.GroupContextModel` (a response's reward depends on the others of
its group: the score cache keys them) and a :class:`~rmbench.models.base.PairVerdictModel`: a pair's
reward gap is its decision having read both orders, so JudgeBench scores it by both games
(``single_game: false``: an exact tie is wrong, never "B>A"). Its truncation is LLM-Blender's
(``source_max_length``, ``candidate_max_length``), so ``--max-length`` is refused.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.choices import choice
from rmbench.errors import ConfigError, ModelError
from rmbench.models.base import GroupContextModel, PairVerdictModel, Runtime, ScoreRequest, Truncation
from rmbench.models.hf.base import HFWeights
from rmbench.models.hf.loading import load_tokenizer, load_weights
from rmbench.models.pairrm_inputs import (
    CANDIDATE_MAX_LENGTH,
    CONFIG_IDS,
    FORMATS,
    PREFIXES,
    SCORES,
    SOURCE_MAX_LENGTH,
    PairIds,
    combine,
    comparison_texts,
    pair_ids,
)

PASS_TOKENS = 16_384
"""Padded tokens per forward pass at most (one input always runs, whatever its length)."""

LAYOUT = ("LLM-Blender's DebertaV2PairRM layout (a DeBERTa-v2 config.json with source_prefix_id, cand1_prefix_id, "
          "cand2_prefix_id and n_tasks, as llm-blender/PairRM-hf)")


@functools.cache
def checkpoint_class():
    """The torch module of the checkpoint layout (module docstring), built on first use so that
    importing this module imports no torch. Its ``forward`` gives ``L(i, j)`` per row."""
    import torch
    from torch import nn
    from transformers import DebertaV2Model
    from transformers.models.deberta_v2.modeling_deberta_v2 import DebertaV2PreTrainedModel

    class PairRMCheckpoint(DebertaV2PreTrainedModel):
        """An encoder and a head read at the prefix tokens; parameter names as the checkpoints'."""

        def __init__(self, config) -> None:
            super().__init__(config)
            self.pretrained_model = DebertaV2Model(config)
            width, rate = config.hidden_size, getattr(config, "drop_out", 0.0)
            self.head_layer = nn.Sequential(nn.Dropout(rate), nn.Linear(2 * width, width), nn.Tanh(),
                                            nn.Dropout(rate), nn.Linear(width, config.n_tasks))
            self.post_init()

        def forward(self, input_ids, attention_mask, positions):
            """``positions``: (rows, 3) of the source, first and second prefix tokens."""
            hidden = self.pretrained_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            rows = torch.arange(len(input_ids), device=input_ids.device)
            source, first, second = (hidden[rows, positions[:, k]] for k in range(3))
            left = self.head_layer(torch.cat([source, first], dim=-1))
            right = self.head_layer(torch.cat([source, second], dim=-1))
            return (left - right).mean(dim=-1)

    return PairRMCheckpoint


def check_layout(model: str, config: Any) -> tuple[int, int, int]:
    """The prefix ids ``config`` names, or a ConfigError of one line saying why ``model`` is not
    a PairRM checkpoint (and which adapter fits it)."""
    architectures = ", ".join(getattr(config, "architectures", None) or []) or "none recorded"
    model_type = getattr(config, "model_type", None)
    missing = [name for name in (*CONFIG_IDS, "n_tasks") if not isinstance(getattr(config, name, None), int)]
    if model_type == "deberta-v2" and not missing:
        return tuple(int(getattr(config, name)) for name in CONFIG_IDS)  # type: ignore[return-value]
    hint = (f"; a reward model that scores one response at a time: seqcls:{model}"
            if architectures.endswith("ForSequenceClassification") else "")
    why = (f"its config.json has no {', '.join(missing)}" if model_type == "deberta-v2"
           else f"its config.json says model_type {model_type!r}")
    raise ConfigError(f"model {model!r} is not a PairRM checkpoint: pairrm reads {LAYOUT}, and {why} "
                      f"(architectures: {architectures}){hint}")


def check_not_ranker_folder(model: str, location: str) -> None:
    """Refuse LLM-Blender's own ranker folder (its config.json a RankerConfig) in one line."""
    path = Path(location) / "config.json"
    try:
        raw = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if isinstance(raw, dict) and "ranker_type" in raw:
        raise ConfigError(f"model {model!r} is LLM-Blender's own ranker folder (config.json with ranker_type "
                          f"{raw.get('ranker_type')!r}); pairrm reads {LAYOUT}: use the transformers twin of the same "
                          f"weights (llm-blender/PairRM-hf for llm-blender/PairRM)")


class PairRM(HFWeights, GroupContextModel, PairVerdictModel):
    """``pairrm:MODEL`` (module docstring)."""

    kind = "pairrm"

    def __init__(self, model: str, format: str = "conversation", score: str = "logit",
                 source_max_length: int = SOURCE_MAX_LENGTH, candidate_max_length: int = CANDIDATE_MAX_LENGTH,
                 runtime: Runtime | None = None, revision: str | None = None,
                 truncation: Truncation | None = None) -> None:
        if truncation is not None and truncation.max_length is not None:
            raise ConfigError(f"--max-length does not apply to pairrm:{model}: it truncates as LLM-Blender does, "
                              f"the prompt to source_max_length and each response to candidate_max_length tokens "
                              f"(--model-arg source_max_length=N, candidate_max_length=M)")
        super().__init__(model, runtime, revision, "plain")
        self.format = choice(format, FORMATS, "--model-arg format")
        self.score_mode = choice(score, SCORES, "--model-arg score")
        for name, value in (("source_max_length", source_max_length), ("candidate_max_length", candidate_max_length)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 3:
                raise ConfigError(f"--model-arg {name} must be an integer of at least 3 (the special tokens and the "
                                  f"prefix), got {value!r}")
        self.source_max, self.candidate_max = source_max_length, candidate_max_length
        if self.source.is_local:
            check_not_ranker_folder(model, self.source.location)
        self.prefix_ids = check_layout(model, self.loaded_config())
        self._tokenizer: Any = None
        self._encoded: dict[tuple[str, int | None], list[int]] = {}
        self.pairs_cut = 0

    # --- the tokenizer and the ids --------------------------------------------------------------
    @property
    def tokenizer(self):
        """The checkpoint's tokenizer as saved (its own truncation side), its prefix tokens checked."""
        if self._tokenizer is None:
            tok = load_tokenizer(self.model_name, self.source, self.runtime)
            for prefix, expected in zip(PREFIXES, self.prefix_ids):
                got = tok.convert_tokens_to_ids(prefix)
                if got != expected:
                    raise ConfigError(f"model {self.model_name!r}: its tokenizer maps {prefix} to id {got}, and its "
                                      f"config.json names id {expected}; a PairRM tokenizer holds the three prefix "
                                      f"tokens at the config's ids")
            self._tokenizer = tok
        return self._tokenizer

    def _encode(self, text: str, max_length: int | None) -> list[int]:
        key = (text, max_length)
        if key not in self._encoded:
            if max_length is None:
                self._encoded[key] = list(self.tokenizer.encode(text))
            else:
                self._encoded[key] = list(self.tokenizer.encode(text, max_length=max_length, truncation=True))
        return self._encoded[key]

    def pair_ids(self, source: str, first: str, second: str) -> PairIds:
        """The ids of one ordered pair (:func:`rmbench.models.pairrm_inputs.pair_ids`)."""
        try:
            return pair_ids(self._encode, self.prefix_ids, source, first, second, self.source_max, self.candidate_max)
        except ValueError as exc:
            raise ModelError(f"model {self.model_name!r}: {exc}") from None

    def _comparisons(self, r: ScoreRequest) -> tuple[str, list[str]]:
        """(source, candidate texts): the request's response first, then its group's others."""
        where = f"group {r.group_id!r}'s" if r.group_id else ""
        return comparison_texts(r.prompt, (r.response, *r.context), self.format, where)

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        """Tokens of every ordered pair a request needs (both orders with each other response)."""
        out = []
        for r in batch:
            source, texts = self._comparisons(r)
            out.append(1 + sum(len(self.pair_ids(source, a, b).ids) for j in range(1, len(texts))
                               for a, b in ((texts[0], texts[j]), (texts[j], texts[0]))))
        return out

    def context_limit(self) -> int | None:
        return None  # its own truncation bounds every input (module docstring)

    def head_workspace_bytes(self) -> int:
        """The head's memory whatever the batch (the CUDA batch limits ask): none to speak of."""
        return 0

    # --- weights and scores ---------------------------------------------------------------------
    def _load_weights(self):
        return load_weights(checkpoint_class(), self.model_name, self.source, self.runtime, self.dtype, self.device,
                            kind=self.kind)

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        """Each request's reward, from the logits of the ordered pairs of its group it needs
        (each distinct one run once in this batch)."""
        plans: list[tuple[int, list[tuple[int, int]]]] = []
        index: dict[tuple[str, str, str], int] = {}
        for r in batch:
            source, texts = self._comparisons(r)
            pairs = [(index.setdefault((source, texts[0], other), len(index)),
                      index.setdefault((source, other, texts[0]), len(index))) for other in texts[1:]]
            plans.append((len(texts), pairs))
        logits = self._run([self.pair_ids(*key) for key in index])
        out = np.zeros(len(batch))
        for row, (n, todo) in enumerate(plans):
            matrix = np.zeros((n, n))
            for j, (forward, backward) in enumerate(todo, 1):
                matrix[0, j], matrix[j, 0] = logits[forward], logits[backward]
            out[row] = combine(matrix, self.score_mode)[0]
        return out

    def _run(self, inputs: list[PairIds]) -> np.ndarray:
        """L of each ordered pair's ids: longest first, in right-padded passes of at most
        :data:`PASS_TOKENS` padded tokens (``--token-budget`` where set) or one input, so that one
        request of a large group (RewardBench 2's Ties) never makes one huge pass."""
        if not inputs:
            return np.zeros(0)
        self.pairs_cut += sum(x.cut for x in inputs)
        budget = self.runtime.token_budget or PASS_TOKENS
        order = sorted(range(len(inputs)), key=lambda i: (-len(inputs[i].ids), i))
        out = np.zeros(len(inputs))
        start = 0
        while start < len(order):
            width, stop = len(inputs[order[start]].ids), start + 1
            while stop < len(order) and (stop - start + 1) * width <= budget:
                stop += 1
            chunk = order[start:stop]
            out[chunk] = self._forward([inputs[i] for i in chunk])
            start = stop
        return out

    def _forward(self, inputs: list[PairIds]) -> np.ndarray:
        """L of each input in one right-padded pass."""
        import torch

        width = max(len(x.ids) for x in inputs)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(inputs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(inputs), width), dtype=torch.long)
        for i, x in enumerate(inputs):
            ids[i, :len(x.ids)] = torch.tensor(x.ids, dtype=torch.long)
            mask[i, :len(x.ids)] = 1
        positions = torch.tensor([x.positions for x in inputs], dtype=torch.long)
        with torch.inference_mode():
            values = self.model(ids.to(self.device), mask.to(self.device), positions.to(self.device))
        return values.double().cpu().numpy()

    # --- identity and description ----------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """The weights, dtype and arguments (format, score, the two limits); no ``--max-length``."""
        out = super().identity()
        out.pop("truncation", None)
        return out

    def describe(self) -> dict[str, Any]:
        out = {k: v for k, v in super().describe().items() if k not in ("template", "max_length", "truncation")}
        return {**out, "format": self.format, "score": self.score_mode, "source_max_length": self.source_max,
                "candidate_max_length": self.candidate_max}

    def ran_with(self) -> dict[str, Any]:
        """The base's, and how many ordered-pair inputs lost tokens to the limits in this process."""
        out = super().ran_with()
        return {**out, "pairs_cut": self.pairs_cut} if out else out
