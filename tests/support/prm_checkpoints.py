"""Tiny random-weight process reward models of each ``prm:`` style, saved as real HF folders
(no download): a TRL token classifier, a Qwen2.5-Math-PRM look-alike with its own modeling code
(loaded through ``auto_map`` with trust_remote_code, as the real checkpoint is), and a
Math-Shepherd causal LM whose tokenizer adds a BOS and a prefix space, as Mistral's does."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.tiny_models import CHATML, CORPUS

PRM_CORPUS = CORPUS + ["Step 1: 2 + 3 = 5 ки\nStep 2: 5 - 1 = 4 ки + - + - ки", "<extra_0> Please reason step by step"]

QWEN_MODELING = '''
from torch import nn
from transformers import Qwen2Model, Qwen2PreTrainedModel
from transformers.modeling_outputs import SequenceClassifierOutputWithPast


class Qwen2ForProcessRewardModel(Qwen2PreTrainedModel):
    """A Qwen2 backbone and Qwen2.5-Math-PRM's head: Linear(H, H), ReLU, Linear(H, 2) on every token."""

    def __init__(self, config):
        super().__init__(config)
        self.num_labels = config.num_labels
        self.model = Qwen2Model(config)
        self.score = nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.ReLU(),
                                   nn.Linear(config.hidden_size, config.num_labels))
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None, use_cache=None,
                **kwargs):
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                            inputs_embeds=inputs_embeds, use_cache=use_cache).last_hidden_state
        return SequenceClassifierOutputWithPast(logits=self.score(hidden))
'''


def _tokenizer(prefix_space: bool = False, bos: bool = False):
    from tokenizers import ByteLevelBPETokenizer, processors
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer(add_prefix_space=prefix_space)
    bpe.train_from_iterator(PRM_CORPUS * 20, vocab_size=420, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>"])
    if bos:  # Mistral's tokenizer puts <s> before every text it encodes
        bpe._tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", bpe.token_to_id("<s>"))])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|im_end|>", pad_token="<|im_end|>",
                                  unk_token="<|endoftext|>", bos_token="<s>" if bos else None)
    tok.chat_template = CHATML
    return tok


def _spread(model, factor: float) -> None:
    """Random init gives near-uniform outputs; spread the weights so step scores differ."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(factor)


def _llama_config(tok, **extra):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                       tie_word_embeddings=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                       bos_token_id=tok.bos_token_id, **extra)


def build_trl(root: Path, seed: int = 0, step_separator: str | None = None) -> Path:
    """A LlamaForTokenClassification with 2 labels, as TRL's PRMTrainer trains (a tokenizer with a BOS)."""
    import torch
    from transformers import LlamaForTokenClassification

    tok = _tokenizer(bos=True)
    torch.manual_seed(seed)
    model = LlamaForTokenClassification(_llama_config(tok, num_labels=2))
    _spread(model, 3.0)
    if step_separator is not None:
        model.config.step_separator = step_separator
    folder = root / f"trl-{seed}"
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_qwen(root: Path, seed: int = 0) -> Path:
    """A Qwen2ForProcessRewardModel from its own modeling file in the folder (``auto_map``)."""
    import importlib.util

    import torch
    from transformers import Qwen2Config

    folder = root / f"qwen-{seed}"
    folder.mkdir(parents=True)
    (folder / "modeling_tiny_prm.py").write_text(QWEN_MODELING)
    spec = importlib.util.spec_from_file_location(f"modeling_tiny_prm_{seed}", folder / "modeling_tiny_prm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tok = _tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<extra_0>"]})
    config = Qwen2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=False, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                         num_labels=2)
    torch.manual_seed(seed)
    model = module.Qwen2ForProcessRewardModel(config)
    _spread(model, 3.0)
    _spread(model.score[2], 4.0)  # the head's small init would leave every step near the same score
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    path = folder / "config.json"
    saved = json.loads(path.read_text())
    saved["architectures"] = ["Qwen2ForProcessRewardModel"]
    saved["auto_map"] = {"AutoModel": "modeling_tiny_prm.Qwen2ForProcessRewardModel"}
    path.write_text(json.dumps(saved, indent=2))
    return folder


def build_shepherd(root: Path, seed: int = 0) -> Path:
    """A LlamaForCausalLM whose tokenizer, like Mistral's, adds <s> and a prefix space."""
    import torch
    from transformers import LlamaForCausalLM

    tok = _tokenizer(prefix_space=True, bos=True)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(_llama_config(tok))
    _spread(model, 3.0)
    folder = root / f"shepherd-{seed}"
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
