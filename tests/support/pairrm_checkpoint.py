"""A tiny random PairRM checkpoint in LLM-Blender's transformers layout (``DebertaV2PairRM``, as
``llm-blender/PairRM-hf``), built from a config with no download, and the plain loop that scores a
comparison with it by hand: a test helper, not a test file.

The layout: a DeBERTa-v2 config.json with the three prefix ids and ``n_tasks``; weights
``pretrained_model.*`` (a ``DebertaV2Model``) and ``head_layer.{1,4}.*`` (the two linear layers of
dropout, linear, tanh, dropout, linear); a WordPiece tokenizer ([CLS] ... [SEP], trained here) with
``<|source|>``, ``<|candidate1|>``, ``<|candidate2|>`` and ``<|candidate|>`` added as tokens, as
LLM-Blender adds them.
"""

from __future__ import annotations

from pathlib import Path

PREFIXES = ("<|source|>", "<|candidate1|>", "<|candidate2|>", "<|candidate|>")
CORPUS = [
    "Pick a number between 1 and 10. The answer is 7. Name a primary color: red, blue, yellow.",
    "Finish the following coversation in each i-th turn by filling in <Response i> with your response.",
    "USER: Assistant: Response The capital of France is Paris. London is in England. Hello there, how are you?",
    "0 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n o p q r s t u v w x y z : < > |",
]


def build_tokenizer():
    from tokenizers import BertWordPieceTokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    wordpiece = BertWordPieceTokenizer(lowercase=True)
    wordpiece.train_from_iterator(CORPUS * 20, vocab_size=300, min_frequency=1,
                                  special_tokens=["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
    cls, sep = wordpiece.token_to_id("[CLS]"), wordpiece.token_to_id("[SEP]")
    wordpiece._tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                             special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    tok = PreTrainedTokenizerFast(tokenizer_object=wordpiece._tokenizer, cls_token="[CLS]", sep_token="[SEP]",
                                  pad_token="[PAD]", unk_token="[UNK]", mask_token="[MASK]", model_max_length=512)
    tok.add_tokens(list(PREFIXES))
    return tok


def build_pairrm(folder: Path, seed: int = 0, n_tasks: int = 2, spread: float = 6.0, head_spread: float = 40.0) -> Path:
    """Save a tiny random PairRM to ``folder`` (config, model.safetensors, tokenizer) and return it."""
    import torch
    from safetensors.torch import save_file
    from torch import nn
    from transformers import DebertaV2Config, DebertaV2Model

    tok = build_tokenizer()
    ids = tok.convert_tokens_to_ids(list(PREFIXES))
    config = DebertaV2Config(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=64, max_position_embeddings=512, relative_attention=True,
                             position_buckets=32, max_relative_positions=-1, pos_att_type=["p2c", "c2p"],
                             position_biased_input=False, type_vocab_size=0, pad_token_id=tok.pad_token_id,
                             hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)
    config.architectures = ["DebertaV2PairRM"]
    config.n_tasks, config.drop_out = n_tasks, 0.05
    config.source_prefix_id, config.cand1_prefix_id, config.cand2_prefix_id, config.cand_prefix_id = ids
    config.sep_token_id = tok.sep_token_id
    torch.manual_seed(seed)
    encoder = DebertaV2Model(config)
    head = nn.Sequential(nn.Dropout(0.05), nn.Linear(64, 32), nn.Tanh(), nn.Dropout(0.05), nn.Linear(32, n_tasks))
    with torch.no_grad():  # random init gives near-equal outputs; spread the weights so logits differ clearly
        for p in encoder.parameters():
            p.mul_(spread) if p.dim() > 1 else None
        for p in head.parameters():
            p.mul_(head_spread) if p.dim() > 1 else None
    state = {f"pretrained_model.{k}": v.contiguous() for k, v in encoder.state_dict().items()}
    state.update({f"head_layer.{k}": v.contiguous() for k, v in head.state_dict().items()})
    folder.mkdir(parents=True, exist_ok=True)
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


class HandPairRM:
    """The checkpoint's encoder and head, run on one unpadded input at a time (the test's own loop)."""

    def __init__(self, folder: Path) -> None:
        import torch
        from safetensors.torch import load_file
        from transformers import AutoTokenizer, DebertaV2Config, DebertaV2Model

        self.tok = AutoTokenizer.from_pretrained(folder)
        self.config = DebertaV2Config.from_pretrained(folder)
        state = load_file(str(folder / "model.safetensors"))
        self.encoder = DebertaV2Model(self.config).eval()
        self.encoder.load_state_dict({k[len("pretrained_model."):]: v for k, v in state.items()
                                      if k.startswith("pretrained_model.")})
        self.head = [(state[f"head_layer.{i}.weight"], state[f"head_layer.{i}.bias"]) for i in (1, 4)]
        self.torch = torch

    def ids(self, source, first, second, source_max=1224, candidate_max=412):
        """tokenize_pair's rule, written out: source, then each candidate with half the room left."""
        src = self.tok.encode("<|source|>" + source, max_length=source_max, truncation=True)
        room = (source_max + 2 * candidate_max - len(src)) // 2
        one = self.tok.encode("<|candidate1|>" + first, max_length=room, truncation=True)
        two = self.tok.encode("<|candidate2|>" + second, max_length=room, truncation=True)
        return src + one + two

    def logit(self, source, first, second, **limits) -> float:
        """L(first, second): mean over tasks of head(source, first) - head(source, second)."""
        torch = self.torch
        ids = self.ids(source, first, second, **limits)
        with torch.no_grad():
            hidden = self.encoder(input_ids=torch.tensor([ids])).last_hidden_state[0]
            at = [ids.index(getattr(self.config, name)) for name in ("source_prefix_id", "cand1_prefix_id",
                                                                      "cand2_prefix_id")]

            def head(x):
                (w1, b1), (w2, b2) = self.head
                return torch.tanh(x @ w1.T + b1) @ w2.T + b2

            left = head(torch.cat([hidden[at[0]], hidden[at[1]]]))
            right = head(torch.cat([hidden[at[0]], hidden[at[2]]]))
        return float((left - right).mean())

    def rewards(self, source, candidates, **limits) -> list[float]:
        """r_i = (1/n) sum_{j != i} [L(i, j) - L(j, i)], every ordered pair run on its own."""
        n = len(candidates)
        L = [[0.0 if i == j else self.logit(source, candidates[i], candidates[j], **limits) for j in range(n)]
             for i in range(n)]
        return [sum(L[i][j] - L[j][i] for j in range(n) if j != i) / n for i in range(n)]
