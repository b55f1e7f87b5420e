"""Tiny random vision-language checkpoints of two architectures, saved as real HF folders with a
processor built offline (the hub is unreachable): Idefics3 (SmolVLM's architecture; it has no
sequence-classification class, so a reward head is the linear head) and Gemma 3 (which has
``Gemma3ForSequenceClassification``). Each folder holds the model, the tokenizer of
:func:`tests.support.tiny_models.build_tokenizer` with the architecture's image tokens added, the
image processor at 28x28 pixels and a ChatML-like chat template that places each image's token.

The Idefics3 builder, the linear head, the sizes and the template are those of
``examples/make_tiny_vlm.py`` (the multimodal tutorial's tiny VLM, there on SmolLM2's tokenizer):
one copy, which the tests thus also check.

Qwen2-VL was the first choice: its processor needs a video processor, which needs torchvision
(not installed here), so Idefics3 stands in."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.support.tiny_models import build_tokenizer

REPO = Path(__file__).resolve().parents[2]


def _example():
    """``examples/make_tiny_vlm.py``, the one builder of tiny Idefics3 checkpoints (the tutorial's and
    these), loaded from its file (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("make_tiny_vlm", REPO / "examples" / "make_tiny_vlm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tiny_vlm = _example()
TEMPLATE, TEXT, VISION = tiny_vlm.TEMPLATE, tiny_vlm.TEXT, tiny_vlm.VISION
linear_head = tiny_vlm.linear_head


def idefics3(root: Path, seed: int = 0) -> Path:
    """Idefics3ForConditionalGeneration (a Llama text model, one 28x28 image = 4 image tokens), built by
    ``examples/make_tiny_vlm.py`` on the test tokenizer."""
    return tiny_vlm.idefics3(root / f"idefics3-{seed}", build_tokenizer(), seed)


def gemma3(root: Path, head: str, seed: int = 0) -> Path:
    """Gemma 3 with ``head`` ``seqcls`` (Gemma3ForSequenceClassification, one output) or ``lm``
    (Gemma3ForConditionalGeneration); one 28x28 image = 4 soft tokens."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ForSequenceClassification,
        Gemma3ImageProcessorPil,
        Gemma3Processor,
        PreTrainedTokenizerFast,
    )

    base = build_tokenizer()
    base.add_special_tokens({"additional_special_tokens": ["<start_of_image>", "<end_of_image>",
                                                           "<image_soft_token>"]})
    tok = PreTrainedTokenizerFast(tokenizer_object=base.backend_tokenizer, eos_token="<|im_end|>",
                                  pad_token="<|im_end|>", unk_token="<|endoftext|>",
                                  extra_special_tokens={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                                        "image_token": "<image_soft_token>"})
    template = TEMPLATE.replace("IMAGE", "<start_of_image>")
    tok.chat_template = template
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessorPil(size={"height": 28, "width": 28}),
                                tokenizer=tok, chat_template=template, image_seq_length=4)
    config = Gemma3Config(text_config=dict(vocab_size=len(tok), head_dim=8, sliding_window=64, **TEXT),
                          vision_config=VISION, mm_tokens_per_image=4,
                          boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
                          eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
                          image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
                          num_labels=1, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = Gemma3ForSequenceClassification(config) if head == "seqcls" else Gemma3ForConditionalGeneration(config)
    tiny_vlm.spread(model, seed)
    return tiny_vlm.save(model, processor, root / f"gemma3-{head}-{seed}")


def png(path: Path, seed: int, size: tuple[int, int] = (20, 30)) -> Path:
    """A random RGB PNG (height, width ``size``)."""
    import numpy as np
    from PIL import Image

    pixels = (np.random.default_rng(seed).random((*size, 3)) * 255).astype("uint8")
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format="PNG")
    return path
