"""vLLM adapters, for users with GPUs and big models (``pip install 'rmbench[vllm]'``).

* ``vllm_seqcls``: a sequence-classification reward model (one output) through vLLM's pooling
  runner: the raw logit at the last token (no sigmoid/softmax), like ``seqcls``.
* ``vllm_implicit``: the implicit reward beta * sum log pi(y | x) (reference-free, or against
  ``ref``) from vLLM's ``prompt_logprobs``: one prefill per text, no generation.

Texts are rendered and tokenised with the model's Hugging Face tokenizer exactly as the
``implicit``/``seqcls`` adapters do, and vLLM receives the token ids, so the response tokens
are the same ones the transformers adapters score. vLLM is imported only when such a model is
built, and a missing vLLM is a clear error. vLLM batches, schedules and caches prompt prefixes
itself, so these adapters ask the engine for large batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import CompositeModel, RewardModel, Runtime, ScoreRequest, Truncation
from rmbench.models.hf import HFTokenizedModel


def import_vllm():
    try:
        import vllm
    except ImportError:
        raise ConfigError("the vllm_* adapters need vLLM (and a GPU it supports): pip install 'rmbench[vllm]'; on "
                          "CPU use the implicit or seqcls adapters instead") from None
    return vllm


def summed_prompt_logprobs(prompt_logprobs: Sequence[Any], token_ids: Sequence[int], positions: Sequence[int]) -> float:
    """Sum of log p(token j | tokens before j) over ``positions``, from vLLM's per-position
    ``prompt_logprobs`` (entry j: a dict from token id to an object with ``.logprob``; entry 0 is
    None). The prompt's own token is always among the entries."""
    total = 0.0
    for j in positions:
        entry = prompt_logprobs[j]
        if entry is None or token_ids[j] not in entry:
            raise ConfigError(f"vLLM returned no log-probability for prompt token {j}")
        total += float(entry[token_ids[j]].logprob)
    return total


class _VLLMRM(HFTokenizedModel):
    """The tokenizer front-end of :class:`HFTokenizedModel` in front of a vLLM engine (built on
    first use, like the transformers adapters' weights)."""

    max_batch = 4096
    runner = "generate"

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None,
                 gpu_memory_utilization: float = 0.9, tensor_parallel_size: int = 1,
                 truncation: Truncation | None = None, enforce_eager: bool = False) -> None:
        import_vllm()
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation)
        # enforce_eager: vLLM's own switch (no torch.compile, no CUDA graphs). The scores are the
        # same model's; on a CPU it starts the engine in about 20 s instead of about 110 s (bench/RESULTS.md).
        self.engine_args = dict(gpu_memory_utilization=gpu_memory_utilization,
                                tensor_parallel_size=tensor_parallel_size, enforce_eager=bool(enforce_eager))
        self._llm = None

    @property
    def llm(self):
        if self._llm is None:
            vllm = import_vllm()
            kwargs = dict(model=self.source.location, revision=self.source.revision, tokenizer=self.source.location,
                          dtype=self.dtype, trust_remote_code=self.runtime.trust_remote_code,
                          enable_prefix_caching=True, **self.engine_args)
            if self.max_length is not None:
                kwargs["max_model_len"] = self.max_length
            if self.runner == "pooling":
                kwargs["runner"] = "pooling"
            try:
                self._llm = vllm.LLM(**kwargs)
            except Exception as exc:  # noqa: BLE001
                raise ConfigError(f"vLLM cannot load {self.model_name!r}: {type(exc).__name__}: "
                                  f"{str(exc)[:300]}") from None
        return self._llm

    def close(self) -> None:
        """Shut vLLM's engine down now: its engine-core process, sockets and monitor thread.
        Left to interpreter exit, vLLM's finalizers run while the interpreter is tearing down,
        and its monitor thread then sees the engine core die, logs to closed streams and can abort
        the process (``terminate called without an active exception``, exit 134) after every
        score was computed. vLLM's ``LLM`` has no public shutdown in 0.32: its engine client's is used."""
        llm, self._llm = self._llm, None
        if llm is None:
            return
        shutdown = getattr(getattr(getattr(llm, "llm_engine", None), "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del llm
        import gc

        gc.collect()

    def _token_ids(self, batch: Sequence[ScoreRequest]) -> list[dict]:
        enc = self.front.encode_responses(batch, share=False)
        assert enc.positions is not None  # encode_responses marks the response tokens
        return [{"ids": [t for t, m in zip(enc.input_ids[i].tolist(), enc.attention_mask[i].tolist()) if m],
                 "positions": [j for j in positions if j > 0]} for i, positions in enumerate(enc.positions)]

    def identity(self) -> dict:
        return {**super().identity(), "engine": "vllm"}


class VLLMImplicitRM(_VLLMRM, CompositeModel):
    kind = "vllm_implicit"
    description = "implicit RM beta*log(pi/pi_ref) through vLLM prompt_logprobs (GPU; pip install 'rmbench[vllm]')"

    def __init__(self, model: str, ref: str | None = None, beta: float = 1.0, runtime: Runtime | None = None,
                 revision: str | None = None, template: str = "auto", system_prompt: str | None = None,
                 max_length: int | None = None, gpu_memory_utilization: float = 0.9, tensor_parallel_size: int = 1,
                 truncation: Truncation | None = None, enforce_eager: bool = False) -> None:
        # Every argument named (none through **kwargs), so a misspelt one is refused, naming these.
        shared: dict[str, Any] = dict(revision=revision, template=template, system_prompt=system_prompt,
                                      max_length=max_length, gpu_memory_utilization=gpu_memory_utilization,
                                      tensor_parallel_size=tensor_parallel_size, enforce_eager=enforce_eager)
        super().__init__(model, runtime, truncation=truncation, **shared)
        self.beta = float(beta)
        self.reference = (VLLMImplicitRM(ref, runtime=runtime, truncation=truncation, **shared) if ref is not None
                          else None)

    def children(self) -> list[RewardModel]:
        return [self.reference] if self.reference is not None else []

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        vllm = import_vllm()
        encoded = self._token_ids(batch)
        params = vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0)
        outs = self.llm.generate([{"prompt_token_ids": e["ids"]} for e in encoded], params, use_tqdm=False)
        values = np.array([summed_prompt_logprobs(o.prompt_logprobs, e["ids"], e["positions"])
                           for o, e in zip(outs, encoded)])
        if self.reference is not None:
            values = values - self.reference.score(batch)
        return self.beta * values

    def identity(self) -> dict[str, Any]:
        out = super().identity()
        return {**out, "args": {k: v for k, v in out["args"].items() if k != "ref"},
                "reference": None if self.reference is None else self.reference.identity()}


class VLLMSeqClsRM(_VLLMRM):
    kind = "vllm_seqcls"
    description = ("sequence-classification RM (1 output) through vLLM's pooling runner "
                   "(GPU; pip install 'rmbench[vllm]')")
    runner = "pooling"

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        import dataclasses

        vllm = import_vllm()
        fields = {f.name for f in dataclasses.fields(vllm.PoolingParams)} if dataclasses.is_dataclass(
            vllm.PoolingParams) else set(getattr(vllm.PoolingParams, "__struct_fields__", ()))
        # The raw logit, as ``seqcls`` reports it: no sigmoid/softmax (the flag's name varies by version).
        flag = next((f for f in ("use_activation", "activation") if f in fields), None)
        params = vllm.PoolingParams(**({flag: False} if flag else {}))
        outs = self.llm.encode([{"prompt_token_ids": e["ids"]} for e in self._token_ids(batch)], params,
                               pooling_task="classify", use_tqdm=False)
        return np.array([float(np.asarray(o.outputs.data.float().cpu()).reshape(-1)[0]) for o in outs])
