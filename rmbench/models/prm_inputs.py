"""How each family of transformers process reward models reads a solution: the token ids of
one (problem, steps) request and the position of each step's score in them, per style, and
which style a checkpoint is.

Styles (``--model-arg style=``), each as its authors' own code feeds the model:

* ``trl``: a ``*ForTokenClassification`` with 2 labels trained by TRL's ``PRMTrainer``
  (``PRMTrainer.tokenize_row``): ``[bos] + ids(problem) + sum_i (ids(step_i) + ids(sep))``, each
  part tokenised apart without special tokens (the BOS only where the tokenizer has one); step i's
  label sits on the last token of ``ids(step_i) + ids(sep)``. ``sep``: TRL's ``step_separator``
  (default ``"\\n"``).
* ``qwen``: Qwen2.5-Math-PRM (``Qwen2ForProcessRewardModel``, its model card's code): the chat
  template over ``system: QWEN_SYSTEM``, ``user: problem``, ``assistant: "<extra_0>".join(steps) +
  "<extra_0>"``, encoded whole (``tokenizer.encode``); the scores sit at the ``<extra_0>`` tokens.
* ``math_shepherd``: Math-Shepherd (``peiyi9979/math-shepherd-mistral-7b-prm``, its model card's
  code): ``f"{problem} {output}"`` with ``output = "\\n".join(f"{step} ки" for step in steps)``,
  encoded whole with the tokenizer's special tokens; the scores sit at the ``ки`` tokens (the
  last token of ``encode("ки")``), read from the LM logits of ``"+"`` and ``"-"``
  (``encode("+ -")`` without special tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rmbench.errors import ConfigError, ModelError
from rmbench.models.step_model import StepRequest

PRMStyle = Literal["trl", "qwen", "math_shepherd"]
PRM_STYLES: tuple[PRMStyle, ...] = ("trl", "qwen", "math_shepherd")

TRL_SEPARATOR = "\n"
"""TRL's default ``PRMConfig.step_separator``."""
QWEN_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
QWEN_STEP_TOKEN = "<extra_0>"
SHEPHERD_TAG, SHEPHERD_GOOD, SHEPHERD_BAD = "ки", "+", "-"


@dataclass(frozen=True)
class PRMInput:
    """One solution as the model reads it: its token ids and, per step, the index of the token
    whose output scores that step."""

    ids: tuple[int, ...]
    positions: tuple[int, ...]

    def truncated(self, max_length: int | None, side: str, where: str) -> PRMInput:
        """The input cut to ``max_length`` tokens from ``side`` (``left``: the start of the
        problem goes), or a ModelError when a step's score token would go with it."""
        if max_length is None or len(self.ids) <= max_length:
            return self
        cut = len(self.ids) - max_length if side == "left" else 0
        kept = [p - cut for p in self.positions]
        if any(p < 0 or p >= max_length for p in kept):
            raise ModelError(f"{where} is {len(self.ids)} tokens and --max-length {max_length} (--truncation {side}) "
                             f"would cut off a step's score token; raise --max-length")
        ids = self.ids[cut:cut + max_length]
        return PRMInput(ids, tuple(kept))


def check_style(name: str | None) -> PRMStyle | None:
    if name is None:
        return None
    for style in PRM_STYLES:
        if name == style:
            return style
    raise ConfigError(f"--model-arg style must be one of {', '.join(PRM_STYLES)}, got {name!r}")


def detect_style(model: str, config: Any, tokenizer: Any) -> PRMStyle:
    """The style a checkpoint declares: ``qwen`` for a ``*ForProcessRewardModel`` whose tokenizer
    has ``<extra_0>``; ``trl`` for a ``*ForTokenClassification`` with 2 labels; else a ConfigError
    asking for ``--model-arg style`` (a Math-Shepherd checkpoint is a plain causal LM: it says
    nothing of its style)."""
    architectures = list(getattr(config, "architectures", None) or [])
    # the config alone first: the tokenizer is read only for a *ForProcessRewardModel
    if any(a.endswith("ForProcessRewardModel") for a in architectures) and QWEN_STEP_TOKEN in tokenizer.get_vocab():
        return "qwen"
    if any(a.endswith("ForTokenClassification") for a in architectures) and getattr(config, "num_labels", 0) == 2:
        return "trl"
    raise ConfigError(f"model {model!r}: its checkpoint (architectures {', '.join(architectures) or 'unknown'}) "
                      f"does not say which PRM it is; name it with --model-arg style=trl|qwen|math_shepherd")


def trl_input(tokenizer: Any, request: StepRequest, separator: str) -> PRMInput:
    """TRL's ``PRMTrainer.tokenize_row`` (module docstring)."""
    ids = list(tokenizer(request.problem, add_special_tokens=False)["input_ids"])
    if tokenizer.bos_token_id is not None:
        ids = [tokenizer.bos_token_id] + ids
    sep_ids = list(tokenizer.encode(separator, add_special_tokens=False))
    positions = []
    for step in request.steps:
        ids += list(tokenizer(step, add_special_tokens=False)["input_ids"]) + sep_ids
        positions.append(len(ids) - 1)
    return PRMInput(tuple(ids), tuple(positions))


def _tagged(ids: Sequence[int], tag_id: int, request: StepRequest, what: str) -> PRMInput:
    positions = tuple(i for i, t in enumerate(ids) if t == tag_id)
    if len(positions) != len(request.steps):
        where = f"solution {request.group_id!r}" if request.group_id else "a solution"
        raise ModelError(f"{where} encodes to {len(positions)} {what} tokens for {len(request.steps)} steps; "
                         f"its text holds {what} itself")
    return PRMInput(tuple(ids), positions)


def qwen_input(tokenizer: Any, request: StepRequest) -> PRMInput:
    """Qwen2.5-Math-PRM's model card (module docstring)."""
    messages = [{"role": "system", "content": QWEN_SYSTEM}, {"role": "user", "content": request.problem},
                {"role": "assistant", "content": QWEN_STEP_TOKEN.join(request.steps) + QWEN_STEP_TOKEN}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    step_id = tokenizer.encode(QWEN_STEP_TOKEN)[0]
    return _tagged(tokenizer.encode(text), step_id, request, QWEN_STEP_TOKEN)


def shepherd_input(tokenizer: Any, request: StepRequest) -> PRMInput:
    """Math-Shepherd's model card (module docstring)."""
    output = "\n".join(f"{step} {SHEPHERD_TAG}" for step in request.steps)
    tag_id = tokenizer.encode(SHEPHERD_TAG)[-1]
    return _tagged(tokenizer.encode(f"{request.problem} {output}"), tag_id, request, SHEPHERD_TAG)


def shepherd_candidates(tokenizer: Any) -> tuple[int, int]:
    """The token ids of ``"+"`` and ``"-"`` (``encode("+ -")`` without special tokens)."""
    ids = tokenizer.encode(f"{SHEPHERD_GOOD} {SHEPHERD_BAD}", add_special_tokens=False)
    if len(ids) != 2:
        raise ConfigError(f"style math_shepherd: the tokenizer encodes '+ -' to {len(ids)} tokens, not 2 (one for "
                          f"'+', one for '-'); is this a Math-Shepherd PRM?")
    return int(ids[0]), int(ids[1])


def prm_input(style: PRMStyle, tokenizer: Any, request: StepRequest, separator: str) -> PRMInput:
    if style == "trl":
        return trl_input(tokenizer, request, separator)
    if style == "qwen":
        return qwen_input(tokenizer, request)
    return shepherd_input(tokenizer, request)
