"""Tiny random transformers models and a locally trained tokenizer, saved as real HF folders."""

from __future__ import annotations

from pathlib import Path

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

CORPUS = [
    "Pick a number between 1 and 10. The answer is 7. Name a primary color: red, blue, yellow.",
    "Question: Answer: Verification: Is the answer correct (Yes/No)? Yes No yes no",
    "The capital of France is Paris. London is in England. Hello there, how are you today?",
    "user assistant system 0 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n o p q r s t u v w x y z",
]


def build_tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 20, vocab_size=400, min_frequency=1,
                            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<|im_end|>", pad_token="<|im_end|>",
                                  unk_token="<|endoftext|>")
    tok.add_tokens(["Yes", "No", " Yes", " No"])
    tok.chat_template = CHATML
    return tok


def build_folder(root: Path, kind: str, seed: int = 0) -> Path:
    """kind: causal, seqcls or bert. Returns the saved folder."""
    import torch
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification

    tok = build_tokenizer()
    torch.manual_seed(seed)
    folder = root / f"{kind}-{seed}"
    if kind == "bert":
        config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, max_position_embeddings=256, pad_token_id=tok.pad_token_id)
        model = BertModel(config)
    else:
        config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                             tie_word_embeddings=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id, bos_token_id=None)
        if kind == "seqcls":
            config.num_labels = 1
            model = LlamaForSequenceClassification(config)
        else:
            model = LlamaForCausalLM(config)
        # Random init gives near-uniform outputs; spread the weights so rewards differ clearly.
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(8.0) if p.dim() > 1 else None
    model.eval()
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
