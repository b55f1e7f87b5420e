"""What a pairwise preference model (LLM-Blender's PairRM and kin) reads, as pure functions: the
texts of a comparison, the token ids of one ordered pair with the truncation rule, and how the
pairs' logits combine into one reward per response. No torch here: :mod:`rmbench.models.pairrm`
runs the model.

Written from LLM-Blender (github yuchenlin/LLM-Blender, ``llm_blender/blender/blender.py``'s
``compare`` and ``compare_conversations``, ``blender_utils.py``'s ``tokenize_pair`` and
``get_pair_from_conv``, ``gpt_eval/utils.py``'s ``get_scores_from_cmps``, ``pair_ranker/pairrm.py``);
none of its code is copied. ``tests/models/test_pairrm.py`` checks the ids and rewards against that
code where the ``llm-blender`` package imports, and against RewardBench's copy of it
(``rewardbench/models/pairrm.py``, the ``PairRMPipeline`` RewardBench scores PairRM with).

**Texts** (``format``):

* ``conversation`` (the default: ``Blender.compare_conversations``, and RewardBench's
  ``tokenize_conv_pair``): the source is :data:`CONVERSATION_INSTRUCTION` (LLM-Blender's text,
  its spelling kept) followed by the user turns, ``"USER: {turn}\\nAssistant: <Response {k}>"``
  joined by ``"\\n"``; a candidate is the assistant turns, ``"<Response {k}>: {turn}"`` joined by
  ``"\\n"``, the response scored being the last. A prompt given as a string is one user turn; a
  conversation must alternate user and assistant turns, from a user turn to a user turn (LLM-Blender
  asserts this; a system turn is refused, with ``format=plain`` as the way out).
* ``plain`` (``Blender.compare(inputs, candidates_A, candidates_B)``): the source is the prompt's
  text (a conversation of one user turn: its content; a longer one: its ``role: content`` turns
  joined by a blank line, rmbench's rule, LLM-Blender has none) and the candidates are the responses.

**Ids of one ordered pair** (:func:`pair_ids`; ``tokenize_pair``'s rule, which is also
``CrossCompareCollator``'s at a batch of one): with ``S`` = ``source_max_length`` and ``C`` =
``candidate_max_length`` (1224 and 412, PairRM's), ``source = encode("<|source|>" + source,
max_length=S)``, then each candidate gets ``m = (S + 2C - len(source)) // 2`` tokens at most,
``encode("<|candidate1|>" + first, max_length=m)`` and ``encode("<|candidate2|>" + second,
max_length=m)``; the three are concatenated, each with the tokenizer's own special tokens
(``[CLS] <|source|> ... [SEP] [CLS] <|candidate1|> ... [SEP] [CLS] <|candidate2|> ... [SEP]`` for
DeBERTa), each truncated on the tokenizer's own side (right for PairRM). The head reads the final
hidden states at the three prefix tokens (their first positions in their segments).

**Logit of an ordered pair**: ``L(i, j) = mean_k(h_k(s, c_i) - h_k(s, c_j))``, ``h`` the head on
the concatenated (source, candidate) prefix states of the input with ``i`` first (``n_tasks``
outputs ``k``). **Combined** (:func:`combine`): ``C(i, j) = L(i, j) - L(j, i)`` (LLM-Blender's
``mode="[A,B]+[B,A]"``, RewardBench's ``AB_logits - BA_logits``), and the reward of response ``i``
of a group of ``n`` is LLM-Blender's ranking score (``get_scores_from_cmps``, ``max_logits``)
``r_i = (1/n) sum_{j != i} C(i, j)``. For a pair, ``r_a - r_b = C(a, b)``, the comparison logit
itself (``> 0``: ``a`` preferred); the rewards of a group sum to 0, and swapping two responses
swaps their rewards. ``score=verdict`` puts ``sign(C(i, j))`` in place of ``C(i, j)``, so a pair's
reward gap is its verdict, +1, 0 or -1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rmbench.core.types import Prompt
from rmbench.errors import ConfigError

SOURCE_PREFIX = "<|source|>"
CANDIDATE1_PREFIX = "<|candidate1|>"
CANDIDATE2_PREFIX = "<|candidate2|>"
PREFIXES = (SOURCE_PREFIX, CANDIDATE1_PREFIX, CANDIDATE2_PREFIX)
CONFIG_IDS = ("source_prefix_id", "cand1_prefix_id", "cand2_prefix_id")
"""The fields of a PairRM config.json that name the three prefix tokens' ids, in :data:`PREFIXES` order."""

SOURCE_MAX_LENGTH = 1224
CANDIDATE_MAX_LENGTH = 412
"""PairRM's limits (LLM-Blender's ranker config and ``tokenize_pair``'s defaults)."""

CONVERSATION_INSTRUCTION = ("Finish the following coversation in each i-th turn by filling in <Response i> with "
                            "your response.")
"""LLM-Blender's instruction before a conversation's user turns (its spelling kept: the model was
trained on it)."""

FORMATS = ("conversation", "plain")
SCORES = ("logit", "verdict")

Encode = Callable[[str, "int | None"], list[int]]
"""``encode(text, max_length)``: the tokenizer's ids of ``text`` with its special tokens, truncated
to ``max_length`` (None: whole)."""


@dataclass(frozen=True)
class PairIds:
    """The ids of one ordered pair, and where the head reads."""

    ids: tuple[int, ...]
    positions: tuple[int, int, int]
    """The positions of ``<|source|>``, ``<|candidate1|>`` and ``<|candidate2|>`` in :attr:`ids`."""
    cut: bool
    """Whether a segment lost tokens to the limits."""


def _turns(prompt: Prompt) -> list[tuple[str, str]]:
    return [("user", prompt)] if isinstance(prompt, str) else [(m.role, m.content) for m in prompt]


def prompt_text(prompt: Prompt) -> str:
    """The prompt as ``plain``'s source (module docstring)."""
    turns = _turns(prompt)
    if len(turns) == 1 and turns[0][0] == "user":
        return turns[0][1]
    return "\n\n".join(f"{role}: {content}" for role, content in turns)


def comparison_texts(prompt: Prompt, responses: Sequence[str], format: str, where: str = "") -> tuple[str, list[str]]:
    """(source, one candidate text per response) in ``format`` (module docstring); a conversation
    ``conversation`` cannot read is a ConfigError of one line naming ``where`` (the group)."""
    if format == "plain":
        return prompt_text(prompt), list(responses)
    turns = _turns(prompt)
    roles = [role for role, _ in turns]
    expected = ["user" if k % 2 == 0 else "assistant" for k in range(len(turns))]
    if roles != expected or roles[-1] != "user":
        raise ConfigError(f"pairrm format=conversation reads a conversation of user and assistant turns in turn, "
                          f"from a user turn to a user turn (LLM-Blender's compare_conversations); {where or 'a'} "
                          f"prompt has the turns {', '.join(roles)}: pass --model-arg format=plain")
    users = [content for _, content in turns[0::2]]
    earlier = [content for _, content in turns[1::2]]
    source = CONVERSATION_INSTRUCTION + "\n".join(f"USER: {u}\nAssistant: <Response {k}>"
                                                  for k, u in enumerate(users, 1))
    candidates = ["\n".join(f"<Response {k}>: {a}" for k, a in enumerate([*earlier, response], 1))
                  for response in responses]
    return source, candidates


def pair_ids(encode: Encode, prefix_ids: Sequence[int], source: str, first: str, second: str,
             source_max: int = SOURCE_MAX_LENGTH, candidate_max: int = CANDIDATE_MAX_LENGTH) -> PairIds:
    """The ids of (source, first, second) by ``tokenize_pair``'s rule (module docstring);
    ``prefix_ids``: the ids of :data:`PREFIXES`. A ValueError where a prefix does not survive as its
    own token (a tokenizer that splits it, or a limit below 3)."""
    src = encode(SOURCE_PREFIX + source, source_max)
    room = (source_max + 2 * candidate_max - len(src)) // 2
    one = encode(CANDIDATE1_PREFIX + first, room)
    two = encode(CANDIDATE2_PREFIX + second, room)
    positions = []
    offset = 0
    for segment, prefix_id, prefix in zip((src, one, two), prefix_ids, PREFIXES):
        if prefix_id not in segment:
            raise ValueError(f"the token {prefix} (id {prefix_id}) is not among the ids of its segment")
        positions.append(offset + segment.index(prefix_id))
        offset += len(segment)
    whole = (encode(prefix + text, None) for prefix, text in zip(PREFIXES, (source, first, second)))
    cut = any(len(ids) > len(kept) for ids, kept in zip(whole, (src, one, two)))
    return PairIds((*src, *one, *two), (positions[0], positions[1], positions[2]), cut)


def combine(logits: np.ndarray, score: str = "logit") -> np.ndarray:
    """One reward per response from the (n, n) ordered-pair logits ``logits[i, j] = L(i, j)``
    (the diagonal is not read): ``r_i = (1/n) sum_{j != i} C(i, j)``, ``C(i, j) = L(i, j) - L(j, i)``,
    or its sign for ``score="verdict"`` (module docstring). A group of one response gets 0."""
    n = len(logits)
    c = np.asarray(logits, dtype=np.float64)
    c = c - c.T
    np.fill_diagonal(c, 0.0)
    if score == "verdict":
        c = np.sign(c)
    return c.sum(axis=1) / n + 0.0  # + 0.0: no -0.0
