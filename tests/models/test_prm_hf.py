"""``prm:``, transformers process reward models, on tiny random checkpoints of each style built
here (tests/support/prm_checkpoints.py): each style's step scores equal a plain hand-written loop (one
forward pass per step prefix, or per solution as its model card does), a padded batch equals each
solution alone on either padding side, the style comes from the checkpoint where it says so, and
a PRM scores responses as a response-level RM. The ``gpu`` test compares CUDA with the CPU."""

import ast
import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rmbench.core.specs import ModelSpec  # noqa: E402
from rmbench.core.types import ComparisonGroup  # noqa: E402
from rmbench.errors import ConfigError, ModelError  # noqa: E402
from rmbench.models import build_model  # noqa: E402
from rmbench.models.base import Runtime, Truncation  # noqa: E402
from rmbench.models.step_model import StepRequest  # noqa: E402
from rmbench.models.steps import aggregate, split_steps  # noqa: E402
from rmbench.scoring.engine import score_groups  # noqa: E402
from rmbench.scoring.steps import score_steps  # noqa: E402

CPU = Runtime(dtype="float32", device="cpu", trust_remote_code=True)
STYLES = ("trl", "qwen", "math_shepherd")
SOLUTIONS = [
    StepRequest("What is 2 + 3?", ("2 + 3 = 5", "The answer is 5"), "a"),
    StepRequest("Pick a number between 1 and 10.", ("The answer is 7.",), "b"),
    StepRequest("Name a primary color.", ("red is a color", "blue is a color", "yellow", "The answer is red"), "c"),
    StepRequest("Hello there, how are you today?", ("I am fine, thank you.", "And you?"), "d"),
]


@pytest.fixture()
def ckpt(prm_checkpoints):
    """The session's tiny PRM checkpoints (tests/conftest.py), one per style."""
    return prm_checkpoints


def _prm(folder, runtime=CPU, **args):
    return build_model(ModelSpec(name="p", kind="prm", args={"model": str(folder), **args}), runtime)


# --- the hand-written loops: each model's own recipe, one forward pass at a time --------------
def trl_by_prefix(folder, requests, separator="\n"):
    """TRL's PRMTrainer.tokenize_row read literally, one forward pass per step prefix: the score of
    step i is P(label 1) at the last token of [bos] + problem + (step_1 + sep) + ... + (step_i + sep)."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForTokenClassification.from_pretrained(folder, dtype=torch.float32).eval()
    out = []
    for r in requests:
        ids = [tok.bos_token_id] + tok(r.problem, add_special_tokens=False)["input_ids"]
        scores = []
        for step in r.steps:
            ids = ids + tok(step, add_special_tokens=False)["input_ids"]
            ids = ids + tok.encode(separator, add_special_tokens=False)
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
            scores.append(torch.softmax(logits, -1)[1].item())
        out.append(scores)
    return out


def qwen_by_solution(folder, requests):
    """Qwen2.5-Math-PRM's model card: one pass per solution, P(positive) at each <extra_0>."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32, trust_remote_code=True).eval()
    out = []
    for r in requests:
        messages = [{"role": "system", "content": "Please reason step by step, and put your final answer within "
                                                  "\\boxed{}."},
                    {"role": "user", "content": r.problem},
                    {"role": "assistant", "content": "<extra_0>".join(r.steps) + "<extra_0>"}]
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        input_ids = tok.encode(text, return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=input_ids)[0]
        mask = input_ids == tok.encode("<extra_0>")[0]
        out.append(torch.softmax(logits, -1)[mask][:, 1].tolist())
    return out


def shepherd_by_solution(folder, requests):
    """Math-Shepherd's model card: one pass per solution, softmax over the logits of + and - at each ки."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    candidates = tok.encode("+ -")[1:]
    tag = tok.encode("ки")[-1]
    out = []
    for r in requests:
        output = "\n".join(f"{s} ки" for s in r.steps)
        input_id = torch.tensor([tok.encode(f"{r.problem} {output}")])
        with torch.no_grad():
            logits = model(input_id).logits[:, :, candidates]
        out.append(logits.softmax(dim=-1)[:, :, 0][input_id == tag].tolist())
    return out


REFERENCE = {"trl": trl_by_prefix, "qwen": qwen_by_solution, "math_shepherd": shepherd_by_solution}


@pytest.mark.parametrize("style", STYLES)
def test_step_scores_equal_the_hand_written_loop(ckpt, style):
    model = _prm(ckpt[style], style=style)
    got = model.score_steps(SOLUTIONS)
    want = REFERENCE[style](ckpt[style], SOLUTIONS)
    for g, w, r in zip(got, want, SOLUTIONS):
        assert len(g) == len(r.steps)
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)
    flat = np.concatenate(got)
    assert flat.std() > 0.01  # the scores differ: the test can tell steps apart


def trl_tokenize_row():
    """TRL's own ``PRMTrainer.tokenize_row``, compiled from its source file: the installed trl's
    where it still has the PRM trainer (it left trl's core after 0.2x), else the file that
    ``RMBENCH_TRL_PRM_TRAINER`` names (``pip download --no-deps trl==0.19.1`` and unzip
    ``trl/trainer/prm_trainer.py`` from the wheel); only that function is compiled, not the trainer."""
    spec = importlib.util.find_spec("trl")
    installed = Path(spec.origin).parent / "trainer" / "prm_trainer.py" if spec and spec.origin else None
    named = os.environ.get("RMBENCH_TRL_PRM_TRAINER")
    source = Path(named) if named else installed
    if source is None or not source.is_file():
        pytest.skip("TRL's prm_trainer.py is absent (the installed trl has no PRMTrainer): set RMBENCH_TRL_PRM_TRAINER "
                    "to trl/trainer/prm_trainer.py of trl==0.19.1 (pip download --no-deps trl==0.19.1)")
    tree = ast.parse(source.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "PRMTrainer")
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "tokenize_row")
    fn.decorator_list = []
    namespace: dict = {}
    exec(compile(ast.Module(body=[*ast.parse("from itertools import chain").body, fn], type_ignores=[]),
                 str(source), "exec"), namespace)
    return namespace["tokenize_row"]


@pytest.mark.parametrize("separator", ["\n", "\n\n"])
def test_trl_inputs_are_trls_own_tokenize_row(ckpt, separator):
    tokenize_row = trl_tokenize_row()
    model = _prm(ckpt["trl"], separator=separator)
    for r in SOLUTIONS:
        row = tokenize_row({"prompt": r.problem, "completions": list(r.steps), "labels": [True] * len(r.steps)},
                           model.tokenizer, separator, None, None, None, False, True)
        ours = model.prm_input(r)
        assert list(ours.ids) == row["input_ids"]
        assert list(ours.positions) == [i for i, label in enumerate(row["labels"]) if label != -100]


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("side", ["right", "left"])
def test_a_padded_batch_equals_each_solution_alone(ckpt, style, side):
    model = _prm(ckpt[style], style=style, padding_side=side)
    batch = model.score_steps(SOLUTIONS)
    alone = [model.score_steps([r])[0] for r in SOLUTIONS]
    assert len({len(model.prm_input(r).ids) for r in SOLUTIONS}) == len(SOLUTIONS)  # every row padded differently
    for b, a in zip(batch, alone):
        np.testing.assert_allclose(b, a, atol=1e-5, rtol=0)
    assert model.identity() == _prm(ckpt[style], style=style).identity()  # the side changes no score


def test_step_lengths_are_token_counts(ckpt):
    model = _prm(ckpt["trl"])
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(ckpt["trl"])
    r = SOLUTIONS[0]
    n = 1 + len(tok(r.problem, add_special_tokens=False)["input_ids"]) + sum(
        len(tok(s, add_special_tokens=False)["input_ids"]) + len(tok.encode("\n", add_special_tokens=False))
        for s in r.steps)
    assert model.step_lengths([r]) == [n]


def test_the_style_comes_from_the_checkpoint(ckpt):
    assert _prm(ckpt["trl"]).style == "trl"
    assert _prm(ckpt["qwen"]).style == "qwen"
    with pytest.raises(ConfigError) as err:
        _prm(ckpt["math_shepherd"]).score_steps(SOLUTIONS[:1])
    message = str(err.value)
    assert "\n" not in message and "style=trl|qwen|math_shepherd" in message and "LlamaForCausalLM" in message


def test_a_checkpoint_with_no_style_is_refused_before_its_weights_load(ckpt, monkeypatch):
    import rmbench.models.prm as prm

    def no_weights(*args, **kwargs):
        raise AssertionError("the weights were loaded before the style was known")

    monkeypatch.setattr(prm, "load_weights", no_weights)
    with pytest.raises(ConfigError, match="does not say which PRM it is; name it with --model-arg style="):
        _prm(ckpt["math_shepherd"])  # built: refused from its config, no batch, no weights
    assert _prm(ckpt["trl"]).style == "trl"  # a style read from the config loads nothing either


def test_a_bad_style_and_untrusted_code_are_one_line_errors(ckpt):
    with pytest.raises(ConfigError, match="style must be one of trl, qwen, math_shepherd, got 'qwen2'"):
        _prm(ckpt["trl"], style="qwen2")
    untrusted = Runtime(dtype="float32", device="cpu")
    with pytest.raises(ConfigError, match="--trust-remote-code"):
        _prm(ckpt["qwen"], runtime=untrusted).score_steps(SOLUTIONS[:1])
    with pytest.raises(ConfigError, match="random"):  # a causal LM read as a token classifier: a random head
        _prm(ckpt["math_shepherd"], style="trl").score_steps(SOLUTIONS[:1])


def test_the_separator_comes_from_the_config_else_the_model_arg(ckpt, tmp_path):
    assert _prm(ckpt["trl"]).separator == "\n"
    assert _prm(ckpt["trl"], separator="\n\n").separator == "\n\n"
    folder = shutil.copytree(ckpt["trl"], tmp_path / "sep")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "step_separator": "\n\n"}))
    recorded = _prm(folder)
    assert recorded.separator == "\n\n"
    np.testing.assert_allclose(np.concatenate(recorded.score_steps(SOLUTIONS)),
                               np.concatenate(trl_by_prefix(folder, SOLUTIONS, "\n\n")), atol=1e-5, rtol=0)
    with pytest.raises(ConfigError, match="records step_separator"):
        _prm(folder, separator=" ").separator  # noqa: B018


def test_a_step_tag_inside_a_step_and_a_cut_step_are_errors(ckpt):
    with pytest.raises(ModelError, match="solution 'x' encodes to 3 <extra_0> tokens for 2 steps"):
        _prm(ckpt["qwen"]).score_steps([StepRequest("q", ("a <extra_0> b", "c"), "x")])
    short = _prm(ckpt["trl"], max_length=8)
    with pytest.raises(ModelError, match="--max-length 8"):
        short.score_steps(SOLUTIONS[2:3])
    with pytest.raises(ModelError, match="past the model's context of 512"):
        _prm(ckpt["trl"]).score_steps([StepRequest("q", ("the answer is 7 " * 200,), "long")])
    # left truncation drops the problem's start and keeps every step: the scores of that text
    limit = len(_prm(ckpt["trl"]).prm_input(SOLUTIONS[0]).ids) - 3
    cut = _prm(ckpt["trl"], runtime=CPU, max_length=limit)
    assert cut.truncation == Truncation(limit, "left")
    assert len(cut.score_steps(SOLUTIONS[:1])[0]) == 2


def test_a_prm_scores_responses_as_a_response_level_rm(ckpt):
    group = ComparisonGroup("g", "What is 2 + 3?", ["2 + 3 = 5\n\nThe answer is 5", "2 + 3 = 6\n\nThe answer is 6",
                                                    "The answer is 5"], [1, 0, 1])
    for how in ("min", "prod"):
        model = _prm(ckpt["trl"], aggregate=how)
        rewards, _ = score_groups(model, [group], CPU)
        steps = model.score_steps([StepRequest(group.prompt, split_steps(r)) for r in group.responses])
        np.testing.assert_allclose(rewards, [aggregate(s, how) for s in steps], atol=1e-12)
    by_min, by_last = _prm(ckpt["trl"], aggregate="min"), _prm(ckpt["trl"], aggregate="last")
    assert by_min.step_fingerprint() == by_last.step_fingerprint() and by_min.fingerprint() != by_last.fingerprint()


def test_the_engine_scores_steps_in_length_sorted_batches(ckpt, tmp_path):
    model = _prm(ckpt["qwen"])
    runtime = Runtime(dtype="float32", device="cpu", trust_remote_code=True, max_batch=2)
    got, _ = score_steps(model, SOLUTIONS + SOLUTIONS[:1], runtime)
    want = qwen_by_solution(ckpt["qwen"], SOLUTIONS + SOLUTIONS[:1])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, atol=1e-5, rtol=0)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
@pytest.mark.parametrize("style", STYLES)
def test_on_the_gpu_the_step_scores_are_the_cpus(ckpt, style):
    gpu = Runtime(dtype="float32", device="cuda", trust_remote_code=True)
    cpu_scores = _prm(ckpt[style], style=style).score_steps(SOLUTIONS)
    gpu_scores = _prm(ckpt[style], runtime=gpu, style=style).score_steps(SOLUTIONS)
    for c, g in zip(cpu_scores, gpu_scores):
        np.testing.assert_allclose(g, c, atol=1e-4, rtol=0)  # TF32 is off by default


def test_a_checkpoint_on_processbench_through_the_cli(ckpt, tmp_path):
    """``rmbench eval --model prm:CHECKPOINT --tasks processbench``: ProcessBench's official
    layout with CIs and step-level D/Spec, the step scores cached (a rerun loads no weights)."""
    from typer.testing import CliRunner

    import rmbench
    from rmbench.cli import app

    data = Path(__file__).resolve().parents[2] / "examples" / "processbench.jsonl"
    args = ["eval", "--model", f"prm:{ckpt['trl']}", "--tasks", "processbench", "--data", f"processbench={data}",
            "--task-arg", "split=gsm8k", "--dtype", "float32", "--bootstrap", "50",
            "--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "run")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    for header in ("ProcessBench (processbench): official layout", "GSM8K error", "GSM8K correct", "GSM8K F1",
                   "Avg F1", "D@0.1σ", "Spec@0.1σ"):
        assert header in result.output, header
    record = rmbench.read_run(tmp_path / "run")
    f1 = record.metric("processbench", "processbench_f1", subset="gsm8k")
    assert f1 is not None and 0 <= f1.value <= 1 and f1.n == 8
    d = record.metric("processbench", "discrimination", eps=0.0)
    assert d is not None and d.n == 5  # (correct step before the first error, first wrong step): 1 + 2 + 2
    again = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "again")], env={"COLUMNS": "300"})
    assert again.exit_code == 0, again.output
    assert rmbench.read_run(tmp_path / "again").value("processbench", "processbench_f1") == f1.value
    assert (tmp_path / "cache" / "steps").is_dir()
