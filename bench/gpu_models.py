"""The GPU benchmark's inputs (bench/gpu.py): random-weight models of real shapes built on the
device, a tokenizer trained on the shipped tasks' texts, and a RewardBench-2-shaped workload whose
lengths are drawn from the shipped tasks'; and rmbench's own adapters on those weights."""

from __future__ import annotations

import json
import random
from pathlib import Path

from rmbench.core.types import ComparisonGroup
from rmbench.models.base import Runtime
from rmbench.models.implicit import ImplicitRM
from rmbench.models.seqcls import SeqClsRM

DATA = Path(__file__).resolve().parent.parent / "tasks" / "data"
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA = dict(num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072,
             rope_theta=500000.0, rms_norm_eps=1e-5)
SHAPES = {
    "1b": dict(LLAMA, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, tie_word_embeddings=True),
    "8b": dict(LLAMA, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, tie_word_embeddings=False),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=False),
}


# --- tokenizer and workload ------------------------------------------------------------------
def shipped_texts() -> tuple[list[str], list[str]]:
    """(prompts, answers) of every shipped task file."""
    prompts, answers = [], []
    for path in sorted(DATA.rglob("*.jsonl")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            prompt = row.get("prompt") or row.get("question")
            if isinstance(prompt, str):
                prompts.append(prompt)
            for key in ("chosen", "rejected", "answer_matching_behavior", "answer_not_matching_behavior"):
                value = row.get(key)
                answers += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v,
                                                                                                     str) and v.strip()]
    return prompts, answers


def build_tokenizer(texts: list[str], vocab: int):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=vocab, min_frequency=1, show_progress=False,
                            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|im_end|>", pad_token="<|pad|>",
                                  unk_token="<|endoftext|>")
    tok.chat_template = CHATML
    return tok


def workload(tok, n_groups: int, seed: int = 0, prompt_draws: int = 1) -> list[ComparisonGroup]:
    """``n_groups`` groups of 4 answers; each text's length in tokens is drawn from the shipped
    prompts' (or answers') lengths, and the text is made of shipped words to exactly that length.
    ``prompt_draws``: a prompt as long as that many drawn prompts together (long contexts, where
    the prompt KV reuse has most to save)."""
    prompts, answers = shipped_texts()
    p_len = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in prompts]
    a_len = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in answers]
    words = sorted({w for t in prompts + answers for w in t.split()})
    cost = {w: len(tok(" " + w, add_special_tokens=False)["input_ids"]) for w in words}
    singles = [w for w in words if cost[w] == 1]
    rng = random.Random(seed)

    def text(n: int) -> str:
        out, left = [], n
        while left > 0:
            w = rng.choice(words)
            if cost[w] > left:
                w = rng.choice(singles)
            out.append(w)
            left -= cost[w]
        return " ".join(out)

    return [ComparisonGroup(f"g{i}", text(sum(rng.choice(p_len) for _ in range(prompt_draws))),
                            [text(rng.choice(a_len)) for _ in range(4)], [1, 0, 0, 0]) for i in range(n_groups)]


# --- models ------------------------------------------------------------------------------------
def build_model(shape: str, family: str, tok, device: str, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

    cfg = dict(SHAPES[shape])
    if shape == "tiny":
        cfg["vocab_size"] = len(tok)
    config = LlamaConfig(**cfg, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None,
                         num_labels=1)
    torch.manual_seed(0)
    cls = LlamaForSequenceClassification if family == "seqcls" else LlamaForCausalLM
    with torch.device(device):
        model = cls._from_config(config, dtype=dtype)
    return model.eval()


def folder_for(root: Path, config, tok) -> Path:
    """A model folder with the config and tokenizer only: the adapters read both from it; the
    weights are the ones built on the device (:func:`adapter`)."""
    folder = root / f"{config.architectures[0] if config.architectures else 'llama'}-{config.hidden_size}"
    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def adapter(family: str, folder: Path, weights, runtime: Runtime, reuse: bool):
    """rmbench's own adapter for ``family`` on ``folder``, its weights the ones already built
    (loading them is the one step skipped), with or without prompt KV reuse."""
    base = SeqClsRM if family == "seqcls" else ImplicitRM

    class Prebuilt(base):  # type: ignore[misc, valid-type]
        def _load_weights(self):
            if family == "seqcls":
                self.head = weights.score
            return weights

    if not reuse:
        Prebuilt.shares_prefix = False  # every text runs whole
    return Prebuilt(str(folder), runtime=runtime)
