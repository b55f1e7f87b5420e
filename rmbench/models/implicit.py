"""``implicit``: the implicit reward of a language model (IM-RM, as in DPO).

    r(x, y) = beta * ( log pi(y | x) - log pi_ref(y | x) )

summed over the response tokens, the template's end-of-turn tokens included (``normalize:
mean`` averages instead, RewardBench's ``avg``). Without ``ref`` the reward is reference-free:
beta * log pi(y | x).

The response tokens are found by character offsets in the tokenised whole text: every token
that holds any character of the response counts, so a token that spans the prompt/response
boundary belongs to the response and no continuation token is lost or split. The LM head runs
only over those positions (in chunks), not over the whole sequence.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import CompositeModel, RewardModel, Runtime, ScoreRequest, Truncation
from rmbench.models.hf import Encoding, HFRewardModel, load_weights
from rmbench.models.hf.identity import tokenizer_identity

LM_HEAD_CHUNK = 256  # response positions per LM-head call: bounds the (positions x vocab) logits (50 MB at 49k vocab)


def gather_logprobs(lm_head, hidden, input_ids, rows, cols, softcap: float | None = None):
    """log p(token at (row, col) | tokens before it) for each (row, col), from hidden states at col - 1."""
    import torch

    out = []
    for s in range(0, len(rows), LM_HEAD_CHUNK):
        r, c = rows[s:s + LM_HEAD_CHUNK], cols[s:s + LM_HEAD_CHUNK]
        logits = lm_head(hidden[r, c - 1]).float()
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        out.append(torch.log_softmax(logits, dim=-1).gather(1, input_ids[r, c].unsqueeze(1)).squeeze(1))
    return torch.cat(out) if out else torch.zeros(0)


class ImplicitRM(HFRewardModel, CompositeModel):
    """Implicit RM of a causal LM, optionally against a reference LM."""

    kind = "implicit"
    description = "implicit reward beta * log(pi/pi_ref) of a causal LM (reference-free without ref)"
    shares_prefix = True

    def __init__(self, model: str, ref: str | None = None, beta: float = 1.0, normalize: str = "sum",
                 runtime: Runtime | None = None, revision: str | None = None, ref_revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None) -> None:
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation)
        if normalize not in ("sum", "mean"):
            raise ConfigError(f"normalize must be 'sum' or 'mean', got {normalize!r}")
        self.beta, self.normalize = float(beta), normalize
        self.reference = None
        if ref is not None:
            self.reference = ImplicitRM(ref, beta=1.0, normalize=normalize, runtime=self.runtime,
                                        revision=ref_revision, template=template, system_prompt=system_prompt,
                                        max_length=max_length, truncation=truncation)
        self._same_tokenizer: bool | None = None

    def _load_weights(self):
        from transformers import AutoModelForCausalLM

        return load_weights(AutoModelForCausalLM, self.model_name, self.source, self.runtime, self.dtype, self.device)

    def children(self) -> list[RewardModel]:
        return [self.reference] if self.reference is not None else []

    @property
    def backbone(self):
        return self.model.base_model

    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding:
        enc = self.front.encode_responses(batch, share=True)
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

        rows = [i for i, p in enumerate(enc.positions) for _ in p]
        cols = [j for p in enc.positions for j in p]
        softcap = getattr(self.model.config, "final_logit_softcapping", None)
        lp = gather_logprobs(self.model.get_output_embeddings(), hidden, enc.input_ids.to(hidden.device),
                             torch.tensor(rows, device=hidden.device), torch.tensor(cols, device=hidden.device),
                             softcap)
        n_tokens = np.array([len(p) for p in enc.positions], dtype=np.float64)
        sums = np.bincount(rows, weights=lp.double().cpu().numpy(), minlength=len(enc.positions))
        return sums / n_tokens if self.normalize == "mean" else sums

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
        if self._same_tokenizer is None:
            self._same_tokenizer = tokenizer_identity(self.tokenizer) == tokenizer_identity(r.tokenizer)
        return (self._same_tokenizer and r.formatter.chat == self.formatter.chat
                and r.formatter.system_prompt == self.formatter.system_prompt and r.truncation == self.truncation)

    def identity(self) -> dict[str, Any]:
        out = super().identity()
        args = {k: v for k, v in out["args"].items() if k not in ("ref", "ref_revision")}
        return {**out, "args": args, "reference": None if self.reference is None else self.reference.identity()}
