"""The two multimodal benchmarks' judge prompts and verdict parsers, as pure functions.

Written from their official clients (none of their code is copied; the prompt texts are what they
send):

* **VL-RewardBench** (``vl-rewardbench/VL_RewardBench`` at 9b10abd, ``inference_hf.py`` with
  ``prompt.py``): one user message, the text of ``prompt(item, random_number)`` with every
  ``"<image>\\n"`` removed, then the image (labelled ``image/png`` whatever its bytes); the two
  answers in the file's order when ``random_number`` is 0, swapped when 1 (drawn per sample with
  ``random.choice([0, 1])``). The reply is read with its regex
  ``(?:Overall Judgment|Therefore)\\s*.*\\s*-*\\s*Answer\\s*(\\d+)\\s*is\\s*(?:the\\s*)?(?:slightly\\s*)?better``
  on the reply with its newlines and ``*`` removed, case-insensitively (:func:`vlrb_answer`);
* **Multimodal RewardBench** (``facebookresearch/multimodal_rewardbench`` at HEAD,
  ``scripts/1_run_model_as_judge_gpt4o.py``): one user message, MT-Bench's pairwise judge prompt
  with the item's ``Text``, ``Output1`` as assistant A and ``Output2`` as B (the file's order),
  then the image as a data URL whose type ``mimetypes.guess_type`` gives for its path; the verdict
  is ``[[A]]`` if the reply holds it, else ``[[B]]`` if it holds that
  (``scripts/2_get_accuracy.py``'s ``extract_judgment``; with neither, that script draws A or B
  with ``random.random() < 0.5`` under ``random.seed(123)`` in file order, which the task's
  official score reproduces from the no-verdict answers).
"""

from __future__ import annotations

import re

from rmbench.core import mm_rewardbench as MM
from rmbench.models.judge.judge_protocol import Messages

VLRB_PROMPT = ''' You are a highly capable multimodal AI assistant tasked with evaluating answers to visual questions. \
Please analyze the following image and question, then determine which of the two provided answers is better.

Question: {query}

Answer 1: {answer_1}

Answer 2: {answer_2}

Please evaluate both answers based on the following criteria:
1. Accuracy: How well does the answer align with the visual information in the image?
2. Completeness: Does the answer fully address all aspects of the question?
3. Clarity: Is the answer easy to understand and well-articulated?
4. Relevance: Does the answer directly relate to the question and the image?

After your evaluation, please:
1. Explain your reasoning for each criterion.
2. Provide an overall judgment on which answer is better (Answer 1 or Answer 2). For example: Overall \
Judgment: Answer X is better.

Your response should be structured and detailed, demonstrating your understanding of both the visual and \
textual elements of the task.'''
"""``prompt.py``'s text, its fields named (the official fills them with an f-string)."""

VLRB_PATTERN = re.compile(r"(?:Overall Judgment|Therefore)\s*.*\s*-*\s*Answer\s*(\d+)\s*is\s*(?:the\s*)?"
                          r"(?:slightly\s*)?better", re.IGNORECASE)
VLRB_IMAGE_MIME = "image/png"
"""The type ``inference_hf.py`` labels every image with, whatever its bytes."""

MMRB_PROMPT = """Please act as an impartial judge and evaluate the quality of the responses provided by two AI \
assistants to the user question displayed below. You should choose the assistant that follows the user's \
instructions and answers the user's question better. Your evaluation should consider factors such as the \
helpfulness, relevance, accuracy, depth, creativity, and level of detail of their responses. Begin your \
evaluation by comparing the two responses and provide a short explanation. Avoid any position biases and ensure \
that the order in which the responses were presented does not influence your decision. Do not allow the length \
of the responses to influence your evaluation. Do not favor certain names of the assistants. Be as objective as \
possible. After providing your explanation, output your final verdict by strictly following this format: \
"[[A]]" if assistant A is better, "[[B]]" if assistant B is better.

[User Question]
{question}

[The Start of Assistant A's Answer]
{answer_a}
[The End of Assistant A's Answer]

[The Start of Assistant B's Answer]
{answer_b}
[The End of Assistant B's Answer]"""
"""``1_run_model_as_judge_gpt4o.py``'s ``judge_prompt``."""


def vlrb_messages(query: str, first: str, second: str) -> Messages:
    """The user message ``inference_hf.py`` sends with ``first`` as Answer 1 (its image goes after
    the text): ``prompt.py``'s text, every ``"<image>\\n"`` removed (in the query and answers too)."""
    text = VLRB_PROMPT.format(query=query, answer_1=first, answer_2=second).replace("<image>\n", "")
    return (("user", text),)


def vlrb_answer(reply: str) -> int | None:
    """The answer number ``inference_hf.py`` and ``cal.py`` read in ``reply`` (any integer the
    regex finds), or None: no match (``doesntMatch``)."""
    match = VLRB_PATTERN.search(reply.replace("\n", "").replace("*", ""))
    return int(match.group(1)) if match else None


def vlrb_verdict(reply: str) -> str | None:
    """The answer picked: ``"A"`` (Answer 1, shown first), ``"B"`` (Answer 2), or None. An answer
    number other than 1 or 2 is None here; ``cal.py`` counts it "agree" whatever the labels (it
    only checks that the rejected answer was not named), which no reward can say."""
    number = vlrb_answer(reply)
    return None if number is None else {1: "A", 2: "B"}.get(number)


def mmrb_messages(question: str, answer_a: str, answer_b: str) -> Messages:
    """The user message ``1_run_model_as_judge_gpt4o.py`` sends (its image goes after the text)."""
    return (("user", MMRB_PROMPT.format(question=question, answer_a=answer_a, answer_b=answer_b)),)


def mmrb_verdict(reply: str) -> str | None:
    """``2_get_accuracy.py``'s ``extract_judgment`` without its random draw: ``"A"`` if ``[[A]]``
    is in the reply, else ``"B"`` if ``[[B]]`` is, else None
    (:func:`rmbench.core.mm_rewardbench.verdict_of_reply`)."""
    return {MM.A: "A", MM.B: "B"}.get(MM.verdict_of_reply(reply))
