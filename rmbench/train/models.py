"""The two models :func:`rmbench.train.trainer.train_one` trains, behind one interface.

* :class:`ExTrainer`: r(x, y) = <u, h(x, y)> + b, a linear head on the backbone's last hidden
  state at the last real token.
* :class:`ImTrainer`: r(x, y) = beta * (log pi(y|x) - log pi_ref(y|x)), log-probs summed over
  the response tokens. pi_ref is the frozen base: its log-probs of every distinct training
  response are computed once, before the first update (the *reference* phase), by the policy
  itself while it still is the base (full fine-tuning) or with its adapters disabled (LoRA,
  always exactly the base); no second copy of the base is loaded. A checkpoint holds them, so
  a resumed run never needs the base again.

Both train the whole backbone, or with ``config.lora`` only LoRA adapters on it
(:mod:`rmbench.train.lora`; the EX-RM's head is always fully trained). The interface:
``param_groups`` (for the optimizer), ``prepare(pairs, report)`` (work before the first
update), ``rewards(batch)`` (a differentiable tensor), ``state()``/``load_state()`` (what a
checkpoint holds: the trainable tensors), ``save(folder, config)`` (the weights and the model
entry), ``lora_card()`` (the LoRA settings for the model card, None for full fine-tuning),
``live_adapter(label)`` (the adapter of the model as it is now, as its saved folder loads,
around the live weights: :mod:`rmbench.models.live`) with ``live_modules()``, what evaluation
switches to evaluation mode (``rmbench train --eval-every``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest

if TYPE_CHECKING:
    import torch

REFERENCE_CHUNK = 4
"""Reference-phase texts per scoring call, in multiples of the batch size (texts, not pairs)."""


class _Trainer:
    """What both trainers share: the policy/backbone ``ImplicitRM``, optional LoRA, checkpoints."""

    param_groups: list[dict[str, Any]]  # the optimizer's parameter groups; each trainer sets its own

    def __init__(self, base: str, config, runtime: Runtime) -> None:
        from rmbench.models.implicit import ImplicitRM

        self.rm = ImplicitRM(base, runtime=runtime, template=config.template, max_length=config.max_length)
        self.model = self.rm.model
        self.lora = None
        if config.lora:
            from rmbench.train.lora import add_lora

            self.lora = add_lora(self.model, config)
        self.trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.config, self.runtime = config, runtime

    def live_modules(self) -> tuple:
        """The modules a live adapter runs (:meth:`live_adapter`), for evaluation mode."""
        return (self.model,)

    def prepare(self, pairs: Sequence[ScoreRequest], report) -> None:
        """Work before the first update (none here)."""

    def state(self) -> dict:
        """What a checkpoint keeps of the trainer (:meth:`load_state` restores it)."""
        raise NotImplementedError

    def load_state(self, state: dict) -> None:
        raise NotImplementedError

    def lora_card(self) -> dict | None:
        if self.lora is None:
            return None
        from rmbench.train.lora import targeted

        cfg = self.lora.peft_config["default"]
        return {"r": cfg.r, "alpha": cfg.lora_alpha, "dropout": cfg.lora_dropout, "target_modules": targeted(self.lora),
                "trainable_parameters": sum(p.numel() for p in self.trainable), "merged": True}

    def _model_state(self) -> dict:
        """The model's tensors a checkpoint needs: all of them, or with LoRA the adapters only."""
        if self.lora is None:
            return self.model.state_dict()
        return {n: p.detach() for n, p in self.model.named_parameters() if p.requires_grad}

    def _load_model_state(self, state: dict) -> None:
        if self.lora is None:
            self.model.load_state_dict(state)
            return
        trainable = {n for n, p in self.model.named_parameters() if p.requires_grad}
        _, unexpected = self.model.load_state_dict(state, strict=False)
        if unexpected or trainable - set(state):
            raise ConfigError("the checkpoint's LoRA tensors do not match this model's adapters; "
                              "delete it to train from the start")

    def _save_model(self, folder: Path) -> None:
        model = self.model
        if self.lora is not None:
            from rmbench.train.lora import merge

            model = self.model = merge(self.lora)
            self.lora = None
        model.save_pretrained(folder / "model")
        self.rm.tokenizer.save_pretrained(folder / "model")


class ExTrainer(_Trainer):
    """Backbone + linear head, rewards at the last real token. The head starts at zero and may
    have its own learning rate: a zero head passes no gradient to the backbone until it moved."""

    def __init__(self, base: str, config, runtime: Runtime) -> None:
        import torch

        super().__init__(base, config, runtime)
        self.head = torch.nn.Linear(self.model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        self.param_groups = [{"params": self.trainable},
                             {"params": list(self.head.parameters()), "lr": config.head_lr or config.lr}]

    def rewards(self, batch):
        from rmbench.models.seqcls import pool

        enc = self.rm.front.encode(self.rm.front.full_texts(batch))
        hidden = self.model.base_model(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                       position_ids=enc.position_ids).last_hidden_state
        return self.head(pool(hidden, enc.attention_mask, "last").float())[:, 0]

    def live_adapter(self, label: str):
        """``linear`` around the backbone and the head as they are now (the saved EX-RM's adapter)."""
        from rmbench.models.live import LiveLinearRM

        return LiveLinearRM(self.model.base_model, self.head.weight, self.head.bias, self.rm.tokenizer, label,
                            self.config.template, self.config.max_length)

    def save(self, folder: Path, config) -> dict:
        from safetensors.torch import save_file

        self._save_model(folder)
        save_file({"weight": self.head.weight.detach().reshape(-1).contiguous(),
                   "bias": self.head.bias.detach().contiguous()}, str(folder / "head.safetensors"))
        return {"type": "model", "kind": "linear",
                "args": {"model": "model", "head": "head.safetensors", "pooling": "last",
                         "template": config.template, "max_length": config.max_length}}

    def state(self) -> dict:
        return {"model": self._model_state(), "head": self.head.state_dict()}

    def load_state(self, state: dict) -> None:
        self._load_model_state(state["model"])
        self.head.load_state_dict(state["head"])


def distinct_responses(pairs: Sequence[ScoreRequest]) -> list[ScoreRequest]:
    """Each (group, response) of ``pairs`` once, in order of first appearance."""
    seen: dict[tuple, ScoreRequest] = {}
    for r in pairs:
        seen.setdefault((r.group_id, r.index), r)
    return list(seen.values())


class ImTrainer(_Trainer):
    """Policy initialised from the base; the frozen base is the reference (DPO)."""

    def __init__(self, base: str, config, runtime: Runtime) -> None:
        super().__init__(base, config, runtime)
        self.param_groups = [{"params": self.trainable}]
        self.beta = config.beta
        self.chunk = REFERENCE_CHUNK * config.batch_size
        self.reference: torch.Tensor | None = None  # log pi_ref(y|x) of each distinct response, float64
        self._index: dict[tuple, int] = {}
        self._base_model = None  # the base, loaded for evaluation during training (live_adapter)

    def reference_logprobs(self, requests: Sequence[ScoreRequest], advance=None):
        """log pi_ref(y|x) summed over each request's response tokens: the frozen base's, which
        is the policy before its first update, or with LoRA the policy with adapters disabled."""
        import numpy as np

        was_training = self.model.training
        self.model.eval()
        values = []
        try:
            with self._base():
                for s in range(0, len(requests), self.chunk):
                    values.append(self.rm.score(requests[s:s + self.chunk]))
                    if advance:
                        advance(len(values[-1]))
        finally:
            self.model.train(was_training)
        return np.concatenate(values) if values else np.zeros(0)

    def _base(self):
        if self.lora is None:
            return contextlib.nullcontext()
        from rmbench.train.lora import adapters_disabled

        return adapters_disabled(self.lora)

    def prepare(self, pairs: Sequence[ScoreRequest], report) -> None:
        import torch

        texts = distinct_responses(pairs)
        self._index = {(r.group_id, r.index): i for i, r in enumerate(texts)}
        if self.reference is not None:  # from the checkpoint
            if len(self.reference) != len(texts):
                raise ConfigError("the checkpoint's reference log-probs do not match the data; "
                                  "delete it to train from the start")
            report.restored("reference", "im-rm reference log-probs (from checkpoint)", len(texts))
            return
        advance = report.begin("reference", "im-rm reference log-probs", len(texts))
        self.reference = torch.tensor(self.reference_logprobs(texts, advance), dtype=torch.float64)

    def _logprob_sums(self, batch):
        import torch

        from rmbench.models.implicit import gather_logprobs

        enc = self.rm._encode(batch)
        hidden = self.model.base_model(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                       position_ids=enc.position_ids).last_hidden_state
        rows = torch.tensor([i for i, p in enumerate(enc.positions) for _ in p])
        cols = torch.tensor([j for p in enc.positions for j in p])
        lp = gather_logprobs(self.model.get_output_embeddings(), hidden, enc.input_ids, rows, cols)
        return torch.zeros(len(batch), dtype=lp.dtype).index_add(0, rows, lp)

    def rewards(self, batch):
        import torch

        idx = torch.tensor([self._index[(r.group_id, r.index)] for r in batch])
        return self.beta * (self._logprob_sums(batch).float() - self.reference[idx].float())

    def live_adapter(self, label: str):
        """``implicit`` around the policy as it is now, against the base loaded from its files
        once, as the saved IM-RM's adapter reads it (``ref``: the base): the training's
        reference log-probs cover only the training responses."""
        from rmbench.models.implicit import ImplicitRM
        from rmbench.models.live import LiveImplicitRM

        if self._base_model is None:
            self._base_model = ImplicitRM(self.config.base, runtime=self.runtime).model
        return LiveImplicitRM(self.model, self.rm.tokenizer, label, self._base_model, self.beta,
                              template=self.config.template, max_length=self.config.max_length)

    def live_modules(self) -> tuple:
        return (self.model, self._base_model)

    def save(self, folder: Path, config) -> dict:
        self._save_model(folder)
        return {"type": "model", "kind": "implicit",
                "args": {"model": "model", "ref": config.base, "beta": config.beta, "template": config.template,
                         "max_length": config.max_length}}

    def state(self) -> dict:
        return {"model": self._model_state(), "reference": self.reference}

    def load_state(self, state: dict) -> None:
        self._load_model_state(state["model"])
        self.reference = state["reference"]


def make_trainer(kind: str, config, runtime: Runtime) -> _Trainer:
    return (ExTrainer if kind == "ex" else ImTrainer)(config.base, config, runtime)
