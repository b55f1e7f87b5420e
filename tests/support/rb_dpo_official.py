"""RewardBench's OFFICIAL DPO rewards, computed by RewardBench's own ``DPOInference``, for tests.

This is a test helper (not a test file). It drives ``rewardbench.dpo.DPOInference`` of the
``rewardbench`` 0.1.4 wheel (installed with ``--no-deps``, see ``rb_official.py``) the way
``scripts/run_dpo.py`` does, on CPU in float32 with batch size 1, so tests can compare rmbench's
``rmbench.models.rewardbench_dpo`` (tokens, answer positions, rewards) against it.

What is official and what is glue (everything numeric is official):

* Texts: ``rewardbench.utils.prepare_dialogue_from_tokenizer`` (what ``load_eval_dataset`` maps
  over the data when the tokenizer has a chat template, ``utils.py:351-365``) on a row
  ``{"prompt", "chosen", "rejected"}``; a FastChat conversation (tokenizer without a chat
  template) is not supported.
* Tokenizer settings: those of run_dpo.py:143-149 (``AutoTokenizer`` of the policy folder,
  ``pad_token = eos_token``, and ``bos_token_id = pad_token_id = eos_token_id`` when there is no BOS),
  applied to a copy of the tokenizer.
* Tokens: ``DPOInference.tokenize_row`` (run_dpo.py:224 maps it over the dataset; the Arrow round
  trip leaves str / int lists unchanged, so we call it on the dict). ``max_length`` /
  ``max_prompt_length`` are instance attributes set in ``__init__`` (dpo.py:43-44); we overwrite
  them only when a test asks for other values (to trigger truncation cheaply).
* Collation: run_dpo.py uses ``trl.trainer.utils.DPODataCollatorWithPadding``; trl is not installed
  (and not needed): at batch size 1 that collator pads nothing, it turns every ``*_input_ids``,
  ``*_attention_mask``, ``*_labels`` list into an int64 tensor of shape (1, n) and keeps other keys
  as one-element lists. ``_collate_one`` does exactly that.
* Accelerator: ``DPOInference`` only reads ``accelerator.device`` (dpo.py:244), so we pass a
  namespace with ``device = cpu`` instead of an ``accelerate.Accelerator`` (no global state).
* Models: ``AutoModelForCausalLM.from_pretrained`` (``DPO_MODEL_CONFIG["default"]``) in float32
  (run_dpo.py would load float16 / 8-bit on GPU, run_dpo.py:170-195).
* Rewards: ``DPOInference.inference_step(batch, ref_free=ref_dir is None)`` (run_dpo.py:245) and
  ``.float().cpu().numpy().tolist()`` (run_dpo.py:255-256).

Importing ``rewardbench`` needs the ``rewardbench.models`` stub of ``rb_official.py`` (the model zoo
fails on transformers 5); ``dpo.py`` itself only needs numpy and torch.

Tests use it as::

    from tests.support import rb_dpo_official
    reason = rb_dpo_official.dpo_unavailable()
    if reason:
        pytest.skip(reason)
    rewards = rb_dpo_official.official_dpo_rewards(policy_dir, [(prompt, chosen, rejected)], ref_dir)
"""

from __future__ import annotations

import copy
import types
from functools import lru_cache

from tests.support.rb_official import import_rewardbench, unavailable_reason


@lru_cache(maxsize=1)
def _load():
    """Import DPOInference once (the model zoo stubbed as in ``rb_official``); a namespace or raises."""
    import_rewardbench()
    import torch
    from rewardbench import dpo, utils

    return types.SimpleNamespace(torch=torch, DPOInference=dpo.DPOInference,
                                 prepare_dialogue_from_tokenizer=utils.prepare_dialogue_from_tokenizer)


def dpo_unavailable() -> str | None:
    """None when RewardBench's DPOInference imports, else why not (for ``pytest.skip``)."""
    return unavailable_reason(_load, "official RewardBench DPO code")


def script_tokenizer(tokenizer):
    """A copy of ``tokenizer`` with run_dpo.py's settings (run_dpo.py:145-149)."""
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.bos_token is None:
        tokenizer.bos_token_id = tokenizer.eos_token_id
        tokenizer.pad_token_id = tokenizer.eos_token_id
    return tokenizer


def official_row(tokenizer, prompt, chosen: str, rejected: str) -> dict:
    """``prompt`` / ``text_chosen`` / ``text_rejected`` as load_eval_dataset builds them."""
    rb = _load()
    example = {"prompt": copy.deepcopy(prompt), "chosen": chosen, "rejected": rejected}
    example = rb.prepare_dialogue_from_tokenizer(example, tokenizer)
    return {k: example[k] for k in ("prompt", "text_chosen", "text_rejected")}


def _dpo(rb, model, ref_model, tokenizer, ref_free_norm, max_length, max_prompt_length):
    device = types.SimpleNamespace(device=rb.torch.device("cpu"))
    dpo = rb.DPOInference(model, ref_model, tokenizer=tokenizer, accelerator=device, ref_free_norm=ref_free_norm)
    if max_length is not None:
        dpo.max_length = max_length
    if max_prompt_length is not None:
        dpo.max_prompt_length = max_prompt_length
    return dpo


def official_tokenize_row(tokenizer, prompt, chosen: str, rejected: str, max_length: int | None = None,
                          max_prompt_length: int | None = None) -> dict:
    """``DPOInference.tokenize_row`` of one pair (keys ``chosen_input_ids``, ``chosen_labels``, ...)."""
    rb = _load()
    tokenizer = script_tokenizer(tokenizer)
    model = rb.torch.nn.Module()  # tokenize_row never runs the model; __init__ reads its config only
    model.config = types.SimpleNamespace(is_encoder_decoder=False)
    dpo = _dpo(rb, model, None, tokenizer, "avg", max_length, max_prompt_length)
    return dpo.tokenize_row(official_row(tokenizer, prompt, chosen, rejected))


def _collate_one(rb, feature: dict) -> dict:
    """trl's DPODataCollatorWithPadding on a batch of one feature (nothing to pad)."""
    out = {}
    for k, v in feature.items():
        if k.endswith(("_input_ids", "_attention_mask", "_labels")):
            out[k] = rb.torch.tensor([v], dtype=rb.torch.int64)
        else:
            out[k] = [v]
    return out


@lru_cache(maxsize=4)
def _causal_lm(folder: str):
    rb = _load()
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, dtype=rb.torch.float32)


def official_dpo_rewards(model_dir, pairs, ref_dir=None, ref_free_norm: str = "avg", tokenizer_dir=None,
                         max_length: int | None = None, max_prompt_length: int | None = None
                         ) -> list[tuple[float, float]]:
    """(chosen_reward, rejected_reward) per ``(prompt, chosen, rejected)`` in ``pairs``, as run_dpo.py.

    ``prompt``: a str or a list of {"role", "content"} turns. ``ref_dir=None``: reference-free with
    ``ref_free_norm`` ("avg" is run_dpo.py's default). Floats are the float32 rewards.
    """
    rb = _load()
    from transformers import AutoTokenizer

    tokenizer = script_tokenizer(AutoTokenizer.from_pretrained(str(tokenizer_dir or model_dir)))
    model = _causal_lm(str(model_dir))
    ref_model = None if ref_dir is None else _causal_lm(str(ref_dir))
    dpo = _dpo(rb, model, ref_model, tokenizer, ref_free_norm, max_length, max_prompt_length)
    out = []
    for prompt, chosen, rejected in pairs:  # no torch.no_grad in run_dpo.py: DPOInference froze the weights
        batch = _collate_one(rb, dpo.tokenize_row(official_row(tokenizer, prompt, chosen, rejected)))
        rewards_chosen, rewards_rejected = dpo.inference_step(batch, ref_free=ref_dir is None)
        c = rewards_chosen.float().cpu().numpy().tolist()
        r = rewards_rejected.float().cpu().numpy().tolist()
        out.append((c[0], r[0]))
    return out
