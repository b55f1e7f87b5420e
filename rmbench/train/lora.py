"""``rmbench train --lora``: low-rank adapters (LoRA, via ``peft``) instead of full fine-tuning.

Each targeted linear layer y = W x keeps W frozen and learns a low-rank update:

    y = W x + (alpha / r) * B A dropout(x),   A: r x d_in (random init),  B: d_out x r (zero init)

so at the start the model is exactly the base. Targets: ``all-linear`` (peft's name for every
linear layer except the output layer: the attention and MLP projections) or a comma-separated
list of module names (``q_proj,v_proj``).

* EX-RM: adapters on the backbone plus the fully trained linear head.
* IM-RM: adapters on the policy; the reference is the same model with its adapters disabled,
  which computes exactly the frozen base (each LoRA layer then returns ``W x`` alone), so no
  second copy of the base is loaded.

When saved, the adapters are merged into the weights (W <- W + (alpha / r) B A,
``merge_and_unload``): the output folder is a plain transformers model that loads like a full
fine-tune's. Checkpoints hold only the trainable tensors (adapters, head).

``peft`` is imported only here, only for ``--lora``.
"""

from __future__ import annotations

import warnings
from typing import Any

from rmbench.errors import ConfigError

ALL_LINEAR = "all-linear"


def import_peft():
    """The peft module, or a one-line error saying how to install it."""
    try:
        import peft
    except ImportError:
        raise ConfigError("--lora needs the peft package: pip install 'rmbench[lora]'") from None
    return peft


def target_modules(targets: str) -> str | list[str]:
    """peft's ``target_modules`` for ``--lora-targets``."""
    if targets.strip() == ALL_LINEAR:
        return ALL_LINEAR
    names = [t.strip() for t in targets.split(",") if t.strip()]
    if not names:
        raise ConfigError(f"--lora-targets: expected {ALL_LINEAR} or comma-separated module names, got {targets!r}")
    return names


def add_lora(model, config) -> Any:
    """Inject LoRA adapters into ``model`` in place (its own modules are replaced, so ``model``
    and ``model.base_model`` keep working) and freeze everything else; returns the peft wrapper,
    which :func:`merge` and :func:`adapters_disabled` take."""
    peft = import_peft()
    lora_config = peft.LoraConfig(r=config.lora_r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                                  target_modules=target_modules(config.lora_targets), bias="none")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # peft reads deprecated transformers attributes
        try:
            return peft.get_peft_model(model, lora_config)
        except ValueError as exc:  # no module matches the targets
            raise ConfigError(f"--lora-targets {config.lora_targets!r}: {str(exc).splitlines()[0][:300]}") from None


def targeted(wrapper) -> list[str]:
    """The module names the adapters were put on (sorted), for the model card."""
    found = wrapper.peft_config["default"].target_modules
    return sorted({name.rsplit(".", 1)[-1] for name in found} if not isinstance(found, str) else {found})


def adapters_disabled(wrapper):
    """Context in which the model computes exactly its frozen base."""
    return wrapper.disable_adapter()


def merge(wrapper):
    """The base model with the adapters merged into its weights (LoRA layers removed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return wrapper.merge_and_unload()
