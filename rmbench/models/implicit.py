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

from typing import Any, Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest
from rmbench.models.hf import HFRewardModel, load_weights, shareable_prefix, tokenizer_identity
from rmbench.types import Spec

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


class ImplicitRM(HFRewardModel):
    """Implicit RM of a causal LM, optionally against a reference LM."""

    description = "implicit reward beta * log(pi/pi_ref) of a causal LM (reference-free without ref)"
    target_arg = "model"
    shares_prefix = True

    def __init__(self, model: str, ref: str | None = None, beta: float = 1.0, normalize: str = "sum",
                 runtime: Runtime | None = None, revision: str | None = None, ref_revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None) -> None:
        from transformers import AutoModelForCausalLM

        super().__init__(model, runtime, revision, template, system_prompt, max_length)
        if normalize not in ("sum", "mean"):
            raise ConfigError(f"normalize must be 'sum' or 'mean', got {normalize!r}")
        self.beta, self.normalize = float(beta), normalize
        self.model = load_weights(AutoModelForCausalLM, model, self.source, self.runtime, self.dtype, self.device)
        self.reference = None
        if ref is not None:
            self.reference = ImplicitRM(ref, beta=1.0, normalize=normalize, runtime=self.runtime,
                                        revision=ref_revision, template=template, system_prompt=system_prompt,
                                        max_length=max_length)
            self.reference.spec = Spec.make(f"reference:{ref}", "implicit",
                                            {"model": ref, "revision": ref_revision, "normalize": normalize})
        self._same_tokenizer = (self.reference is not None
                                and tokenizer_identity(self.tokenizer) == tokenizer_identity(self.reference.tokenizer))

    @property
    def backbone(self):
        return self.model.base_model

    def _encode(self, batch: Sequence[ScoreRequest]) -> dict[str, Any]:
        import torch

        enc, all_positions = self.encode_responses(batch)
        rows, cols, shared = [], [], []
        for i, positions in enumerate(all_positions):
            # The very first token of a sequence has no prediction; it can only be a response
            # token when the prompt renders to nothing, which a template never does.
            positions = [j for j in positions if j > 0]
            if not positions:
                raise ConfigError(f"group {batch[i].group_id!r}, response {batch[i].index}: the response has no "
                                  f"tokens after truncation (max_length={self.max_length})")
            rows += [i] * len(positions)
            cols += positions
            shared.append(shareable_prefix(positions))
        enc["rows"], enc["cols"] = torch.tensor(rows), torch.tensor(cols)
        # Rows of one prompt share everything before the token that predicts their first
        # response token (see rmbench.models.prefix).
        enc["shared"] = shared
        enc["n_tokens"] = np.bincount(rows, minlength=len(batch))
        return enc

    def _hidden(self, enc):
        return self.backbone_hidden(enc)

    def _head(self, enc, hidden) -> np.ndarray:
        softcap = getattr(self.model.config, "final_logit_softcapping", None)
        lp = gather_logprobs(self.model.get_output_embeddings(), hidden, enc["input_ids"].to(hidden.device),
                             enc["rows"].to(hidden.device), enc["cols"].to(hidden.device), softcap)
        n = len(enc["n_tokens"])
        sums = np.bincount(enc["rows"].numpy(), weights=lp.double().cpu().numpy(), minlength=n)
        return sums / enc["n_tokens"] if self.normalize == "mean" else sums

    def _finish(self, batch, enc, values: np.ndarray) -> np.ndarray:
        if self.reference is not None:
            ref = (self.reference.score_encoded(batch, enc) if self._encodes_like_reference()
                   else self.reference.score(batch))
            values = values - (ref[:, None] if values.ndim == 2 else ref)
        return self.beta * values

    def _encodes_like_reference(self) -> bool:
        """True when the reference would encode a batch exactly as this model does (same
        tokenizer, rendering and truncation), so it can score this model's encoding as is."""
        r = self.reference
        return (self._same_tokenizer and r.formatter.chat == self.formatter.chat
                and r.formatter.system_prompt == self.formatter.system_prompt and r.max_length == self.max_length
                and r.tokenizer.truncation_side == self.tokenizer.truncation_side)

    def adapter_config(self) -> dict[str, Any]:
        return {**super().adapter_config(), "beta": self.beta, "normalize": self.normalize,
                "reference": None if self.reference is None else self.reference.fingerprint()}
