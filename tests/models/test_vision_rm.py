"""Local vision reward models on transformers (rmbench/models/hf/vision.py): a checkpoint with an image
processor reads images through seqcls, linear, implicit and generative. Tiny random Idefics3 and
Gemma 3 checkpoints (tests/support/vision_models.py); each kind equals a plain loop of processor and
forward pass, one request at a time, and a VL-RewardBench-format folder scores end to end, its images
keyed by content in the score cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rmbench import EvalConfig, evaluate
from rmbench.core.images import Image
from rmbench.core.prompts import Message, prompt_images
from rmbench.errors import ConfigError
from rmbench.models.base import Runtime, ScoreRequest
from rmbench.tasks.vl_rewardbench import VLRewardBenchTask
from tests.support.vision_models import png

FP32 = Runtime(dtype="float32", device="cpu")
TOL = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def requests(tmp_path_factory) -> list[ScoreRequest]:
    """Rows with one image, two images (different sizes), the same prompt and another image, and
    plain text: one batch mixes them (padding, per-row image counts, rows without pixels)."""
    root = tmp_path_factory.mktemp("vision_images")
    a, b, c = (Image.from_file(png(root / f"{k}.png", k, size)) for k, size in enumerate([(20, 30), (28, 28), (9, 40)]))
    return [ScoreRequest((Message("user", "What color is it?", (a,)),), "red", "g0", 0),
            ScoreRequest((Message("user", "What color is it?", (b,)),), "red", "g1", 0),
            ScoreRequest((Message("system", "Be brief."), Message("user", "Compare these two.", (b, c))),
                         "the first is brighter than the second", "g2", 1),
            ScoreRequest("Name a primary color.", "blue", "g3", 0)]


# --- the plain loop: the processor and the model, one request at a time ----------------------------

def _processor(folder):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(folder)


def _messages(request: ScoreRequest) -> list[dict]:
    prompt = request.prompt
    turns = [("user", (), prompt)] if isinstance(prompt, str) else [(m.role, m.images, m.content) for m in prompt]
    return [{"role": role, "content": [{"type": "image"} for _ in images] + [{"type": "text", "text": text}]}
            for role, images, text in turns]


def _inputs(processor, text: str, request: ScoreRequest):
    from PIL import Image as PILImage

    images = [PILImage.open(image.source).convert("RGB") for image in prompt_images(request.prompt)]
    extra = {"images": [images]} if images else {}
    return processor(text=[text], return_tensors="pt", add_special_tokens=False, **extra)


def _full(processor, request: ScoreRequest) -> str:
    return processor.apply_chat_template(_messages(request) + [
        {"role": "assistant", "content": [{"type": "text", "text": request.response}]}], tokenize=False)


def loop_seqcls(folder, batch) -> list[float]:
    import torch
    from transformers import AutoModelForSequenceClassification

    processor, model = _processor(folder), AutoModelForSequenceClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        return [float(model(**_inputs(processor, _full(processor, r), r)).logits[0, 0]) for r in batch]


def loop_linear(folder, head, batch) -> list[float]:
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForImageTextToText

    processor, model = _processor(folder), AutoModelForImageTextToText.from_pretrained(folder).eval()
    tensors = load_file(str(head))
    with torch.no_grad():
        hidden = [model.model(**_inputs(processor, _full(processor, r), r)).last_hidden_state[0, -1] for r in batch]
    return [float(h @ tensors["weight"] + tensors["bias"][0]) for h in hidden]


def loop_logprob(folder, batch) -> list[float]:
    """Sum of log p(token | tokens before it) over the response's tokens: those after the prompt
    rendered for the reply with its trailing whitespace moved into the response (rmbench's rule)."""
    import torch
    from transformers import AutoModelForImageTextToText

    processor, model = _processor(folder), AutoModelForImageTextToText.from_pretrained(folder).eval()
    out = []
    for r in batch:
        context = processor.apply_chat_template(_messages(r), tokenize=False, add_generation_prompt=True)
        ids = _inputs(processor, _full(processor, r), r)
        start = _inputs(processor, context.rstrip(), r)["input_ids"].shape[1]
        assert ids["input_ids"][0, :start].tolist() == _inputs(processor, context.rstrip(), r)["input_ids"][0].tolist()
        with torch.no_grad():
            logp = torch.log_softmax(model(**ids).logits[0].double(), -1)
        tokens = ids["input_ids"][0]
        out.append(float(sum(logp[j - 1, tokens[j]] for j in range(start, len(tokens)))))
    return out


def loop_generative(folder, batch, template: str) -> list[float]:
    import torch
    from transformers import AutoModelForImageTextToText

    processor, model = _processor(folder), AutoModelForImageTextToText.from_pretrained(folder).eval()
    yes = processor.tokenizer("Yes", add_special_tokens=False)["input_ids"]
    assert len(yes) == 1
    out = []
    for r in batch:
        question = "\n\n".join([r.prompt] if isinstance(r.prompt, str) else [m.content for m in r.prompt])
        images = prompt_images(r.prompt)
        messages = [{"role": "user", "content": [{"type": "image"} for _ in images] + [
            {"type": "text", "text": template.format(question=question, answer=r.response)}]}]
        text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        with torch.no_grad():
            logits = model(**_inputs(processor, text, r)).logits[0, -1].double()
        out.append(float(torch.softmax(logits, -1)[yes[0]]))
    return out


# --- each kind equals its loop ----------------------------------------------------------------------

def test_seqcls_reads_images_where_the_architecture_has_a_classification_head(vlm, requests):
    from rmbench.models.seqcls import SeqClsRM

    model = SeqClsRM(str(vlm["gemma3_seqcls"]), runtime=FP32)
    assert model.reads_images
    got = np.asarray(model.score(requests))
    np.testing.assert_allclose(got, loop_seqcls(vlm["gemma3_seqcls"], requests), **TOL)
    assert abs(got[0] - got[1]) > 1e-4  # the same text with another image scores differently


@pytest.mark.parametrize("arch", ["idefics3", "gemma3_lm"])
def test_a_linear_head_over_a_vlm_equals_the_loop(vlm, requests, arch):
    from rmbench.models.seqcls import LinearHeadRM

    model = LinearHeadRM(str(vlm[arch]), str(vlm["head"]), runtime=FP32)
    got = np.asarray(model.score(requests))
    np.testing.assert_allclose(got, loop_linear(vlm[arch], vlm["head"], requests), **TOL)
    assert abs(got[0] - got[1]) > 1e-4


@pytest.mark.parametrize("arch", ["idefics3", "gemma3_lm"])
def test_the_implicit_reward_of_a_vlm_equals_the_loop(vlm, requests, arch):
    from rmbench.models.implicit import ImplicitRM

    got = np.asarray(ImplicitRM(str(vlm[arch]), runtime=FP32).score(requests))
    np.testing.assert_allclose(got, loop_logprob(vlm[arch], requests), **TOL)
    assert abs(got[0] - got[1]) > 1e-4


def test_the_implicit_reward_against_a_reference_vlm(vlm, requests):
    from rmbench.models.implicit import ImplicitRM

    got = ImplicitRM(str(vlm["gemma3_lm"]), ref=str(vlm["gemma3_lm_ref"]), beta=0.5, runtime=FP32).score(requests)
    want = 0.5 * (np.asarray(loop_logprob(vlm["gemma3_lm"], requests))
                  - np.asarray(loop_logprob(vlm["gemma3_lm_ref"], requests)))
    np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("arch", ["idefics3", "gemma3_lm"])
def test_a_vlm_as_generative_verifier_equals_the_loop(vlm, requests, arch):
    from rmbench.models.generative import DEFAULT_TEMPLATE, GenerativeRM

    got = np.asarray(GenerativeRM(str(vlm[arch]), runtime=FP32).score(requests))
    np.testing.assert_allclose(got, loop_generative(vlm[arch], requests, DEFAULT_TEMPLATE), rtol=1e-4, atol=1e-7)
    assert abs(got[0] - got[1]) > 1e-7


def test_a_vlm_in_bfloat16_gets_its_pixels_in_bfloat16(vlm, requests):
    from rmbench.models.implicit import ImplicitRM

    got = ImplicitRM(str(vlm["gemma3_lm"]), runtime=Runtime(dtype="bfloat16", device="cpu")).score(requests)
    np.testing.assert_allclose(got, ImplicitRM(str(vlm["gemma3_lm"]), runtime=FP32).score(requests), rtol=0.05)


def test_lengths_count_the_image_tokens(vlm, requests):
    from rmbench.models.implicit import ImplicitRM

    model = ImplicitRM(str(vlm["idefics3"]), runtime=FP32)
    processor = _processor(vlm["idefics3"])
    assert model.lengths(requests) == [_inputs(processor, _full(processor, r), r)["input_ids"].shape[1]
                                       for r in requests]
    assert model.prefix_lengths(requests) is None  # rows carrying pixels share no prompt KV cache


def test_mc_dropout_over_a_vlm_reads_its_images(vlm, requests):
    from rmbench.models.discretize import DiscretizedRM

    model = DiscretizedRM(f"implicit:{vlm['idefics3']}", T=3, p=0.1, runtime=FP32)
    assert model.reads_images
    samples = model.inner.sample(requests, 3, 0.1, "full", seed=0)
    assert samples.shape == (4, 3) and np.isfinite(samples).all()
    assert (np.ptp(samples, axis=1) > 0).all()  # dropout ran: each response's samples differ


def test_a_hub_id_reads_images_from_its_hub_cache_files(vlm, tiny, tmp_path, monkeypatch):
    from rmbench import hub
    from rmbench.models.hf.loading import ModelSource
    from rmbench.models.hf.vision import has_image_processor

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr(hub, "unreachable", lambda: "offline in this test")
    for repo, folder in (("org/vlm", vlm["idefics3"]), ("org/text-rm", tiny["seqcls"])):
        snapshot = tmp_path / f"models--{repo.replace('/', '--')}" / "snapshots" / ("0" * 40)
        shutil.copytree(folder, snapshot)
        (snapshot.parents[1] / "refs").mkdir()
        (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    assert has_image_processor(ModelSource("org/vlm", None, False))
    assert not has_image_processor(ModelSource("org/text-rm", None, False))
    assert not has_image_processor(ModelSource("org/never-fetched", None, False))
    assert not has_image_processor(ModelSource("(in memory)", None, False))  # a live model: no lookup at all


# --- refusals, one line each ---------------------------------------------------------------------------

def test_refusals(vlm, requests, tiny):
    from rmbench.core.types import ComparisonGroup
    from rmbench.models.implicit import ImplicitRM
    from rmbench.models.seqcls import SeqClsRM

    with pytest.raises(ConfigError, match=r"idefics3\) has no sequence-classification class.*linear"):
        SeqClsRM(str(vlm["idefics3"]), runtime=FP32).score(requests[:1])
    with pytest.raises(ConfigError, match="template 'plain' and padding_side 'right' do not apply"):
        ImplicitRM(str(vlm["idefics3"]), template="plain", runtime=FP32).score(requests[:1])
    with pytest.raises(ConfigError, match=r"response 0 is \d+ tokens with its images, longer than --max-length 5"):
        ImplicitRM(str(vlm["idefics3"]), max_length=5, runtime=FP32).score(requests[:1])
    with pytest.raises(ConfigError, match="convention=rewardbench builds RewardBench's text-only DPO tokens"):
        ImplicitRM(str(vlm["idefics3"]), convention="rewardbench", runtime=FP32).score(requests[:1])
    group = ComparisonGroup("g", requests[0].prompt, ("a", "b"), (1, 0))
    with pytest.raises(ValueError, match="reads text only"):  # a text reference would score the text alone
        ImplicitRM(str(vlm["gemma3_lm"]), ref=str(tiny["causal"]), runtime=FP32).check_images([group])


# --- end to end: a VL-RewardBench folder, its images keyed by content --------------------------------------

def write_vlrb(folder: Path, seeds: list[int]) -> Path:
    rows = []
    for k, seed in enumerate(seeds):
        png(folder / "images" / f"{k}.png", seed)
        rows.append({"id": ["RLAIF-V_", "mathverse_", "wildvision-battle_"][k % 3] + str(k),
                     "query": f"What is in picture {k}?", "response": ["a red square", "a blue circle"],
                     "human_ranking": [k % 2, 1 - k % 2], "image_path": f"images/{k}.png", "meta": {}})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_rmbench_eval_scores_vl_rewardbench_and_caches_images_by_content(vlm, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    cache = tmp_path / "cache"
    first = write_vlrb(tmp_path / "first", [0, 1, 2, 3])
    args = ["eval", "--model", f"seqcls:{vlm['gemma3_seqcls']}", "--tasks", "vl_rewardbench", "--dtype", "float32",
            "--device", "cpu", "--bootstrap", "20", "--cache-dir", str(cache)]
    result = CliRunner().invoke(app, [*args, "--data", f"vl_rewardbench={first}", "--out", str(tmp_path / "run1")])
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "run1" / "results.json").read_text())
    assert record["execution"]["stats"]["computed"] == 8
    rewards = [json.loads(line) for line in (tmp_path / "run1" / "rewards.jsonl").read_text().splitlines()]
    assert len(rewards) == 8 and "/images/" not in json.dumps(record)
    assert {m["subset"] for m in record["tasks"][0]["metrics"] if m["metric"] == "vl_rewardbench_score"} >= {
        None, "general", "hallucination", "reasoning", "macro"}
    groups = list(VLRewardBenchTask(path=str(first)).groups())
    batch = [ScoreRequest(g.prompt, text, g.id, i) for g in groups for i, text in enumerate(g.responses)]
    got = {(r["group_id"], r["response_index"]): r["reward"] for r in rewards}
    np.testing.assert_allclose([got[(r.group_id, r.index)] for r in batch], loop_seqcls(vlm["gemma3_seqcls"], batch),
                               **TOL)

    common = dict(model=f"seqcls:{vlm['gemma3_seqcls']}", tasks=("vl_rewardbench",), n_bootstrap=20, runtime=FP32,
                  cache_dir=str(cache))
    # The same images in another folder: no new scorer call.
    second = tmp_path / "second"
    shutil.copytree(first, second)
    again = evaluate(EvalConfig(data=(("vl_rewardbench", str(second)),), **common), out_dir=tmp_path / "run2")
    assert again.execution.stats.computed == 0 and again.execution.stats.cached == 8
    assert (tmp_path / "run2" / "rewards.jsonl").read_text() == (tmp_path / "run1" / "rewards.jsonl").read_text()
    # One image's pixels changed: only its group's two responses are scored again.
    write_vlrb(tmp_path / "third", [0, 1, 9, 3])
    third = evaluate(EvalConfig(data=(("vl_rewardbench", str(tmp_path / "third")),), **common))
    assert (third.execution.stats.computed, third.execution.stats.cached) == (2, 6)


def test_an_edited_processor_is_a_new_identity_and_never_serves_cached_scores(vlm, tmp_path):
    from rmbench.models.seqcls import SeqClsRM

    folder = tmp_path / "model"
    shutil.copytree(vlm["gemma3_seqcls"], folder)
    data = write_vlrb(tmp_path / "data", [0, 1])
    common = dict(model=f"seqcls:{folder}", tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(data)),),
                  n_bootstrap=20, runtime=FP32, cache_dir=str(tmp_path / "cache"))
    before = SeqClsRM(str(folder), runtime=FP32).fingerprint()
    assert evaluate(EvalConfig(**common)).execution.stats.computed == 4
    config = json.loads((folder / "processor_config.json").read_text())
    config["image_processor"]["image_mean"] = [0.4, 0.4, 0.4]
    (folder / "processor_config.json").write_text(json.dumps(config))
    edited = SeqClsRM(str(folder), runtime=FP32).fingerprint()
    assert evaluate(EvalConfig(**common)).execution.stats.computed == 4  # other pixels: scored again
    template = folder / "chat_template.jinja"
    template.write_text(template.read_text().replace("<|im_start|>", "<|im_start|> "))
    assert len({before, edited, SeqClsRM(str(folder), runtime=FP32).fingerprint()}) == 3
