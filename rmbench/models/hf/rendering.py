"""Rendering (prompt, response) as text for a tokenizer, and finding the response's tokens."""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.core.types import Prompt, prompt_to_json
from rmbench.errors import ConfigError


class Formatter:
    """Renders prompts and responses as text for a tokenizer.

    ``template``: ``chat`` applies the tokenizer's chat template (the response becomes the
    assistant turn, so the template's end-of-turn tokens belong to it); ``plain`` writes the
    prompt, a blank line and the response; ``auto`` picks ``chat`` when there is a template.
    Chat-template text already holds its special tokens, so it is tokenised without adding any
    (no double BOS); plain text gets the tokenizer's usual ones.
    """

    def __init__(self, tokenizer, template: str = "auto", system_prompt: str | None = None) -> None:
        check_template(template)
        has_chat = bool(getattr(tokenizer, "chat_template", None))
        if template == "chat" and not has_chat:
            raise ConfigError("template 'chat' asked for, but the tokenizer has no chat template")
        self.tokenizer = tokenizer
        self.chat = has_chat if template == "auto" else template == "chat"
        self.system_prompt = system_prompt

    @property
    def add_special_tokens(self) -> bool:
        return not self.chat

    def messages(self, prompt: Prompt) -> list[dict]:
        msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt_to_json(prompt)
        if self.system_prompt is not None and msgs[0]["role"] != "system":
            msgs = [{"role": "system", "content": self.system_prompt}] + msgs
        return msgs

    @staticmethod
    def plain_prompt(prompt: Prompt) -> str:
        if isinstance(prompt, str):
            return prompt
        return "\n\n".join(m.content for m in prompt)

    def context_and_full(self, prompt: Prompt, response: str) -> tuple[str, str]:
        """(text before the response, whole text); the response starts where they part."""
        if not self.chat:
            context = self.plain_prompt(prompt) + "\n\n"
            return context, context + response
        msgs = self.messages(prompt)
        context = self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        full = self.tokenizer.apply_chat_template(msgs + [{"role": "assistant", "content": response}], tokenize=False)
        return context, full

    def user_turn(self, text: str) -> str:
        """One user message ready for the assistant's reply (the generative RM's prompt)."""
        if not self.chat:
            return text
        return self.tokenizer.apply_chat_template(self.messages(text), tokenize=False, add_generation_prompt=True)


def check_template(template: str) -> None:
    if template not in ("auto", "chat", "plain"):
        raise ConfigError(f"template must be auto, chat or plain, got {template!r}")


def response_boundary(context: str, full: str) -> int:
    """Character offset where the response starts: after the context's last non-whitespace
    character (the longest common prefix when the template rewrites the context).

    Trailing whitespace of the context (the newline after a chat template's assistant header)
    belongs to the response, as in lm-evaluation-harness, which moves it into the continuation
    to keep word-boundary tokenisation: so the ``implicit`` and ``lmeval`` adapters score the
    same tokens.
    """
    n = len(context)
    if not full.startswith(context):
        n = 0
        for a, b in zip(context, full):
            if a != b:
                break
            n += 1
    return len(full[:n].rstrip())


def response_token_positions(offsets, attention_mask, boundary: int) -> list[int]:
    """Indices of the tokens that hold any character at or after ``boundary``."""
    return [j for j, ((start, end), m) in enumerate(zip(offsets, attention_mask))
            if m and end > boundary and end > start]


def shareable_prefix(positions: Sequence[int]) -> int:
    """Tokens before the one that predicts the response's first token (``positions``: the
    response's token indices): what the texts of one prompt can share (rmbench.models.prefix)."""
    return max(positions[0] - 1, 0) if positions else 0
