"""ProcessBench's two ways of asking a chat model about the steps of a solution, as pure functions.

From QwenLM/ProcessBench at e802463 (``code/``):

* **a chat PRM answering ``+``/``-`` per step** (``run_eval_prm_rlhflow.py``, RLHFlow's PRMs):
  the conversation is one user turn per step, the first with the problem prepended
  (``problem + "\\n\\n" + step``), each earlier step followed by the assistant turn ``"+"``
  (:func:`step_messages`). The script asks after each step (``n=1, temperature=0.,
  max_tokens=1``) and reads the reply as ``+`` when ``content.strip().lower().startswith('+')``,
  else ``-`` (:func:`parse_step`); over an API that returns ``top_logprobs``,
  :func:`plus_probability` reads P(+) from the first generated token's alternatives, normalised
  over ``+`` and ``-`` as RLHFlow's PRMs are read from the two tokens' logits;
* **a critic naming the earliest wrong paragraph** (``run_eval.py`` with
  ``templates/critique_template.txt``): the steps tagged ``<paragraph_i>``, the template filled in
  as one user turn (:func:`critic_messages`); the answer is the last ``\\boxed{...}`` of the reply
  read as an integer, None when there is none or it is no integer (:func:`parse_critic`):
  the index of the earliest wrong paragraph, -1 when all are correct.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

Messages = tuple[tuple[str, str], ...]

SOURCE = "QwenLM/ProcessBench e8024636bcabdf8bd514440551b531d3f90dd18b"

CRITIQUE_TEMPLATE = """The following is a math problem and a solution (split into paragraphs, enclosed with tags and indexed from 0):

[Math Problem]

{problem}

[Solution]

{tagged_response}

Your task is to review and critique the solution paragraph by paragraph. Once you identify an error in a paragraph, return the index of the paragraph where the earliest error occurs. Otherwise, return the index of -1 (which typically denotes "not found").

Please put your final answer (i.e., the index) in \\boxed{{}}."""  # noqa: E501 - the template file's text, read().strip()'d
"""``code/templates/critique_template.txt`` as ``run_eval.py`` reads it: ``open(...).read().strip()``."""

STEP_PROMPT_TEXT = "user: PROBLEM\\n\\nSTEP_0; assistant: +; user: STEP_i; ... (RLHFlow PRM conversation)"
"""The steps protocol's text (it has no template: the conversation is the prompt), hashed into the identity."""

PLUS, MINUS = "+", "-"
_BOXED = re.compile(r"\\boxed\{([^}]*)\}")


def step_messages(problem: str, steps: Sequence[str]) -> Messages:
    """The conversation ``run_eval_prm_rlhflow.py`` sends when it asks about the last of ``steps``:
    a user turn per step (the first one ``problem + "\\n\\n" + step``), an assistant ``"+"`` after
    each earlier one."""
    messages: list[tuple[str, str]] = []
    for sdx, step in enumerate(steps):
        if sdx > 0:
            messages.append(("assistant", PLUS))
        messages.append(("user", problem + "\n\n" + step if sdx == 0 else step))
    return tuple(messages)


def parse_step(text: str) -> str:
    """The step's verdict as the script reads it: ``+`` when the reply starts with ``+`` (after
    stripping whitespace), else ``-`` (an empty reply too)."""
    return PLUS if text.strip().lower().startswith(PLUS) else MINUS


def plus_probability(top_logprobs: Sequence[Sequence[tuple[str, float]]]) -> float | None:
    """P(+) = exp(l+) / (exp(l+) + exp(l-)) over the alternatives ``(token, logprob)`` of the first
    generated token: the tokens ``+`` and ``-`` exactly, normalised over the two. A token that
    is not among the alternatives has probability 0 (``top_logprobs`` lists the likeliest);
    None when neither is there (or no token was generated)."""
    if not top_logprobs or not top_logprobs[0]:
        return None
    first = {tok: lp for tok, lp in reversed(top_logprobs[0])}  # the first listing of a token wins
    plus, minus = first.get(PLUS), first.get(MINUS)
    if plus is None and minus is None:
        return None
    if minus is None:
        return 1.0
    if plus is None:
        return 0.0
    return 1.0 / (1.0 + math.exp(minus - plus))


def critic_messages(problem: str, steps: Sequence[str]) -> Messages:
    """``run_eval.py``'s ``prepare_input_boxed``: the steps tagged ``<paragraph_i>`` in the critique template."""
    tagged = "".join(f"<paragraph_{sdx}>\n{step}\n</paragraph_{sdx}>\n\n" for sdx, step in enumerate(steps))
    return (("user", CRITIQUE_TEMPLATE.format(problem=problem, tagged_response=tagged.strip())),)


def parse_critic(text: str) -> int | None:
    """``run_eval.py``'s reading: the last ``\\boxed{...}``'s content, stripped, as ``int()``; None
    when there is no box or its content is no integer."""
    matches = _BOXED.findall(text)
    if not matches:
        return None
    try:
        return int(matches[-1].strip())
    except ValueError:
        return None

