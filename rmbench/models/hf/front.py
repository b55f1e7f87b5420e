"""The tokenizer front-end every Hugging Face-tokenised adapter shares (transformers and vLLM):
the tokenizer, loaded on first use; rendering; truncation; token and prefix lengths; and
encoding texts into an :class:`~rmbench.models.hf.encoding.Encoding`."""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.core.choices import PaddingSide
from rmbench.models.base import Runtime, ScoreRequest, Truncation
from rmbench.models.hf.encoding import Encoding
from rmbench.models.hf.loading import ModelSource, load_tokenizer
from rmbench.models.hf.rendering import Formatter, response_boundary, response_token_positions, shareable_prefix


class TokenizerFront:
    """Tokenises for one adapter. Nothing loads until a text is tokenised, so building an
    adapter (and taking its identity) reads no tokenizer; ``padding_side`` is the adapter's."""

    def __init__(self, model: str, source: ModelSource, runtime: Runtime, template: str = "auto",
                 system_prompt: str | None = None, truncation: Truncation = Truncation(),
                 padding_side: PaddingSide = "right") -> None:
        self.model_name, self.source, self.runtime = model, source, runtime
        self.template, self.system_prompt = template, system_prompt
        self.truncation, self.padding_side = truncation, padding_side
        self._tokenizer = None
        self._formatter: Formatter | None = None
        self._measured: dict[tuple, tuple[int, int]] = {}
        self._lengths: dict[str, int] = {}

    @property
    def loaded(self) -> bool:
        return self._tokenizer is not None

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            self.adopt(load_tokenizer(self.model_name, self.source, self.runtime))
        return self._tokenizer

    def adopt(self, tok) -> None:
        """Tokenise with ``tok`` (set to this front's padding and truncation sides): the loaded
        tokenizer, or the one a model in memory was trained with (:mod:`rmbench.models.live`)."""
        tok.padding_side = self.padding_side
        tok.truncation_side = self.truncation.side
        self._formatter = Formatter(tok, self.template, self.system_prompt)
        self._tokenizer = tok

    @property
    def formatter(self) -> Formatter:
        self.tokenizer  # noqa: B018 - loads it, and the formatter with it
        assert self._formatter is not None
        return self._formatter

    def full_texts(self, batch: Sequence[ScoreRequest]) -> list[str]:
        return [self.formatter.context_and_full(r.prompt, r.response)[1] for r in batch]

    def tokenize(self, texts: list[str], with_offsets: bool = False):
        """The tokenizer's output for ``texts`` (padded tensors, truncation applied)."""
        limit = self.truncation.max_length
        return self.tokenizer(texts, add_special_tokens=self.formatter.add_special_tokens, padding=True,
                              truncation=limit is not None, max_length=limit, return_tensors="pt",
                              return_offsets_mapping=with_offsets)

    def encode(self, texts: list[str]) -> Encoding:
        enc = self.tokenize(texts)
        mask = enc["attention_mask"]
        return Encoding(enc["input_ids"], mask, (mask.cumsum(-1) - 1).clamp(min=0))

    def encode_responses(self, batch: Sequence[ScoreRequest], share: bool) -> Encoding:
        """Each (prompt, response) rendered once and tokenised with truncation, with the indices
        of the response's tokens per row; ``share``: rows may share what precedes the token that
        predicts their first response token."""
        pairs = [self.formatter.context_and_full(r.prompt, r.response) for r in batch]
        enc = self.tokenize([full for _, full in pairs], with_offsets=True)
        mask = enc["attention_mask"]
        positions = tuple(tuple(response_token_positions(enc["offset_mapping"][i].tolist(), mask[i].tolist(),
                                                         response_boundary(context, full)))
                          for i, (context, full) in enumerate(pairs))
        shared = tuple(shareable_prefix(p) for p in positions) if share else None
        return Encoding(enc["input_ids"], mask, (mask.cumsum(-1) - 1).clamp(min=0), positions, shared)

    def measure(self, request: ScoreRequest) -> tuple[int, int]:
        """(tokens of the whole text, tokens before the one that predicts the response's first
        token), untruncated: what batching plans with."""
        key = (request.prompt, request.response)
        if key not in self._measured:
            context, full = self.formatter.context_and_full(request.prompt, request.response)
            enc = self.tokenizer(full, add_special_tokens=self.formatter.add_special_tokens,
                                 return_offsets_mapping=True)
            n = len(enc["input_ids"])
            positions = response_token_positions(enc["offset_mapping"], [1] * n, response_boundary(context, full))
            self._measured[key] = (n, shareable_prefix(positions))
        return self._measured[key]

    def text_lengths(self, texts: Sequence[str]) -> list[int]:
        """Untruncated tokens of each text (remembered)."""
        out = []
        for text in texts:
            if text not in self._lengths:
                ids = self.tokenizer(text, add_special_tokens=self.formatter.add_special_tokens)["input_ids"]
                self._lengths[text] = len(ids)
            out.append(self._lengths[text])
        return out
