"""Tiny random vision-language checkpoints of two architectures, saved as real HF folders with a
processor built offline (the hub is unreachable): Idefics3 (SmolVLM's architecture; it has no
sequence-classification class, so a reward head is the linear head) and Gemma 3 (which has
``Gemma3ForSequenceClassification``). Each folder holds the model, the tokenizer of
:func:`tests.support.tiny_models.build_tokenizer` with the architecture's image tokens added, the
image processor at 28x28 pixels and a ChatML-like chat template that places each image's token.

Qwen2-VL was the first choice: its processor needs a video processor, which needs torchvision
(not installed here), so Idefics3 stands in."""

from __future__ import annotations

from pathlib import Path

from tests.support.tiny_models import build_tokenizer

TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
            "{% for part in message['content'] %}{% if part['type'] == 'image' %}IMAGE"
            "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=1024, tie_word_embeddings=False)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=28,
              patch_size=7)


def _spread(model, seed: int) -> None:
    """Random init gives near-uniform outputs; spread the weights so that rewards (and the image's
    effect on them) differ clearly."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and not p.any():  # Gemma 3 initialises its image projection to zeros
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif p.dim() > 1:
                p.mul_(4.0)


def _save(model, processor, folder: Path) -> Path:
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def idefics3(root: Path, seed: int = 0) -> Path:
    """Idefics3ForConditionalGeneration (a Llama text model, one 28x28 image = 4 image tokens)."""
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
    )

    tok = build_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<fake_token_around_image>", "<image>",
                                                          "<end_of_utterance>", "<global-img>"]})
    processor = Idefics3Processor(
        image_processor=Idefics3ImageProcessorPil(size={"longest_edge": 28}, max_image_size={"longest_edge": 28},
                                                  do_image_splitting=False),
        tokenizer=tok, image_seq_len=4, chat_template=TEMPLATE.replace("IMAGE", "<image>"))
    config = Idefics3Config(text_config=dict(model_type="llama", vocab_size=len(tok), pad_token_id=tok.pad_token_id,
                                             **TEXT),
                            vision_config=VISION, scale_factor=2, image_token_id=tok.convert_tokens_to_ids("<image>"),
                            tie_word_embeddings=False, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config)
    _spread(model, seed)
    return _save(model, processor, root / f"idefics3-{seed}")


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
    _spread(model, seed)
    return _save(model, processor, root / f"gemma3-{head}-{seed}")


def linear_head(path: Path, hidden: int = 32, seed: int = 0) -> Path:
    """A head file for the ``linear`` kind: ``weight`` (H,) and ``bias``."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    save_file({"weight": torch.randn(hidden, generator=g), "bias": torch.tensor([0.25])}, str(path))
    return path


def png(path: Path, seed: int, size: tuple[int, int] = (20, 30)) -> Path:
    """A random RGB PNG (height, width ``size``)."""
    import numpy as np
    from PIL import Image

    pixels = (np.random.default_rng(seed).random((*size, 3)) * 255).astype("uint8")
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format="PNG")
    return path
