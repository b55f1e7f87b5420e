"""``generative``: a generative verifier (EX-GRM of arXiv 2507.07981).

The LM reads a verification prompt and the reward is P("Yes") for its next token (softmax over
the whole vocabulary at the last position), or ``score: log_odds`` = log P(Yes) - log P(No).
The default prompt is the paper's::

    Question: {question}
    Answer: {answer}
    Verification: Is the answer correct (Yes/No)?

Override it with ``prompt_template`` (``{question}`` and ``{answer}`` are filled in). With a
chat template the prompt is the user's turn and the model answers as the assistant, so "Yes"
is the first token of the reply; in plain mode it continues the text, so " Yes" (with a space)
is the default token there. ``yes_token``/``no_token`` override them; each must be one token.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest, Truncation
from rmbench.models.hf import Encoding, Formatter, HFRewardModel, load_weights
from rmbench.models.seqcls import last_token_index

DEFAULT_TEMPLATE = "Question: {question}\nAnswer: {answer}\nVerification: Is the answer correct (Yes/No)?"


class GenerativeRM(HFRewardModel):
    kind = "generative"
    description = "generative verifier: P('Yes') after 'Is the answer correct (Yes/No)?'"

    def __init__(self, model: str, runtime: Runtime | None = None, revision: str | None = None,
                 prompt_template: str = DEFAULT_TEMPLATE, score: str = "p_yes", yes_token: str | None = None,
                 no_token: str | None = None, template: str = "auto", system_prompt: str | None = None,
                 max_length: int | None = None, truncation: Truncation | None = None) -> None:
        super().__init__(model, runtime, revision, template, system_prompt, max_length, truncation)
        if score not in ("p_yes", "log_odds"):
            raise ConfigError(f"score must be 'p_yes' or 'log_odds', got {score!r}")
        try:
            prompt_template.format(question="q", answer="a")
        except (KeyError, IndexError) as exc:
            raise ConfigError(f"prompt_template may use only {{question}} and {{answer}}: "
                              f"unknown field {exc}") from None
        self.prompt_template, self.score_kind = prompt_template, score
        self._yes_no = (yes_token, no_token)
        self._answer_ids: tuple[int, int] | None = None

    def _load_weights(self):
        from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

        auto = AutoModelForCausalLM if self.vision is None else AutoModelForImageTextToText
        return load_weights(auto, self.model_name, self.source, self.runtime, self.dtype, self.device,
                            kind=self.kind)

    @property
    def answer_tokens(self) -> tuple[str, str]:
        """The "Yes" and "No" tokens: with a chat template the first token of the reply, in
        plain mode a continuation (" Yes", with a space), unless given."""
        space = "" if self.vision is not None or self.formatter.chat else " "
        yes, no = self._yes_no
        return yes or f"{space}Yes", no or f"{space}No"

    @property
    def answer_ids(self) -> tuple[int, int]:
        if self._answer_ids is None:
            yes, no = self.answer_tokens
            self._answer_ids = (self._single_token(yes), self._single_token(no))
        return self._answer_ids

    def _single_token(self, text: str) -> int:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) != 1:
            raise ConfigError(f"{text!r} is {len(ids)} tokens for this tokenizer; give yes_token/no_token that are "
                              f"single tokens")
        return ids[0]

    @property
    def backbone(self):
        return self.model.base_model

    def _questions(self, batch: Sequence[ScoreRequest]) -> list[str]:
        return [self.prompt_template.format(question=Formatter.plain_prompt(r.prompt), answer=r.response)
                for r in batch]

    def _texts(self, batch: Sequence[ScoreRequest]) -> list[str]:
        return [self.formatter.user_turn(q) for q in self._questions(batch)]

    def _encode(self, batch: Sequence[ScoreRequest]) -> Encoding:
        if self.vision is not None:  # the prompt's images, then the question, as one user turn
            return self.vision.encode(batch, self._questions(batch))
        return self.front.encode(self._texts(batch))

    def _head(self, enc: Encoding, hidden) -> np.ndarray:
        import torch

        yes_id, no_id = self.answer_ids
        idx = last_token_index(enc.attention_mask.to(hidden.device))
        logits = self.model.get_output_embeddings()(hidden[torch.arange(hidden.shape[0]), idx]).float()
        softcap = getattr(self.model.config.get_text_config(), "final_logit_softcapping", None)
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        logp = torch.log_softmax(logits, dim=-1)
        yes, no = logp[:, yes_id].double(), logp[:, no_id].double()
        value = yes.exp() if self.score_kind == "p_yes" else yes - no
        return value.cpu().numpy()
