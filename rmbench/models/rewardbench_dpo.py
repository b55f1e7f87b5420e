"""RewardBench's DPO scoring (``rewardbench`` 0.1.4 ``DPOInference``, TRL conventions), one response
at a time. Pure: needs only a HF tokenizer (no torch, no model).

API::

    toks = rewardbench_dpo_tokens(tokenizer, prompt, responses, max_length=2048, max_prompt_length=128)
    # toks[i].input_ids:        BOS + prompt ids + answer ids (+ EOS), after truncation
    # toks[i].answer_positions: j with label != -100; sum log p(ids[j] | ids[:j]) over them
    reward = rewardbench_dpo_reward(policy_logps, ref_logps=None, ref_free_norm="avg")
    # policy_logps / ref_logps: the per-token log p(ids[j] | ids[:j]) at toks[i].answer_positions

``prompt``: a str (one user turn) or a list of {"role", "content"} turns (ending with a user turn);
``responses``: every response of the comparison group (same prompt), k >= 1. RewardBench scores a
pair; for k responses "the longer answer of the pair" becomes "the longest answer of the group", so
response i gets exactly the tokens the official ``tokenize_row`` gives it paired with the longest.

Conventions (file:line in site-packages ``rewardbench/``; ``scripts/run_dpo.py``):

1. Texts (``utils.py:809-875`` ``prepare_dialogue_from_tokenizer``, used because the tokenizer's chat
   template has precedence over FastChat, ``utils.py:351-365``): prompt = ``apply_chat_template(turns,
   tokenize=False)`` WITHOUT a generation prompt; full_i = the same with ``{"role": "assistant",
   "content": response_i}`` appended. A list prompt is relabelled BY POSITION (odd turns "user", even
   "assistant", the given roles are ignored, ``utils.py:819-825``; so a system turn becomes "user"),
   its last turn must be "user" (assert, ``utils.py:827``). Only ``content`` is used.
2. Answer text = ``full_i.replace(prompt, "")`` (every occurrence, ``dpo.py:65-66``), so the assistant
   header and the template's end-of-turn belong to the answer.
3. ``build_tokenized_answer`` (``dpo.py:153-201``): ``enc = tokenizer(t, add_special_tokens=False)``;
   ids = enc(prompt + answer), p = len(enc(prompt)); if enc(prompt) != ids[:p] (the last prompt token
   merged with the answer) p -= 1. Prompt ids = ids[:p], answer ids = ids[p:].
4. BOS (``tokenizer.bos_token_id``; ``eos_token_id`` when ``bos_token`` is None, run_dpo.py:147-149) is
   prepended to the prompt (``dpo.py:87-89``), EOS appended to every answer (``dpo.py:96-100``),
   even when the template already ends the turn.
5. Truncation (``dpo.py:102-120``; ``truncation_mode="keep_end"``, ``max_prompt_length=128``,
   ``max_length=2048``, ``dpo.py:42-44``): L = the longest answer (after EOS) of the pair/group. If
   len(BOS + prompt) + L > max_length the prompt keeps its LAST max_prompt_length tokens (the BOS is
   then lost); if still > max_length every answer keeps its first max_length - max_prompt_length
   tokens (EOS then lost). Tested per response against the same L.
6. Labels = input_ids with the prompt part set to -100 (``dpo.py:129-136``); ``get_batch_logps``
   (``dpo.py:321-336``) shifts by one, so position j contributes log_softmax(logits[j - 1])[ids[j]]
   for every j >= 1 past the prompt. Right padding of the batch (attention mask 0) changes nothing.

Reward (``dpo.py:204-230``, ``concatenated_forward`` ``dpo.py:262-284``), with p_j = log pi(ids[j] |
ids[:j]) over the answer positions. There is NO beta (the reward is the raw log-ratio, beta = 1):

* with a reference model: sum_j p_j - sum_j ref_j (``ref_free_norm`` forced to "none", dpo.py:30-32);
* reference-free, ``ref_free_norm`` (run_dpo.py ``--ref_free_type``, default "avg"; DPOInference's
  own default is "norm"): "sum": sum_j p_j; "avg": sum_j p_j / n; "norm": -sqrt(sum_j p_j ** 2)
  (``-torch.norm(p * mask, p=2)``, not expressible from the sum alone).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Prompt = str | Sequence[Mapping[str, Any]]
REF_FREE_NORMS = ("norm", "avg", "sum")


@dataclass(frozen=True)
class DPOTokens:
    input_ids: list[int]  # BOS + prompt ids + answer ids (+ EOS), after truncation
    answer_positions: list[int]  # j with label != -100: log p(ids[j] | ids[:j]) is summed over these


def rewardbench_messages(prompt: Prompt) -> list[dict[str, Any]]:
    """The prompt turns as RewardBench builds them (convention 1)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    turns = list(prompt)
    if not turns:
        raise ValueError("empty prompt")
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": t["content"]}
                for i, t in enumerate(turns)]
    if messages[-1]["role"] != "user":
        raise ValueError("RewardBench relabels prompt turns user/assistant by position and needs an odd "
                         f"number of them (the last one a user turn); got {len(turns)}")
    return messages


def rewardbench_dpo_texts(tokenizer, prompt: Prompt, responses: Sequence[str]) -> tuple[str, list[str]]:
    """(prompt text, answer texts): conventions 1-2."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise ValueError("tokenizer has no chat template: RewardBench would use a FastChat conversation "
                         "(run_dpo.py --chat_template, default 'tulu'), which is not supported here")
    messages = rewardbench_messages(prompt)
    prompt_text = tokenizer.apply_chat_template(messages, tokenize=False)
    answers = []
    for response in responses:
        full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": response}],
                                             tokenize=False)
        answers.append(full.replace(prompt_text, ""))
    return prompt_text, answers


def _encode(tokenizer, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def _split(tokenizer, prompt_text: str, answer_text: str) -> tuple[list[int], list[int]]:
    """``build_tokenized_answer`` (convention 3): (prompt ids, answer ids) of the joint encoding."""
    full = _encode(tokenizer, prompt_text + answer_text)
    prompt_ids = _encode(tokenizer, prompt_text)
    if len(prompt_ids) > len(full):  # the official length check (dpo.py:173-174)
        raise ValueError("Prompt input ids and answer input ids should have the same length.")
    start = len(prompt_ids)
    if prompt_ids != full[:start]:
        start -= 1
    return full[:start], full[start:]


def rewardbench_dpo_tokens(tokenizer, prompt: Prompt, responses: Sequence[str], max_length: int = 2048,
                           max_prompt_length: int = 128) -> list[DPOTokens]:
    """One :class:`DPOTokens` per response, in order, as ``DPOInference.tokenize_row`` builds them."""
    prompt_text, answer_texts = rewardbench_dpo_texts(tokenizer, prompt, responses)
    bos = tokenizer.eos_token_id if tokenizer.bos_token is None else tokenizer.bos_token_id
    eos = tokenizer.eos_token_id
    splits = []
    for answer_text in answer_texts:
        prompt_ids, answer_ids = _split(tokenizer, prompt_text, answer_text)
        splits.append(([bos] + prompt_ids, answer_ids + [eos]))
    longest = max((len(a) for _, a in splits), default=0)
    out = []
    for prompt_ids, answer_ids in splits:
        if len(prompt_ids) + longest > max_length:  # same slicing expressions as dpo.py:112 and :120
            prompt_ids = prompt_ids[-max_prompt_length:]
        if len(prompt_ids) + longest > max_length:
            answer_ids = answer_ids[: max_length - max_prompt_length]
        ids = prompt_ids + answer_ids
        out.append(DPOTokens(ids, list(range(max(len(prompt_ids), 1), len(ids)))))
    return out


def rewardbench_dpo_reward(policy_logps: Sequence[float], ref_logps: Sequence[float] | None = None,
                           ref_free_norm: str = "avg") -> float:
    """RewardBench's DPO reward of one response from its per-answer-token log-probs (no beta).

    With ``ref_logps``: sum(policy) - sum(ref), whatever ``ref_free_norm`` is. Without: "sum" ->
    sum(policy), "avg" -> sum(policy) / n (nan for n = 0, as torch's 0/0), "norm" ->
    -sqrt(sum(policy ** 2)). run_dpo.py's default is "avg".
    """
    policy = [float(x) for x in policy_logps]
    if ref_logps is not None:
        return math.fsum(policy) - math.fsum(float(x) for x in ref_logps)
    if ref_free_norm == "sum":
        return math.fsum(policy)
    if ref_free_norm == "avg":
        return math.fsum(policy) / len(policy) if policy else math.nan
    if ref_free_norm == "norm":
        return -math.sqrt(math.fsum(x * x for x in policy))
    raise ValueError(f"Unknown ref_free_norm: {ref_free_norm!r} (expected one of {REF_FREE_NORMS})")
