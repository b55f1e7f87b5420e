"""``lmeval``: any lm-evaluation-harness model as an implicit or reference-free RM.

Each response becomes a ``loglikelihood`` request ``(context, continuation)``: the context is
the prompt rendered with the chat template up to the assistant's turn, the continuation the
response and the template's end-of-turn tokens (exactly the tokens the ``implicit`` adapter
sums). Works with ``hf``, ``vllm``, ``local-completions`` (an OpenAI-compatible server) and any
other registered lm-eval model::

    kind: lmeval
    args: {lm: hf, model_args: "pretrained=path/to/model,dtype=float32", beta: 1.0}

``ref_model_args`` adds a reference model of the same ``lm`` type: r = beta * (ll - ll_ref).
``tokenizer`` names the tokenizer whose chat template formats the prompt (default: the
``pretrained=`` of ``model_args``); ``template: plain`` skips the chat template. lm-eval's own
request cache is never used: its key ignores the model, so rmbench's score cache does the job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel, Runtime, ScoreRequest
from rmbench.models.hf.identity import weights_identity
from rmbench.models.hf.loading import load_tokenizer, resolve_source
from rmbench.models.hf.rendering import Formatter, check_template, response_boundary


def parse_arg_string(text: str) -> dict[str, str]:
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"model_args {text!r}: {part!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


class LMEvalRM(RewardModel):
    kind = "lmeval"
    description = "an lm-evaluation-harness model (hf, vllm, local-completions) as an implicit RM via loglikelihood"
    target_arg = "model_args"

    def __init__(self, lm: str = "hf", model_args: str = "", ref_model_args: str | None = None, beta: float = 1.0,
                 normalize: str = "sum", tokenizer: str | None = None, template: str = "auto",
                 system_prompt: str | None = None, batch_size: int = 8, runtime: Runtime | None = None) -> None:
        if normalize not in ("sum", "mean"):
            raise ConfigError(f"normalize must be 'sum' or 'mean', got {normalize!r}")
        check_template(template)
        self.runtime = runtime or Runtime()
        self.lm_name, self.model_args, self.ref_model_args = lm, model_args, ref_model_args
        self.beta, self.normalize, self.batch_size = float(beta), normalize, batch_size
        self.template, self.system_prompt = template, system_prompt
        args = parse_arg_string(model_args)
        tok_name = tokenizer or args.get("tokenizer") or args.get("pretrained") or args.get("model")
        if not tok_name:
            raise ConfigError("lmeval: give tokenizer= (or pretrained= in model_args) for the chat template")
        self.tok_name = tok_name
        self.tok_source = resolve_source(self.tok_name)
        self._formatter: Formatter | None = None
        self._lms: tuple | None = None
        self.max_batch = 256

    @property
    def formatter(self) -> Formatter:
        if self._formatter is None:
            tokenizer = load_tokenizer(self.tok_name, self.tok_source, self.runtime)
            self._formatter = Formatter(tokenizer, self.template, self.system_prompt)
        return self._formatter

    @property
    def tokenizer(self):
        return self.formatter.tokenizer

    @property
    def lms(self) -> tuple:
        """(the lm-eval model, its reference or None), created on first use."""
        if self._lms is None:
            lm = create_lm(self.lm_name, self.model_args, self.batch_size, self.runtime.device)
            ref = (create_lm(self.lm_name, self.ref_model_args, self.batch_size, self.runtime.device)
                   if self.ref_model_args else None)
            self._lms = (lm, ref)
        return self._lms

    def _requests(self, batch: Sequence[ScoreRequest]):
        from lm_eval.api.instance import Instance

        out, n_tokens = [], []
        for i, r in enumerate(batch):
            context, full = self.formatter.context_and_full(r.prompt, r.response)
            b = response_boundary(context, full)
            out.append(Instance(request_type="loglikelihood", doc={}, arguments=(full[:b], full[b:]), idx=i))
            n_tokens.append(max(1, len(self.tokenizer(full[b:], add_special_tokens=False)["input_ids"])))
        return out, np.asarray(n_tokens, dtype=np.float64)

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        return [len(self.tokenizer(self.formatter.context_and_full(r.prompt, r.response)[1],
                                   add_special_tokens=False)["input_ids"]) for r in batch]

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        lm, ref = self.lms
        requests, n_tokens = self._requests(batch)
        ll = np.array([x[0] for x in lm.loglikelihood(requests, disable_tqdm=True)], dtype=np.float64)
        if ref is not None:
            requests, _ = self._requests(batch)  # fresh Instances: lm-eval writes responses into them
            ll = ll - np.array([x[0] for x in ref.loglikelihood(requests, disable_tqdm=True)], dtype=np.float64)
        if self.normalize == "mean":
            ll = ll / n_tokens
        return self.beta * ll

    def identity(self) -> dict[str, Any]:
        weights = {}
        for key, args in (("policy", self.model_args), ("reference", self.ref_model_args or "")):
            pretrained = parse_arg_string(args).get("pretrained")
            if pretrained:
                weights[key] = weights_identity(resolve_source(pretrained))
        return {**super().identity(), "weights": weights, "tokenizer": weights_identity(self.tok_source)}

    def describe(self) -> dict[str, Any]:
        from importlib import metadata

        try:
            version = metadata.version("lm_eval")
        except metadata.PackageNotFoundError:
            version = "unknown"
        return {"lm_eval": version, "lm": self.lm_name, "model_args": self.model_args}


def create_lm(lm_name: str, arg_string: str, batch_size: int = 8, device: str = "auto"):
    """An lm-eval model from its registry name and ``key=value,...`` arguments; ``hf`` models get
    the device (``auto``: cuda when present, else cpu; lm-eval itself would insist on cuda)."""
    try:
        from lm_eval.api.registry import get_model
    except ImportError:
        raise ConfigError("lm-evaluation-harness is not installed: pip install 'rmbench[lmeval]'") from None
    try:
        cls = get_model(lm_name)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"lm-eval has no model type {lm_name!r}: {exc}") from None
    extra: dict[str, Any] = {"batch_size": batch_size}
    if lm_name in ("hf", "huggingface"):
        import torch

        extra["device"] = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    try:
        return cls.create_from_arg_string(arg_string, extra)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"lm-eval could not load {lm_name} with {arg_string!r}: {type(exc).__name__}: "
                          f"{str(exc)[:300]}") from None
