"""``prm:PATH_OR_HUB_ID``: a transformers process reward model, scoring each step of a solution.

``--model-arg style=trl|qwen|math_shepherd`` names how the model reads a solution
(:mod:`rmbench.models.prm_inputs`); left out, the checkpoint says (a TRL token classifier with 2
labels, Qwen2.5-Math-PRM's ``Qwen2ForProcessRewardModel``), else a one-line error asks for it
when the model is built, from its config and tokenizer files, before any weights load.
Step i's score is P(step i correct), read at its score token t_i:

* ``trl``: softmax(logits[t_i])[1], the token classifier's 2 labels (label 1: correct);
* ``qwen``: softmax(logits[t_i])[1], the 2-way head of ``Qwen2ForProcessRewardModel``
  (``AutoModel`` with ``--trust-remote-code``: the checkpoint's own code);
* ``math_shepherd``: softmax((z[t_i, "+"], z[t_i, "-"]))[0], z the LM logits (the LM head is
  applied to the score tokens' hidden states only).

The separator of ``trl`` is the checkpoint config's ``step_separator`` where it records one,
else ``--model-arg separator`` (default ``"\\n"``, TRL's).

Each solution is one forward pass; a batch pads its solutions (``padding_side``, right by
default, with position ids counted over real tokens so either side gives the same scores), in the
engine's length-sorted batches (:meth:`step_lengths`: tokens). Weights load on first use in the
run's dtype on its device (:mod:`rmbench.models.hf.loading`). As a response-level RM it splits
responses into steps and aggregates (``aggregate=min|last|prod|mean``, :mod:`rmbench.models.steps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.core.choices import PaddingSide
from rmbench.errors import ConfigError, ModelError
from rmbench.models.base import Runtime, Truncation
from rmbench.models.hf import load_weights
from rmbench.models.hf.base import HFWeights, no_kv_cache
from rmbench.models.prefix import forward_takes
from rmbench.models.prm_inputs import (
    TRL_SEPARATOR,
    PRMInput,
    PRMStyle,
    check_style,
    detect_style,
    prm_input,
    shepherd_candidates,
)
from rmbench.models.step_model import StepRequest
from rmbench.models.steps import StepRanker, check_aggregate


class TransformersPRM(StepRanker, HFWeights):
    kind = "prm"
    description = "prm:MODEL, a transformers PRM (style=trl|qwen|math_shepherd, read from the checkpoint where it says)"
    step_scale = "probability"

    def __init__(self, model: str, style: str | None = None, separator: str | None = None, aggregate: str = "min",
                 runtime: Runtime | None = None, revision: str | None = None, max_length: int | None = None,
                 truncation: Truncation | None = None, padding_side: PaddingSide = "right") -> None:
        super().__init__(model, runtime, revision, "plain", None, max_length, truncation, padding_side)
        self.style_arg = check_style(style)
        self.separator_arg = separator
        self.aggregate = check_aggregate(aggregate)
        self._style: PRMStyle | None = self.style_arg
        self._inputs: dict[str, PRMInput] = {}
        if self._style is None:  # from config.json (and the tokenizer's vocabulary), before any weights load
            self._style = detect_style(self.model_name, self.loaded_config(), self.tokenizer)

    # --- what the checkpoint is ----------------------------------------------------------------
    @property
    def style(self) -> PRMStyle:
        if self._style is None:
            self._style = detect_style(self.model_name, self.loaded_config(), self.tokenizer)
        return self._style

    @property
    def separator(self) -> str:
        """TRL's step separator: the config's ``step_separator``, else the model-arg, else ``"\\n"``."""
        recorded = getattr(self.loaded_config(), "step_separator", None)
        if isinstance(recorded, str):
            if self.separator_arg is not None and self.separator_arg != recorded:
                raise ConfigError(f"model {self.model_name!r}: --model-arg separator={self.separator_arg!r} but its "
                                  f"config records step_separator={recorded!r}")
            return recorded
        return TRL_SEPARATOR if self.separator_arg is None else self.separator_arg

    def _load_weights(self):
        from transformers import AutoModel, AutoModelForCausalLM, AutoModelForTokenClassification

        style = self.style
        if style == "qwen" and not self.runtime.trust_remote_code:
            raise ConfigError(f"model {self.model_name!r} (style qwen) runs its checkpoint's own code "
                              f"(Qwen2ForProcessRewardModel): pass --trust-remote-code if you trust it")
        auto = {"trl": AutoModelForTokenClassification, "qwen": AutoModel, "math_shepherd": AutoModelForCausalLM}[style]
        model = load_weights(auto, self.model_name, self.source, self.runtime, self.dtype, self.device, kind=self.kind)
        if style == "trl" and model.config.num_labels != 2:
            raise ConfigError(f"model {self.model_name!r} has {model.config.num_labels} labels; a TRL PRM has 2")
        return model

    def head_workspace_bytes(self) -> int:
        return 0

    # --- inputs --------------------------------------------------------------------------------
    def prm_input(self, request: StepRequest) -> PRMInput:
        """The solution's tokens and score positions, untruncated (remembered)."""
        key = request.key()
        if key not in self._inputs:
            self._inputs[key] = prm_input(self.style, self.tokenizer, request,
                                          self.separator if self.style == "trl" else "")
        return self._inputs[key]

    def step_lengths(self, batch: Sequence[StepRequest]) -> list[int]:
        return [len(self.prm_input(r).ids) for r in batch]

    def _batch_tensors(self, batch: Sequence[StepRequest]):
        """(input_ids, attention_mask, position_ids, per-row score positions), padded on the
        adapter's side; position ids count real tokens."""
        import torch

        limit, side = self.truncation.max_length, self.truncation.side
        context = self.context_limit()
        inputs = []
        for r in batch:
            where = f"solution {r.group_id!r}" if r.group_id else "a solution"
            inputs.append(self.prm_input(r).truncated(limit, side, where))
            if context is not None and len(inputs[-1].ids) > context:  # positions past it give garbage
                raise ModelError(f"{where} is {len(inputs[-1].ids)} tokens, past the model's context of {context}; "
                                 f"pass --max-length {context} or less")
        width = max(len(x.ids) for x in inputs)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        ids = torch.full((len(inputs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(inputs), width), dtype=torch.long)
        rows = []
        for i, x in enumerate(inputs):
            start = width - len(x.ids) if self.front.padding_side == "left" else 0
            ids[i, start:start + len(x.ids)] = torch.tensor(x.ids, dtype=torch.long)
            mask[i, start:start + len(x.ids)] = 1
            rows.append([start + p for p in x.positions])
        return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0), rows

    # --- scoring -------------------------------------------------------------------------------
    def score_steps(self, batch: Sequence[StepRequest]) -> list[list[float]]:
        """One forward pass over the padded batch; each step's P(correct) (module docstring)."""
        import torch

        if not batch:
            return []
        ids, mask, position_ids, rows = self._batch_tensors(batch)
        row_index = torch.tensor([i for i, r in enumerate(rows) for _ in r], device=self.device)
        col_index = torch.tensor([p for r in rows for p in r], device=self.device)
        with torch.inference_mode():
            pairs = self._score_logits(ids.to(self.device), mask.to(self.device), position_ids.to(self.device),
                                       row_index, col_index)
            probs = torch.softmax(pairs.double(), dim=-1)[:, 0 if self.style == "math_shepherd" else 1]
        flat = probs.cpu().tolist()
        bounds = np.cumsum([0] + [len(r) for r in rows])
        return [flat[bounds[i]:bounds[i + 1]] for i in range(len(rows))]

    def _score_logits(self, ids, mask, position_ids, row_index, col_index):
        """(steps in the batch, 2) logits at the score tokens: the 2 labels, or ("+", "-")."""
        model = self.model
        kwargs: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if self.style == "math_shepherd":
            backbone = model.base_model
            if forward_takes(backbone, "position_ids"):
                kwargs["position_ids"] = position_ids
            hidden = backbone(**kwargs, **no_kv_cache(backbone)).last_hidden_state[row_index, col_index]
            return model.get_output_embeddings()(hidden)[:, list(shepherd_candidates(self.tokenizer))].float()
        if forward_takes(model, "position_ids"):
            kwargs["position_ids"] = position_ids
        out = model(**kwargs, **no_kv_cache(model))
        logits = out.logits if hasattr(out, "logits") else out[0]
        if logits.shape[-1] != 2:
            raise ModelError(f"gives {logits.shape[-1]} outputs per token; a {self.style} PRM gives 2")
        return logits[row_index, col_index].float()

    # --- identity and description ----------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """:meth:`HFTokenizedModel.identity` without the padding side, which changes no score (tested)."""
        out = super().identity()
        return {**out, "args": {k: v for k, v in out["args"].items() if k != "padding_side"}}

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "style": self._style}
        out.pop("template", None)
        return out
