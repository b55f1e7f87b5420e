"""``implicit``: the implicit reward of a language model (IM-RM, as in DPO).

    r(x, y) = beta * ( log pi(y | x) - log pi_ref(y | x) )

summed over the response tokens, the template's end-of-turn tokens included (``normalize:
mean`` averages instead, RewardBench's ``avg``). Without ``ref`` the reward is reference-free:
beta * log pi(y | x).

``convention: rewardbench`` scores as RewardBench does (``rewardbench.dpo.DPOInference``, TRL's
conventions; :mod:`rmbench.models.rewardbench_dpo` lists them): the prompt is the chat template
without a generation prompt, BOS before it and EOS after every answer, the pair's (here: the
group's) longest answer decides truncation to ``max_length`` (default 2048) with the prompt cut to
its last ``max_prompt_length`` (128) tokens, and the reference scores the policy's tokens;
``normalize`` may then also be ``norm`` (-sqrt(sum of squared log-probs), reference-free only).

The response tokens are found by character offsets in the tokenised whole text: every token
that holds any character of the response counts, so a token that spans the prompt/response
boundary belongs to the response and no continuation token is lost or split. The LM head runs
only over those positions (in chunks), not over the whole sequence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.core.types import prompt_to_json
from rmbench.errors import ConfigError
from rmbench.models.base import CompositeModel, GroupContextModel, RewardModel, Runtime, ScoreRequest, Truncation
from rmbench.models.batching import lm_head_chunk, lm_head_workspace
from rmbench.models.hf import Encoding, HFRewardModel, load_weights
from rmbench.models.hf.identity import tokenizer_identity
from rmbench.models.hf.vision import processor_identity
from rmbench.models.rewardbench_dpo import DPOTokens, rewardbench_dpo_tokens

CONVENTIONS = ("rmbench", "rewardbench")

def gather_logprobs(lm_head, hidden, input_ids, rows, cols, softcap: float | None = None, chunk: int = 256):
    """log p(token at (row, col) | tokens before it) for each (row, col), from hidden states at
    col - 1; the LM head runs over ``chunk`` positions at a time, which bounds the (positions x
    vocab) logits (:func:`rmbench.models.batching.lm_head_chunk`: 256 on a CPU, 50 MB at a 49k vocab)."""
    import torch

    out = []
    for s in range(0, len(rows), chunk):
        r, c = rows[s:s + chunk], cols[s:s + chunk]
        logits = lm_head(hidden[r, c - 1]).float()
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        out.append(torch.log_softmax(logits, dim=-1).gather(1, input_ids[r, c].unsqueeze(1)).squeeze(1))
    return torch.cat(out) if out else torch.zeros(0)


class ImplicitRM(HFRewardModel, CompositeModel):
    """Implicit RM of a causal LM, optionally against a reference LM."""

    kind = "implicit"
    description = "implicit reward beta * log(pi/pi_ref) of a causal LM (reference-free without ref)"

    @property
    def shares_prefix(self) -> bool:  # rows of one prompt share its KV cache, unless they carry images
        return self.vision is None

    def __new__(cls, *args: Any, **kwargs: Any):
        if cls is ImplicitRM and kwargs.get("convention") == "rewardbench":
            cls = RewardBenchImplicitRM  # the same constructor; Python then runs its __init__
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, model: str, ref: str | None = None, beta: float = 1.0, normalize: str = "sum",
                 runtime: Runtime | None = None, revision: str | None = None, ref_revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None, convention: str = "rmbench",
                 max_prompt_length: int = 128) -> None:
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation)
        if convention not in CONVENTIONS:
            raise ConfigError(f"convention must be 'rmbench' or 'rewardbench', got {convention!r}")
        if normalize not in (("sum", "mean", "norm") if convention == "rewardbench" else ("sum", "mean")):
            raise ConfigError(f"normalize must be 'sum' or 'mean'{' or norm' * (convention == 'rewardbench')}, "
                              f"got {normalize!r}")
        self.beta, self.normalize = float(beta), normalize
        self.reference = None
        if ref is not None:
            self.reference = ImplicitRM(ref, beta=1.0, normalize=normalize, runtime=self.runtime,
                                        revision=ref_revision, template=template, system_prompt=system_prompt,
                                        max_length=max_length, truncation=truncation, convention=convention,
                                        max_prompt_length=max_prompt_length)
        self._same_tokenizer: bool | None = None

    def _load_weights(self):
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        auto = AutoModelForCausalLM if self.vision is None else AutoModelForImageTextToText
        return load_weights(auto, self.model_name, self.source, self.runtime, self.dtype, self.device,
                            kind=self.kind)

    def children(self) -> list[RewardModel]:
        return [self.reference] if self.reference is not None else []

    @property
    def backbone(self):
        return self.model.base_model

    def check_images(self, groups) -> None:
        super().check_images(groups)
        if self.reference is not None:  # a text-only reference would score the text alone
            self.reference.check_images(groups)

    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding:
        enc = self.vision.encode(batch) if self.vision is not None else self.front.encode_responses(batch, share=True)
        assert enc.positions is not None  # encode_responses marks the response tokens
        # The very first token of a sequence has no prediction; it can only be a response token
        # when the prompt renders to nothing, which a template never does. Rows of one prompt
        # share everything before the token that predicts their first response token.
        positions = tuple(tuple(j for j in p if j > 0) for p in enc.positions)
        for i, p in enumerate(positions):
            if not p:
                raise ConfigError(f"group {batch[i].group_id!r}, response {batch[i].index}: the response has no "
                                  f"tokens after truncation (max_length={self.max_length})")
        return dataclasses.replace(enc, positions=positions)

    def _head(self, enc: Encoding, hidden) -> np.ndarray:
        import torch

        positions = enc.positions
        assert positions is not None  # both _encode methods mark the response tokens
        rows = [i for i, p in enumerate(positions) for _ in p]
        cols = [j for p in positions for j in p]
        softcap = getattr(self.model.config.get_text_config(), "final_logit_softcapping", None)
        lp = gather_logprobs(self.model.get_output_embeddings(), hidden, enc.input_ids.to(hidden.device),
                             torch.tensor(rows, device=hidden.device), torch.tensor(cols, device=hidden.device),
                             softcap, lm_head_chunk(self._vocab(), self.device.startswith("cuda")))
        n_tokens = np.array([len(p) for p in positions], dtype=np.float64)
        lp = lp.double().cpu().numpy()
        if self.normalize == "norm":
            return -np.sqrt(np.bincount(rows, weights=lp * lp, minlength=len(positions)))
        sums = np.bincount(rows, weights=lp, minlength=len(positions))
        return sums / n_tokens if self.normalize == "mean" else sums

    def _vocab(self) -> int:
        return int(self.model.get_output_embeddings().weight.shape[0])

    def head_workspace_bytes(self) -> int:
        return lm_head_workspace(self._vocab(), self.model.dtype.itemsize, self.device.startswith("cuda"))

    def _finish(self, batch, enc: Encoding, values: np.ndarray) -> np.ndarray:
        if self.reference is not None:
            ref = (self.reference.score_encoded(batch, enc) if self._encodes_like_reference()
                   else self.reference.score(batch))
            values = values - (ref[:, None] if values.ndim == 2 else ref)
        return self.beta * values

    def _encodes_like_reference(self) -> bool:
        """True when the reference would encode a batch exactly as this model does (same
        tokenizer, rendering and truncation), so it can score this model's encoding as is."""
        r = self.reference
        assert r is not None  # asked only of a model with a reference (_finish)
        if (self.vision is None) != (r.vision is None):
            return False
        if self._same_tokenizer is None:
            if self.vision is not None and r.vision is not None:  # the same processor makes the same inputs
                self._same_tokenizer = processor_identity(self.vision.processor) == processor_identity(
                    r.vision.processor)
            else:
                self._same_tokenizer = tokenizer_identity(self.tokenizer) == tokenizer_identity(r.tokenizer)
        return (self._same_tokenizer and r.formatter.chat == self.formatter.chat
                and r.formatter.system_prompt == self.formatter.system_prompt and r.truncation == self.truncation)

    def identity(self) -> dict[str, Any]:
        out = super().identity()
        args = {k: v for k, v in out["args"].items() if k not in ("ref", "ref_revision")}
        if args.get("convention") == "rmbench":  # the identity of every implicit RM before conventions
            args = {k: v for k, v in args.items() if k not in ("convention", "max_prompt_length")}
        return {**out, "args": args, "reference": None if self.reference is None else self.reference.identity()}


class RewardBenchImplicitRM(ImplicitRM, GroupContextModel):
    """``implicit`` with ``convention: rewardbench``: RewardBench's DPO tokens and reward (see the
    module docstring). A response's truncation depends on its group's longest answer, so it is a
    :class:`GroupContextModel`: its requests carry the group's other responses."""

    DEFAULT_MAX_LENGTH = 2048

    def __init__(self, model: str, ref: str | None = None, beta: float = 1.0, normalize: str = "sum",
                 runtime: Runtime | None = None, revision: str | None = None, ref_revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None, convention: str = "rewardbench",
                 max_prompt_length: int = 128) -> None:
        if template == "plain" or system_prompt is not None:
            raise ConfigError("convention=rewardbench renders prompts with the tokenizer's chat template as "
                              "RewardBench does: template plain and system_prompt do not apply")
        if ref is not None and normalize != "sum":
            raise ConfigError("convention=rewardbench with a reference: RewardBench subtracts summed "
                              "log-probabilities (its ref_free_norm applies only without one); got "
                              f"normalize={normalize!r}")
        max_length = max_length if max_length is not None else self.DEFAULT_MAX_LENGTH
        super().__init__(model, ref, beta, normalize, runtime, revision, ref_revision, template, system_prompt,
                         max_length, truncation, convention, max_prompt_length)
        self.max_prompt_length = int(max_prompt_length)
        self._tokens: dict[str, DPOTokens] = {}

    def check_image_settings(self) -> None:
        raise ConfigError(f"model {self.model_name!r} reads images, but convention=rewardbench builds RewardBench's "
                          f"text-only DPO tokens: score it with the default convention")

    def _dpo_tokens(self, request: ScoreRequest) -> DPOTokens:
        key = request.key()
        if key not in self._tokens:
            # never None: __init__ gives max_length a default, and a policy can only replace it with a number
            assert self.truncation.max_length is not None
            try:
                self._tokens[key] = rewardbench_dpo_tokens(
                    self.tokenizer, prompt_to_json(request.prompt), [request.response, *request.context],
                    self.truncation.max_length, self.max_prompt_length)[0]
            except ValueError as exc:
                raise ConfigError(f"convention=rewardbench: group {request.group_id!r}: {exc}") from None
        return self._tokens[key]

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        return [len(self._dpo_tokens(r).input_ids) for r in batch]

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        return [max(self._dpo_tokens(r).answer_positions[0] - 1, 0) if self._dpo_tokens(r).answer_positions else 0
                for r in batch]

    def truncated(self, batch: Sequence[ScoreRequest]) -> int:
        """Texts the rule cut: whose prompt plus the group's longest answer exceeds max_length."""
        cut = 0
        for r in batch:
            whole = rewardbench_dpo_tokens(self.tokenizer, prompt_to_json(r.prompt), [r.response, *r.context],
                                           1 << 62, self.max_prompt_length)[0]
            cut += len(whole.input_ids) != len(self._dpo_tokens(r).input_ids)
        return cut

    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding:
        import torch

        tokens = [self._dpo_tokens(r) for r in batch]
        width = max(len(t.input_ids) for t in tokens)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, t in enumerate(tokens):
            ids[i, :len(t.input_ids)] = torch.tensor(t.input_ids)
            mask[i, :len(t.input_ids)] = 1
        for i, t in enumerate(tokens):
            if not t.answer_positions:
                raise ConfigError(f"group {batch[i].group_id!r}, response {batch[i].index}: the response has no "
                                  f"tokens after RewardBench's truncation (max_length={self.max_length})")
        positions = tuple(tuple(t.answer_positions) for t in tokens)
        return Encoding(ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), positions,
                        tuple(max(p[0] - 1, 0) for p in positions))

    def _encodes_like_reference(self) -> bool:
        return True  # RewardBench's reference scores the policy's tokens (one tokenizer for both)
