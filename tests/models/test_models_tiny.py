"""Every transformers family on tiny random models built from configs, checked by hand."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rmbench.core.types import ComparisonGroup, prompt_from_json  # noqa: E402
from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models import Runtime, Truncation  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.models.discretize import DiscretizedRM, cluster_levels, prob_within  # noqa: E402
from rmbench.models.generative import GenerativeRM  # noqa: E402
from rmbench.models.implicit import ImplicitRM  # noqa: E402
from rmbench.models.seqcls import LinearHeadRM, SeqClsRM  # noqa: E402

FP32 = Runtime(dtype="float32", device="cpu")
PAIRS = [("Pick a number between 1 and 10.", "7"),
         ("Name a primary color.", "The answer is red, blue or yellow."),
         ([{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "hi"},
           {"role": "user", "content": "how are you today?"}], "Hello! a b c d e f"),
         ("The capital of France is", " Paris.")]


def reqs(pairs=PAIRS):
    return [ScoreRequest(prompt_from_json(p), r, f"g{i}", 0) for i, (p, r) in enumerate(pairs)]


def messages(prompt):
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


def hand_logprob(folder, prompt, response, mean=False):
    """Sum of log p(response token) by a direct full-sequence forward, split as lm-eval splits."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    msgs = messages(prompt)
    context = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True).rstrip()
    full = tok.apply_chat_template(msgs + [{"role": "assistant", "content": response}], tokenize=False)
    ids = tok(full, add_special_tokens=False)["input_ids"]
    n_ctx = len(tok(context, add_special_tokens=False)["input_ids"])
    assert ids[:n_ctx] == tok(context, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logp = model(torch.tensor([ids])).logits[0].double().log_softmax(-1)
    terms = [float(logp[j - 1, ids[j]]) for j in range(n_ctx, len(ids))]
    return float(np.mean(terms)) if mean else float(np.sum(terms))


def test_implicit_equals_hand_computed_log_probs(tiny):
    rm = ImplicitRM(str(tiny["causal"]), runtime=FP32)
    got = rm.score(reqs())
    expected = [hand_logprob(tiny["causal"], p, r) for p, r in PAIRS]
    assert got == pytest.approx(expected, abs=1e-5)
    mean = ImplicitRM(str(tiny["causal"]), runtime=FP32, normalize="mean").score(reqs())
    assert mean == pytest.approx([hand_logprob(tiny["causal"], p, r, mean=True) for p, r in PAIRS], abs=1e-5)


def test_implicit_with_reference_and_beta(tiny):
    rm = ImplicitRM(str(tiny["causal"]), ref=str(tiny["causal_ref"]), beta=0.1, runtime=FP32)
    expected = [0.1 * (hand_logprob(tiny["causal"], p, r) - hand_logprob(tiny["causal_ref"], p, r)) for p, r in PAIRS]
    assert rm.score(reqs()) == pytest.approx(expected, abs=1e-5)
    assert len(rm.fingerprint()) == 64  # the reference's weights are part of it


def test_implicit_is_batch_invariant(tiny):
    rm = ImplicitRM(str(tiny["causal"]), runtime=FP32)
    together = rm.score(reqs())
    alone = [rm.score([r])[0] for r in reqs()]
    assert together == pytest.approx(alone, abs=1e-5)


def hand_seqcls(folder, prompt, response):
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    full = tok.apply_chat_template(messages(prompt) + [{"role": "assistant", "content": response}], tokenize=False)
    ids = torch.tensor([tok(full, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        h = model.base_model(input_ids=ids).last_hidden_state[0, -1]
        return float(model.score(h)[0])


@pytest.mark.parametrize("side", ["right", "left"])
def test_seqcls_reads_the_last_real_token_under_either_padding(tiny, side):
    """pad == eos here, and every text ends in eos: the pad_token_id heuristic would misread it."""
    rm = SeqClsRM(str(tiny["seqcls"]), runtime=FP32, padding_side=side)
    expected = [hand_seqcls(tiny["seqcls"], p, r) for p, r in PAIRS]
    assert rm.score(reqs()) == pytest.approx(expected, abs=1e-5)


def test_generative_p_yes_matches_a_direct_softmax(tiny):
    rm = GenerativeRM(str(tiny["causal"]), runtime=FP32)
    tok = transformers.AutoTokenizer.from_pretrained(tiny["causal"])
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny["causal"], dtype=torch.float32).eval()
    expected, log_odds = [], []
    for p, r in PAIRS:
        question = p if isinstance(p, str) else "\n\n".join(m["content"] for m in p)
        text = tok.apply_chat_template([{"role": "user",
                                         "content": rm.prompt_template.format(question=question, answer=r)}],
                                       tokenize=False, add_generation_prompt=True)
        with torch.no_grad():
            probs = model(torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])).logits[0,
                                                                                                   -1].double().softmax(-1)
        yes, no = tok.convert_tokens_to_ids("Yes"), tok.convert_tokens_to_ids("No")
        expected.append(float(probs[yes]))
        log_odds.append(math.log(probs[yes]) - math.log(probs[no]))
    assert rm.score(reqs()) == pytest.approx(expected, abs=1e-6)
    odds = GenerativeRM(str(tiny["causal"]), runtime=FP32, score="log_odds").score(reqs())
    assert odds == pytest.approx(log_odds, abs=1e-5)
    with pytest.raises(ConfigError, match="single tokens"):  # checked when the tokenizer loads, at first use
        GenerativeRM(str(tiny["causal"]), runtime=FP32, yes_token="Yes indeed").score(reqs())


def test_linear_head_on_an_encoder(tiny, tmp_path):
    from safetensors.torch import save_file

    u = torch.randn(32)
    save_file({"weight": u, "bias": torch.tensor([0.5])}, str(tmp_path / "head.safetensors"))
    rm = LinearHeadRM(str(tiny["bert"]), head=str(tmp_path / "head.safetensors"), runtime=FP32, template="plain")
    assert rm.pooling == "mean"
    tok = transformers.AutoTokenizer.from_pretrained(tiny["bert"])
    model = transformers.AutoModel.from_pretrained(tiny["bert"], dtype=torch.float32).eval()
    expected = []
    for p, r in PAIRS:
        prompt = p if isinstance(p, str) else "\n\n".join(m["content"] for m in p)
        ids = torch.tensor([tok(prompt + "\n\n" + r)["input_ids"]])
        with torch.no_grad():
            h = model(input_ids=ids).last_hidden_state[0].mean(0)
        expected.append(float(h @ u) + 0.5)
    assert rm.score(reqs()) == pytest.approx(expected, abs=1e-4)
    save_file({"weight": torch.randn(7)}, str(tmp_path / "bad.safetensors"))
    with pytest.raises(ConfigError, match="head has 7 weights"):  # checked when the weights load
        LinearHeadRM(str(tiny["bert"]), head=str(tmp_path / "bad.safetensors"), runtime=FP32).score(reqs())


# --- discretisation ------------------------------------------------------------------------

def test_clustering_by_hand():
    # two tight, well separated pairs
    levels = cluster_levels(np.array([0.0, 0.01, 5.0, 5.02]), np.array([0.01, 0.01, 0.01, 0.01]))
    assert list(levels) == [0, 0, 1, 1]
    # equal means with a large variance share a cluster; a certain, distant one stays apart
    levels = cluster_levels(np.array([1.0, 1.0, 9.0]), np.array([4.0, 4.0, 0.0001]))
    assert levels[0] == levels[1] != levels[2]
    # no noise at all: only exactly equal means merge
    assert list(cluster_levels(np.array([2.0, 1.0, 2.0]), np.zeros(3))) == [1, 0, 1]
    assert prob_within(0.0, 1.0, 1.0) == pytest.approx(0.6826894921, abs=1e-9)


@pytest.mark.parametrize("variant", ["full", "head"])
def test_discretized_rewards_are_seeded_integers(tiny, variant):
    group = ComparisonGroup("g", "Pick a number between 1 and 10.", ["7", "7 is it", "Paris", "a b c", "no"],
                            [1, 1, 0, 0, 0])
    batch = [ScoreRequest(group.prompt, r, "g", i) for i, r in enumerate(group.responses)]

    def rewards(seed, p=0.3):
        rm = DiscretizedRM({"kind": "implicit", "args": {"model": str(tiny["causal"]), "normalize": "mean"}},
                           T=4, p=p, variant=variant, seed=seed, runtime=FP32)
        raw = rm.score(batch)
        assert raw.shape == (5, 4) and np.isfinite(raw).all()
        return raw, rm.postprocess([group], raw)

    raw1, r1 = rewards(0)
    raw2, r2 = rewards(0)
    raw3, _ = rewards(1)
    assert np.array_equal(raw1, raw2) and np.array_equal(r1, r2)
    assert not np.array_equal(raw1, raw3)
    assert np.all(r1 == np.round(r1)) and r1.min() == 0
    assert raw1.std(axis=1).max() > 0  # dropout really is on


def test_discretize_refuses_models_without_dropout():
    with pytest.raises(ConfigError, match="can sample with dropout"):
        DiscretizedRM("length")


def test_load_errors_say_where_they_looked(tmp_path):
    with pytest.raises(ConfigError, match="no such folder"):
        ImplicitRM(str(tmp_path / "nope"), runtime=FP32)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"cannot load model .* from the local folder"):
        ImplicitRM(str(empty), runtime=FP32)


def test_lmeval_hf_backend_agrees_with_native_implicit(tiny):
    pytest.importorskip("lm_eval")
    from rmbench.models.lmeval import LMEvalRM

    native = ImplicitRM(str(tiny["causal"]), runtime=FP32).score(reqs())
    rm = LMEvalRM("hf", f"pretrained={tiny['causal']},dtype=float32", runtime=FP32, batch_size=2)
    assert rm.score(reqs()) == pytest.approx(native, abs=1e-4)
    with_ref = LMEvalRM("hf", f"pretrained={tiny['causal']},dtype=float32",
                        ref_model_args=f"pretrained={tiny['causal_ref']},dtype=float32", beta=0.5, runtime=FP32)
    native_ref = ImplicitRM(str(tiny["causal"]), ref=str(tiny["causal_ref"]), beta=0.5, runtime=FP32).score(reqs())
    assert with_ref.score(reqs()) == pytest.approx(native_ref, abs=1e-4)


SHARED = [(p, r) for p in ("Pick a number between 1 and 10.", "Name a primary color.")
          for r in ("7", "The answer is 7.", "red", "a b c d e f g h i j", " blue, yellow")]


@pytest.mark.parametrize("template,max_length", [("chat", None), ("plain", None), ("chat", 24)])
def test_prompt_kv_reuse_equals_one_pass_per_text(tiny, template, max_length):
    """Rows of one prompt share its KV cache (rmbench.models.prefix); the rewards equal those
    of a plain pass over each whole text, with and without left truncation."""
    rm = ImplicitRM(str(tiny["causal"]), runtime=FP32, template=template, max_length=max_length)
    batch = reqs(SHARED + PAIRS)
    enc = rm._encode(batch)
    from rmbench.models.prefix import prefix_units
    units = prefix_units(enc.input_ids, enc.shared)[1]
    if max_length is None:
        assert len(units) == len({str(p) for p, _ in SHARED + PAIRS})  # each prompt runs once
    shared = rm.score(batch)
    plain = [rm.score([r])[0] for r in batch]  # a batch of one shares nothing
    assert shared == pytest.approx(plain, abs=1e-5)
    if template == "chat" and max_length is None:
        assert shared[:len(SHARED)] == pytest.approx([hand_logprob(tiny["causal"], p, r) for p, r in SHARED], abs=1e-5)


def test_prefix_lengths_stop_before_the_token_that_predicts_the_response(tiny):
    rm = ImplicitRM(str(tiny["causal"]), runtime=FP32)
    batch = reqs(SHARED)
    enc = rm._encode(batch)
    assert rm.prefix_lengths(batch) == list(enc.shared)
    assert rm.lengths(batch) == enc.lengths()
    assert len(set(enc.shared[:5])) == 1 and len(set(enc.shared[5:])) == 1


def test_seqcls_kv_reuse_equals_one_pass_per_text(tiny):
    rm = SeqClsRM(str(tiny["seqcls"]), runtime=FP32)
    assert rm.shares_prefix
    batch = reqs(SHARED)
    assert len(set(rm._encode(batch).shared)) == 2
    assert rm.score(batch) == pytest.approx([rm.score([r])[0] for r in batch], abs=1e-5)
    assert rm.score(batch)[:2] == pytest.approx([hand_seqcls(tiny["seqcls"], p, r) for p, r in SHARED[:2]], abs=1e-5)
    assert not SeqClsRM(str(tiny["seqcls"]), runtime=FP32, padding_side="left").shares_prefix


def test_a_half_precision_copy_scores_like_casting_at_load(tiny, tmp_path):
    """The embedded model's bf16 copy (rmbench.models.embedded.cast_folder) gives the rewards of
    loading the float32 folder with dtype bfloat16: the same rounding, done once on disk."""
    import shutil

    from rmbench.models.embedded import cast_folder

    src = tmp_path / "fp32"
    shutil.copytree(tiny["causal"], src)
    cast_folder(src, tmp_path / "bf16", torch.bfloat16)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left
    bf16 = Runtime(dtype="bfloat16", device="cpu")
    a = ImplicitRM(str(src), runtime=bf16).score(reqs(SHARED))
    b = ImplicitRM(str(tmp_path / "bf16"), runtime=bf16).score(reqs(SHARED))
    assert list(a) == list(b)


def test_reference_reuses_the_encoding_only_when_it_would_encode_alike(tiny):
    rm = ImplicitRM(str(tiny["causal"]), ref=str(tiny["causal_ref"]), runtime=FP32)
    assert rm._encodes_like_reference()  # the tiny models share one tokenizer
    shared = rm.score(reqs(SHARED))
    own = rm.reference
    rm.reference = ImplicitRM(str(tiny["causal_ref"]), runtime=FP32, truncation=Truncation(None, "right"))
    assert not rm._encodes_like_reference()  # the reference alone would cut elsewhere: it encodes for itself
    assert list(rm.score(reqs(SHARED))) == pytest.approx(list(shared), abs=1e-6)
    rm.reference = own
    assert rm._encodes_like_reference()
    assert list(rm.score(reqs(SHARED))) == list(shared)


@pytest.mark.parametrize("adapter", [ImplicitRM, GenerativeRM])
def test_causal_adapters_refuse_a_sequence_classification_checkpoint(tiny, adapter):
    # Loaded as a causal LM, a seqcls checkpoint lacks lm_head.weight, which transformers
    # initialises at random: the scores would come from a random head.
    rm = adapter(str(tiny["seqcls"]), runtime=FP32)
    with pytest.raises(ConfigError, match=r"lm_head\.weight.*LlamaForSequenceClassification.*use seqcls:"):
        rm.score(reqs()[:1])


def test_seqcls_refuses_a_causal_checkpoint_unless_asked_for_a_fresh_head(tiny):
    with pytest.raises(ConfigError, match=r"score\.weight.*LlamaForCausalLM: use implicit:.* or generative:"):
        SeqClsRM(str(tiny["causal"]), runtime=FP32).score(reqs()[:1])
    # num_labels=1 asks for a fresh one-output head on a plain LM (its docstring): it loads.
    assert len(SeqClsRM(str(tiny["causal"]), runtime=FP32, num_labels=1).score(reqs()[:1])) == 1


def test_linear_reads_only_the_backbone_of_a_seqcls_checkpoint(tiny, tmp_path):
    from safetensors.torch import save_file

    head = tmp_path / "head.safetensors"
    save_file({"weight": torch.ones(32), "bias": torch.zeros(1)}, str(head))
    assert len(LinearHeadRM(str(tiny["seqcls"]), str(head), runtime=FP32).score(reqs()[:2])) == 2


def test_the_cli_refuses_implicit_on_a_seqcls_checkpoint_in_one_line(tiny, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--model", f"implicit:{tiny['seqcls']}", "--tasks", "ties_sample",
                                      "--dtype", "float32", "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "lm_head.weight" in lines[0] and f"seqcls:{tiny['seqcls']}" in lines[0]
    assert "Traceback" not in result.output and not (out / "results.json").exists()
