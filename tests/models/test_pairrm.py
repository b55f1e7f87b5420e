"""``pairrm:CHECKPOINT``, a pairwise preference model (LLM-Blender's PairRM and kin), on a tiny random
DeBERTa-v2 PairRM built from a config here (tests/support/pairrm_checkpoint.py) and loaded back through
``pairrm:PATH``: equal to a plain loop over the same inputs, LLM-Blender's truncation rule, the
both-orders symmetry, runs end to end on pairwise and best-of-n tasks, one-line errors for what is
not a PairRM, and conformance with LLM-Blender's own code (where the ``llm-blender`` package
imports) and RewardBench's copy of it (``rewardbench/models/pairrm.py``, its PairRMPipeline)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import rmbench  # noqa: E402
from rmbench.core.types import ComparisonGroup, prompt_from_json  # noqa: E402
from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models import Runtime, Truncation, build_model, parse_model_spec  # noqa: E402
from rmbench.models.base import PairVerdictModel  # noqa: E402
from rmbench.models.pairrm import PairRM  # noqa: E402
from rmbench.models.pairrm_inputs import combine, comparison_texts  # noqa: E402
from rmbench.scoring.engine import requests_for  # noqa: E402
from tests.support.pairrm_checkpoint import HandPairRM, build_pairrm  # noqa: E402

FP32 = Runtime(dtype="float32", device="cpu")
TOL = 5e-5  # a batch pads and orders its inputs its own way (the hand loop runs each alone): float32 rounding
CONVERSATION = [{"role": "user", "content": "Hello there"}, {"role": "assistant", "content": "hi, how are you?"},
                {"role": "user", "content": "Name a primary color."}]
GROUPS = [
    ComparisonGroup("pair", "Pick a number between 1 and 10.", ("The answer is 7.", "red, blue or yellow"), (1, 0)),
    ComparisonGroup("three", "Name a primary color.", ("red", "The capital of France is Paris.", "blue, yellow"),
                    (1, 0, 1)),
    ComparisonGroup("chat", prompt_from_json(CONVERSATION), ("red, blue or yellow", "7 8 9"), (1, 0)),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_pairrm(tmp_path_factory.mktemp("pairrm") / "tiny-pairrm")


@pytest.fixture(scope="module")
def hand(folder):
    return HandPairRM(folder)


def rewards(model, groups=GROUPS):
    return np.asarray(model.score(requests_for(groups, with_context=True)))


def hand_rewards(hand, groups=GROUPS, format="conversation", **limits):
    out = []
    for g in groups:
        source, candidates = comparison_texts(g.prompt, g.responses, format)
        out += hand.rewards(source, candidates, **limits)
    return np.asarray(out)


# --- equal to a plain loop ---------------------------------------------------------------------
@pytest.mark.parametrize("format", ["conversation", "plain"])
def test_rewards_equal_a_plain_loop_over_every_ordered_pair(folder, hand, format):
    model = build_model(parse_model_spec(f"pairrm:{folder}"), FP32) if format == "conversation" else \
        PairRM(str(folder), format=format, runtime=FP32)
    assert isinstance(model, PairRM) and isinstance(model, PairVerdictModel)
    got = rewards(model)
    assert got == pytest.approx(hand_rewards(hand, format=format), abs=TOL)
    assert np.ptp(got) > 0.05  # the tiny model discriminates, so the check can fail


def test_the_conversation_texts_are_llm_blenders():
    source, candidates = comparison_texts(prompt_from_json(CONVERSATION), ["red", "blue"], "conversation")
    assert source == ("Finish the following coversation in each i-th turn by filling in <Response i> with your "
                      "response.USER: Hello there\nAssistant: <Response 1>\nUSER: Name a primary color.\n"
                      "Assistant: <Response 2>")
    assert candidates == ["<Response 1>: hi, how are you?\n<Response 2>: red",
                          "<Response 1>: hi, how are you?\n<Response 2>: blue"]
    assert comparison_texts("q?", ["a"], "plain") == ("q?", ["a"])
    assert comparison_texts(prompt_from_json(CONVERSATION), ["a"], "plain")[0].startswith("user: Hello there\n\n")


def test_truncation_follows_tokenize_pairs_rule(folder, hand):
    long_prompt = "Pick a number between 1 and 10. " * 6
    long = ComparisonGroup("long", long_prompt, ("The answer is 7. " * 8, "red, blue or yellow " * 8), (1, 0))
    model = PairRM(str(folder), format="plain", source_max_length=12, candidate_max_length=9, runtime=FP32)
    ids = model.pair_ids(long_prompt, *long.responses)
    assert list(ids.ids) == hand.ids(long_prompt, *long.responses, source_max=12, candidate_max=9)
    assert len(ids.ids) == 12 + 9 + 9 and ids.cut  # the source takes 12, each candidate (12 + 18 - 12) // 2
    assert not model.pair_ids("q", "a", "b").cut
    short = model.pair_ids("q", *long.responses)  # 4 source tokens leave (12 + 18 - 4) // 2 = 13 to each candidate
    assert len(short.ids) == 4 + 13 + 13 and list(short.ids) == hand.ids("q", *long.responses, source_max=12,
                                                                         candidate_max=9)
    got = rewards(model, [long])
    assert got == pytest.approx(hand_rewards(hand, [long], "plain", source_max=12, candidate_max=9), abs=TOL)
    model.score(requests_for([long], with_context=True))
    assert model.ran_with()["pairs_cut"] == 4


def test_passes_are_cut_to_the_token_budget_with_the_same_rewards(folder):
    whole = rewards(PairRM(str(folder), runtime=FP32))
    small = PairRM(str(folder), runtime=Runtime(dtype="float32", device="cpu", token_budget=40))
    calls = []
    forward = small._forward
    small._forward = lambda inputs: calls.append(len(inputs)) or forward(inputs)
    assert rewards(small) == pytest.approx(whole, abs=TOL)
    assert sum(calls) == 2 + 6 + 2 and max(calls) < 10  # every distinct ordered pair once, in several passes


# --- symmetry ----------------------------------------------------------------------------------
def test_both_orders_make_the_rewards_symmetric(folder):
    model = PairRM(str(folder), runtime=FP32)
    pair = GROUPS[0]
    a, b = rewards(model, [pair])
    assert a == -b and a != 0.0  # r_a = C(a, b) / 2 = -r_b exactly
    swapped = ComparisonGroup("swapped", pair.prompt, pair.responses[::-1], pair.utilities[::-1])
    assert tuple(rewards(model, [swapped])) == pytest.approx((b, a), abs=TOL)  # the order shown changes nothing
    three = GROUPS[1]
    r3 = rewards(model, [three])
    assert r3.sum() == pytest.approx(0.0, abs=1e-9)
    perm = (2, 0, 1)
    moved = ComparisonGroup("moved", three.prompt, tuple(three.responses[i] for i in perm),
                            tuple(three.utilities[i] for i in perm))
    assert rewards(model, [moved]) == pytest.approx(r3[list(perm)], abs=TOL)


def test_verdicts_are_the_signs_of_the_comparison_logits(folder):
    logit = rewards(PairRM(str(folder), runtime=FP32))
    verdict = rewards(PairRM(str(folder), score="verdict", runtime=FP32))
    a, b = verdict[:2]
    assert a - b == np.sign(logit[0] - logit[1]) and abs(a - b) == 1.0
    assert set(np.round(verdict[2:5] * 3, 9)) <= {-2.0, -1.0, 0.0, 1.0, 2.0}  # (1/3) x sum of two signs


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.lists(st.lists(st.floats(-50, 50), min_size=n, max_size=n), min_size=n, max_size=n), st.permutations(range(n)))))
def test_combine_sums_to_zero_and_follows_the_responses_wherever_they_stand(case):
    logits, perm = np.asarray(case[0]), list(case[1])
    for score in ("logit", "verdict"):
        r = combine(logits, score)
        assert abs(r.sum()) <= 1e-9 * max(1.0, np.abs(logits).sum())
        moved = combine(logits[np.ix_(perm, perm)], score)
        assert moved == pytest.approx(r[perm], abs=1e-9 * max(1.0, np.abs(logits).max()))
        diagonal = logits.copy()
        np.fill_diagonal(diagonal, 99.0)  # the diagonal (a response against itself) is never read
        assert list(combine(diagonal, score)) == list(r)
    if len(logits) == 2:
        a, b = combine(logits)
        assert a == -b and a - b == pytest.approx(logits[0, 1] - logits[1, 0])
    assert set(np.round(combine(logits, "verdict") * len(logits))) <= set(range(-len(logits) + 1, len(logits)))


@settings(max_examples=8, deadline=None)
@given(st.lists(st.text("abcdefghij 0123456789.,:<>|", min_size=0, max_size=40), min_size=2, max_size=2))
def test_a_pairs_rewards_are_opposite_and_the_order_shown_changes_nothing(folder, texts):
    model = _model(folder)
    a, b = rewards(model, [ComparisonGroup("g", "Pick a number.", tuple(texts), (1, 0))])
    assert a == -b
    swapped = rewards(model, [ComparisonGroup("g", "Pick a number.", tuple(texts[::-1]), (0, 1))])
    assert tuple(swapped) == pytest.approx((b, a), abs=TOL)


_MODELS: dict[str, PairRM] = {}


def _model(folder) -> PairRM:
    """One model per folder for the property tests (hypothesis runs a test's examples in one fixture)."""
    if str(folder) not in _MODELS:
        _MODELS[str(folder)] = PairRM(str(folder), runtime=FP32)
    return _MODELS[str(folder)]


def test_combine_by_hand():
    L = np.array([[0.0, 1.0, 2.0], [0.5, 0.0, -1.0], [0.0, 3.0, 0.0]])
    # C = L - L.T = [[0, .5, 2], [-.5, 0, -4], [-2, 4, 0]]; r = row sums / 3
    assert combine(L) == pytest.approx([2.5 / 3, -4.5 / 3, 2 / 3])
    assert combine(L, "verdict") == pytest.approx([2 / 3, -2 / 3, 0.0])
    assert list(combine(np.zeros((1, 1)))) == [0.0]


# --- end to end --------------------------------------------------------------------------------
def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_runs_end_to_end_on_pairwise_and_best_of_n_tasks(folder, hand, tmp_path):
    jb = [{"pair_id": f"p{i}", "original_id": i, "source": "mmlu-pro-law", "question": f"Pick a number {i}?",
           "response_model": "gpt-4o-2024-05-13", "response_A": f"The answer is {i}.", "response_B": "red or blue",
           "label": "A>B" if i % 2 else "B>A"} for i in range(4)]
    rb2 = [{"id": f"m{i}", "prompt": f"Name a primary color {i}.", "chosen": ["red"],
            "rejected": ["Paris", f"The answer is {i}", "blue yellow 7"], "subset": "Math"} for i in range(3)]
    rmb = [{"id": i, "prompt": f"Name a primary color {i}.", "chosen": ["red", "red, blue", "Red, blue, yellow."],
            "rejected": ["Paris", f"The answer is {i}", "7 8 9"], "domain": "chat"} for i in range(2)]
    (tmp_path / "chat.json").write_text(json.dumps(rmb))
    from rmbench.tasks.loading import parse_data_overrides

    data = parse_data_overrides([f"judgebench={_write(tmp_path / 'jb.jsonl', jb)}",
                                 f"rewardbench2={_write(tmp_path / 'rb2.jsonl', rb2)}",
                                 f"rm_bench={tmp_path / 'chat.json'}"])
    tasks = ("judgebench", "rewardbench2", "rm_bench")
    res = rmbench.evaluate(rmbench.EvalConfig(model=f"pairrm:{folder}", tasks=tasks, data=data, runtime=FP32,
                                              n_bootstrap=0),
                           out_dir=tmp_path / "run")
    assert res.task("judgebench").args.get("single_game") is False  # both orders read: JudgeBench's two games
    correct = []
    for row in jb:
        source, (a, b) = comparison_texts(row["question"], [row["response_A"], row["response_B"]], "conversation")
        r_a, r_b = hand.rewards(source, [a, b])
        correct.append(np.sign(r_a - r_b) == (1 if row["label"] == "A>B" else -1))
    assert res.value("judgebench", "judgebench_score") == pytest.approx(np.mean(correct), abs=1e-12)
    best = []
    for row in rb2:
        source, texts = comparison_texts(row["prompt"], row["chosen"] + row["rejected"], "conversation")
        r = hand.rewards(source, texts)
        best.append(all(r[0] > x for x in r[1:]))
    assert res.value("rewardbench2", "rewardbench2_score", subset="Math") == pytest.approx(np.mean(best), abs=1e-12)
    assert np.isfinite(res.value("rewardbench2", "discrimination", eps=0.0))
    ordered = []  # RM-Bench: a group of six, its 3 x 3 (chosen, rejected) pairs by the ranking scores
    for row in rmb:
        source, texts = comparison_texts(row["prompt"], row["chosen"] + row["rejected"], "conversation")
        r = hand.rewards(source, texts)
        ordered += [r[c] > r[3 + k] for c in range(3) for k in range(3)]
    assert res.value("rm_bench", "pairwise_accuracy") == pytest.approx(np.mean(ordered), abs=1e-12)
    assert res.execution.model["format"] == "conversation" and res.execution.stats.ran_with["pairs_cut"] == 0


def test_the_cli_runs_it_and_refuses_what_is_not_a_pairrm_in_one_line(folder, tiny, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    jb = [{"pair_id": f"p{i}", "original_id": i, "source": "livebench-math", "question": f"q{i}",
           "response_model": "gpt-4o-2024-05-13", "response_A": "7", "response_B": f"red {i}", "label": "A>B"}
          for i in range(3)]
    data = _write(tmp_path / "jb.jsonl", jb)

    def run(model, *extra):
        return CliRunner().invoke(app, ["eval", "--model", model, "--tasks", "judgebench", "--data",
                                        f"judgebench={data}", "--dtype", "float32", "--bootstrap", "0",
                                        "--out", str(tmp_path / f"run{len(extra)}-{abs(hash(model))}"), *extra],
                                  env={"COLUMNS": "250"})

    ok = run(f"pairrm:{folder}")
    assert ok.exit_code == 0, ok.output
    ranker = tmp_path / "ranker"
    ranker.mkdir()
    (ranker / "config.json").write_text(json.dumps({"ranker_type": "pairranker", "model_type": "deberta"}))
    cases = [(f"pairrm:{tiny['seqcls']}", (), ("is not a PairRM checkpoint", "model_type 'llama'")),
             (f"pairrm:{ranker}", (), ("LLM-Blender's own ranker folder", "llm-blender/PairRM-hf")),
             (f"pairrm:{folder}", ("--max-length", "64"), ("--max-length does not apply", "source_max_length")),
             (f"pairrm:{folder}", ("--model-arg", "format=chat"), ("format must be",))]
    for model, extra, says in cases:
        result = run(model, *extra)
        lines = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert result.exit_code != 0 and len(lines) == 1, result.output
        assert all(s in lines[0] for s in says), lines[0]
        assert "Traceback" not in result.output


def test_a_deberta_without_the_pairrm_fields_or_tokens_is_refused(folder, tmp_path):
    plain = tmp_path / "plain"
    shutil.copytree(folder, plain)
    config = json.loads((plain / "config.json").read_text())
    (plain / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "cand1_prefix_id"}))
    with pytest.raises(ConfigError, match="has no cand1_prefix_id"):
        PairRM(str(plain), runtime=FP32)
    wrong = tmp_path / "wrong"
    shutil.copytree(folder, wrong)
    (wrong / "config.json").write_text(json.dumps({**config, "source_prefix_id": 5}))
    with pytest.raises(ConfigError, match="maps <|source|> to id .* config.json names id 5"):
        PairRM(str(wrong), runtime=FP32).score(requests_for(GROUPS[:1], with_context=True))
    headless = tmp_path / "headless"
    shutil.copytree(folder, headless)
    from safetensors.torch import load_file, save_file

    state = load_file(str(folder / "model.safetensors"))
    save_file({k: v for k, v in state.items() if not k.startswith("head_layer.")}, str(headless / "model.safetensors"))
    with pytest.raises(ConfigError, match="missing from the checkpoint: head_layer"):
        PairRM(str(headless), runtime=FP32).score(requests_for(GROUPS[:1], with_context=True))
    with pytest.raises(ConfigError, match="conversation of user and assistant turns"):
        system = ComparisonGroup("sys", prompt_from_json([{"role": "system", "content": "Be brief."},
                                                          {"role": "user", "content": "q"}]), ("a", "b"), (1, 0))
        PairRM(str(folder), runtime=FP32).score(requests_for([system], with_context=True))
    with pytest.raises(ConfigError, match="--max-length does not apply"):
        PairRM(str(folder), runtime=FP32, truncation=Truncation(64))


def test_identity_holds_the_arguments_and_weights_not_the_path(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    a, b = PairRM(str(folder), runtime=FP32), PairRM(str(copy), runtime=FP32)
    assert a.fingerprint() == b.fingerprint()
    assert PairRM(str(folder), score="verdict", runtime=FP32).fingerprint() != a.fingerprint()
    assert PairRM(str(folder), candidate_max_length=100, runtime=FP32).fingerprint() != a.fingerprint()


# --- conformance with the official code --------------------------------------------------------
def _llm_blender(monkeypatch):
    """LLM-Blender's own modules, or None. ``RMBENCH_LLM_BLENDER_DIR``: a folder the package was
    installed into (``pip install --target DIR --no-deps llm-blender dataclasses-json marshmallow
    typing-inspect mypy-extensions``). Its ``blender_utils`` imports ``TRANSFORMERS_CACHE``, which
    transformers 5 no longer has: the test gives that one name back (no line of its code is edited)."""
    where = os.environ.get("RMBENCH_LLM_BLENDER_DIR")
    if where:
        monkeypatch.syspath_prepend(where)
    if importlib.util.find_spec("llm_blender") is None:
        return None
    import transformers.utils.hub as hub

    monkeypatch.setattr(hub, "TRANSFORMERS_CACHE", str(Path.home() / ".cache" / "huggingface" / "hub"),
                        raising=False)
    from llm_blender.blender import blender_utils
    from llm_blender.gpt_eval.utils import get_scores_from_cmps
    from llm_blender.pair_ranker.collator import CrossCompareCollator
    from llm_blender.pair_ranker.pairrm import DebertaV2PairRM

    return blender_utils, get_scores_from_cmps, DebertaV2PairRM, CrossCompareCollator


def test_ids_and_rewards_equal_llm_blenders_own_code(folder, monkeypatch):
    official = _llm_blender(monkeypatch)
    if official is None:
        pytest.skip("the llm-blender package is not importable: pip install --no-deps llm-blender dataclasses-json "
                    "marshmallow typing-inspect mypy-extensions (or set RMBENCH_LLM_BLENDER_DIR to a --target folder)")
    blender_utils, get_scores_from_cmps, DebertaV2PairRM, CrossCompareCollator = official
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    net = DebertaV2PairRM.from_pretrained(folder, dtype=torch.float32).eval()
    model = PairRM(str(folder), runtime=FP32)
    collator_tok = AutoTokenizer.from_pretrained(folder)
    # its collator calls batch_encode_plus, which transformers 5 folded into __call__: given back by name
    collator_tok.batch_encode_plus = lambda texts, **kwargs: collator_tok(texts, **kwargs)
    collator = CrossCompareCollator(1224, collator_tok, 412)
    for g in GROUPS:
        convs = [[{"role": "USER" if m.role == "user" else "ASSISTANT", "content": m.content}
                  for m in (g.prompt if not isinstance(g.prompt, str) else prompt_from_json([
                      {"role": "user", "content": g.prompt}]))] + [{"role": "ASSISTANT", "content": r}]
                 for r in g.responses]
        n = len(convs)
        cmps = np.zeros((1, n, n))
        for i in range(n):
            for j in range(n):
                if i == j:
                    continue
                inputs, one, two = blender_utils.get_pair_from_conv([convs[i]], [convs[j]])
                enc = blender_utils.tokenize_pair(tok, inputs, one, two)
                theirs = enc["input_ids"][0][enc["attention_mask"][0].bool()].tolist()
                assert list(model.pair_ids(inputs[0], one[0], two[0]).ids) == theirs
                # LLM-Blender's collator (Blender.compare's path) at a batch of one: the same ids
                batch = collator([{"source": inputs[0], "candidates": [one[0], two[0]]}])
                segments = [batch["source_ids"][0]] + [batch["candidate_ids"][0, k] for k in (0, 1)]
                joined = [t for s in segments for t in s[:int((s == tok.sep_token_id).nonzero()[-1]) + 1].tolist()]
                cand = tok.convert_tokens_to_ids("<|candidate|>")
                first = joined.index(cand)
                joined[first] = tok.convert_tokens_to_ids("<|candidate1|>")
                joined[joined.index(cand)] = tok.convert_tokens_to_ids("<|candidate2|>")
                assert joined == theirs
                with torch.no_grad():
                    cmps[0, i, j] = float(net(**enc).logits[0])
        expected = get_scores_from_cmps(cmps)[0]
        assert rewards(model, [g]) == pytest.approx(expected, abs=TOL)


def _rewardbench_pairrm():
    """RewardBench's ``rewardbench/models/pairrm.py`` (0.1.4), loaded from its file (its package's
    ``__init__`` imports model code that fails on transformers 5), or None."""
    spec = importlib.util.find_spec("rewardbench")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "models" / "pairrm.py"
    if not path.is_file():
        return None
    module_spec = importlib.util.spec_from_file_location("rewardbench_pairrm_file", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_pair_logits_equal_rewardbenchs_pairrm_pipeline(folder):
    official = _rewardbench_pairrm()
    if official is None:
        pytest.skip("RewardBench's code is not installed: pip install --no-deps rewardbench==0.1.4")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    pipe = official.PairRMPipeline("text-classification",
                                   official.DebertaV2PairRM.from_pretrained(folder, dtype=torch.float32), tok)
    pairs = [g for g in GROUPS if len(g.responses) == 2]
    chosen = [[*json.loads(json.dumps(_messages(g.prompt))), {"role": "assistant", "content": g.responses[0]}]
              for g in pairs]
    rejected = [[*_messages(g.prompt), {"role": "assistant", "content": g.responses[1]}] for g in pairs]
    theirs = [float(x) for x in pipe(chosen, rejected, output_logits=True)]
    got = rewards(PairRM(str(folder), runtime=FP32), pairs)
    assert [got[2 * k] - got[2 * k + 1] for k in range(len(pairs))] == pytest.approx(theirs, abs=TOL)


def _messages(prompt):
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else \
        [{"role": m.role, "content": m.content} for m in prompt]
