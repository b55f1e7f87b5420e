"""Image shift (issue 56 item 5): meaning-preserving image perturbations, bounded, declared and
seeded; a multimodal task's groups beside their perturbed copies, paired through the shift
mechanism (D and accuracy shifted vs original, paired CIs); image_specificity, Spec across the
renderings of one image, hand-computed, as properties, and end to end on a synthetic
VL-RewardBench folder with a reward model that looks at the pixels and one that does not."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image as PIL
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.core.images import Image
from rmbench.core.prompts import Message, prompt_images
from rmbench.core.types import ComparisonGroup, data_fingerprint
from rmbench.errors import ConfigError, DataError
from rmbench.models.base import ScoreRequest
from rmbench.models.judge.protocol import Protocol
from rmbench.results.statistics.summary import summarize
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.base import Task, units_by_source
from rmbench.tasks.image_perturbations import (
    ColorJitter,
    Crop,
    Jpeg,
    Png,
    Resize,
    parse_perturbation,
    perturb_bytes,
    perturbation_rng,
)
from rmbench.tasks.image_shift import ImageShiftTask, image_specificity
from rmbench.tasks.image_store import perturb_prompt
from tests.conftest import REPO
from tests.support import image_shift_data
from tests.support.image_shift_data import mean_level, write_folder

DATA_MODULE = image_shift_data.__file__


def png_bytes(pixels: np.ndarray, mode: str = "RGB") -> bytes:
    out = io.BytesIO()
    PIL.fromarray(pixels, mode).save(out, format="PNG")
    return out.getvalue()


def noise(w: int, h: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def decode(data: bytes) -> PIL.Image:
    image = PIL.open(io.BytesIO(data))
    image.load()
    return image


ALL = (Jpeg(75), Png(), Resize(0.75), Crop(0.1), ColorJitter(0.1))


# --- the perturbations: declared, bounded, deterministic -----------------------------------------

def test_labels_and_mappings_parse_to_the_typed_records_and_back():
    for p in ALL:
        assert parse_perturbation(p.label) == p
    assert parse_perturbation({"kind": "jpeg", "quality": 85}) == Jpeg(85)
    assert parse_perturbation({"kind": "crop", "fraction": 0.2}) == Crop(0.2)
    assert parse_perturbation({"kind": "png"}) == Png()
    assert [p.label for p in ALL] == ["jpeg:75", "png", "resize:0.75", "crop:0.1", "jitter:0.1"]


@pytest.mark.parametrize("spec, message", [
    ("jpeg:49", r"quality must be in \[50, 95\]"), ("jpeg:96", r"quality must be in \[50, 95\]"),
    ("jpeg:80.5", "must be an integer"), ("resize:0.4", r"factor must be in \[0.5, 2\]"),
    ("resize:2.5", r"factor must be in \[0.5, 2\]"), ("crop:0", r"fraction must be in \(0, 0.2\]"),
    ("crop:0.25", r"fraction must be in \(0, 0.2\]"), ("jitter:0", r"bound must be in \(0, 0.3\]"),
    ("jitter:0.31", r"bound must be in \(0, 0.3\]"), ("blur:2", "unknown kind 'blur'"),
    ("jpeg", "expected KIND:PARAM"), ("resize:big", "'big' is not a number"), ("crop:nan", "finite number"),
    ({"kind": "jpeg"}, "give kind and its one parameter"), (3, "expected a label"),
])
def test_out_of_bounds_or_malformed_perturbations_are_one_line_errors(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_perturbation(spec)


def test_each_perturbation_keeps_its_declared_bounds():
    original = noise(40, 30)
    data = png_bytes(original)
    rng = perturbation_rng(0, "g", "x", 0)
    # png: the same pixels, other bytes
    out, _ = perturb_bytes(data, Png(), rng)
    assert np.array_equal(np.asarray(decode(out)), original)
    # jpeg: a JPEG of the same size, close to the original pixels (noise is JPEG's worst case)
    out, _ = perturb_bytes(data, Jpeg(95), rng)
    assert out.startswith(b"\xff\xd8\xff") and decode(out).size == (40, 30)
    smooth = np.repeat(np.linspace(0, 255, 40, dtype=np.uint8)[None, :, None], 30, axis=0).repeat(3, axis=2)
    out, _ = perturb_bytes(png_bytes(smooth), Jpeg(75), rng)
    assert np.abs(np.asarray(decode(out), dtype=float) - smooth).mean() < 3
    # resize: each side times the factor, rounded
    out, _ = perturb_bytes(data, Resize(0.5), rng)
    assert decode(out).size == (20, 15)
    out, _ = perturb_bytes(data, Resize(1.5), rng)
    assert decode(out).size == (60, 45)
    # crop: 1 - fraction of each side, a sub-image of the original at the drawn box
    out, done = perturb_bytes(data, Crop(0.2), perturbation_rng(3, "g", "crop:0.2", 0))
    left, top, right, bottom = (int(v) for _, v in done.drawn)
    assert (right - left, bottom - top) == (32, 24) and 0 <= left <= 8 and 0 <= top <= 6
    assert np.array_equal(np.asarray(decode(out)), original[top:bottom, left:right])


def test_colour_jitter_on_a_grey_picture_is_its_brightness_factor():
    """On a uniform grey picture contrast and saturation change nothing, so every pixel is the
    grey level times the drawn brightness factor (rounded), and each factor lies in its bound."""
    grey = np.full((10, 12, 3), 120, dtype=np.uint8)
    for seed in range(20):
        out, done = perturb_bytes(png_bytes(grey), ColorJitter(0.3), perturbation_rng(seed, "g", "jitter:0.3", 0))
        factors = dict(done.drawn)
        assert all(0.7 <= factors[k] <= 1.3 for k in ("brightness", "contrast", "saturation"))
        assert np.abs(np.asarray(decode(out), dtype=float) - 120 * factors["brightness"]).max() <= 1


def test_alpha_palette_and_grey_images_are_handled():
    rgba = np.dstack([noise(8, 6), np.full((6, 8), 128, dtype=np.uint8)])
    data = png_bytes(rgba, "RGBA")
    out, _ = perturb_bytes(data, ColorJitter(0.2), perturbation_rng(0, "g", "j", 0))
    assert decode(out).mode == "RGBA" and np.array_equal(np.asarray(decode(out))[..., 3], rgba[..., 3])
    out, _ = perturb_bytes(data, Jpeg(80), perturbation_rng(0, "g", "j", 0))
    assert decode(out).mode == "RGB"  # composited onto white: JPEG has no alpha
    palette = io.BytesIO()
    PIL.fromarray(noise(8, 6)).convert("P").save(palette, format="GIF")
    for p in ALL:
        assert decode(perturb_bytes(palette.getvalue(), p, perturbation_rng(0, "g", p.label, 0))[0]).size[0] >= 4
    with pytest.raises(ValueError, match="cannot read the image"):
        perturb_bytes(b"not an image", Png(), perturbation_rng(0, "g", "png", 0))


def test_the_picture_is_taken_as_shown_and_an_animation_is_refused():
    rotated = io.BytesIO()
    exif = PIL.Exif()
    exif[0x0112] = 6  # orientation: shown rotated 90 degrees clockwise
    PIL.fromarray(noise(20, 10)).save(rotated, format="JPEG", exif=exif.tobytes())
    out, _ = perturb_bytes(rotated.getvalue(), Png(), perturbation_rng(0, "g", "png", 0))
    assert decode(out).size == (10, 20) and not decode(out).getexif()
    animated = io.BytesIO()
    frames = [PIL.fromarray(noise(8, 8, k)).convert("P") for k in range(2)]
    frames[0].save(animated, format="GIF", save_all=True, append_images=frames[1:])
    with pytest.raises(ValueError, match=r"an animated image \(2 frames\) is not perturbed"):
        perturb_bytes(animated.getvalue(), Jpeg(80), perturbation_rng(0, "g", "jpeg:80", 0))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(w=st.integers(1, 48), h=st.integers(1, 48), seed=st.integers(0, 2**31), gid=st.text(max_size=8),
       which=st.integers(0, 4), factor=st.floats(0.5, 2.0), fraction=st.floats(0.01, 0.2),
       bound=st.floats(0.01, 0.3), quality=st.integers(50, 95))
def test_property_every_perturbation_is_deterministic_and_within_bounds(w, h, seed, gid, which, factor, fraction,
                                                                        bound, quality):
    p = (Jpeg(quality), Png(), Resize(factor), Crop(fraction), ColorJitter(bound))[which]
    data = png_bytes(noise(w, h, seed % 1000))
    first = perturb_bytes(data, p, perturbation_rng(seed, gid, p.label, 0))
    again = perturb_bytes(data, p, perturbation_rng(seed, gid, p.label, 0))
    assert first == again  # byte for byte, and the same draws
    size = decode(first[0]).size
    if isinstance(p, Resize):
        assert size == (max(1, round(w * factor)), max(1, round(h * factor)))
    elif isinstance(p, Crop):
        assert size == (max(1, round(w * (1 - fraction))), max(1, round(h * (1 - fraction))))
        left, top, right, bottom = (v for _, v in first[1].drawn)
        assert 0 <= left and right <= w and 0 <= top and bottom <= h
    else:
        assert size == (w, h)
    if isinstance(p, ColorJitter):
        assert all(1 - bound <= v <= 1 + bound for _, v in first[1].drawn)


def test_the_draws_follow_the_seed_and_the_item_not_the_reading_order():
    data = png_bytes(noise(200, 200))
    crop = Crop(0.2)
    box = {key: perturb_bytes(data, crop, perturbation_rng(*key, crop.label, 0))[1].drawn
           for key in ((0, "a"), (0, "b"), (1, "a"))}
    assert box[(0, "a")] != box[(0, "b")] and box[(0, "a")] != box[(1, "a")]
    assert perturb_bytes(data, crop, perturbation_rng(0, "a", crop.label, 0))[1].drawn == box[(0, "a")]


def test_every_image_of_a_prompt_is_perturbed_each_with_its_own_draw():
    a, b = Image.from_bytes(png_bytes(noise(30, 30, 1))), Image.from_bytes(png_bytes(noise(30, 30, 2)))
    prompt = (Message("system", "be brief"), Message("user", "compare", (a, b)))
    new, applied = perturb_prompt(prompt, Crop(0.2), 0, "g")
    assert [m.content for m in new] == ["be brief", "compare"] and new[0] is prompt[0]
    assert len(prompt_images(new)) == 2 and set(prompt_images(new)).isdisjoint({a, b})
    assert len(applied) == 2 and applied[0].drawn != applied[1].drawn  # positions 0 and 1 draw apart
    assert perturb_prompt("a text prompt", Crop(0.2), 0, "g") == ("a text prompt", ())


# --- the task -------------------------------------------------------------------------------------

def test_the_task_yields_each_original_then_its_copies(tmp_path):
    folder = write_folder(tmp_path / "vlrb", 4)
    task = ImageShiftTask(path=str(folder), perturbations=["jpeg:75", "crop:0.1"], seed=3)
    groups = list(task.groups())
    assert [g.id for g in groups[:3]] == ["RLAIF-V_0", "RLAIF-V_0@jpeg:75", "RLAIF-V_0@crop:0.1"]
    original, jpeg, crop = groups[:3]
    assert original.shift is None and (jpeg.shift, jpeg.source_id) == ("jpeg:75", "RLAIF-V_0")
    for copy in (jpeg, crop):
        assert copy.responses == original.responses and copy.utilities == original.utilities
        assert copy.subset == original.subset and copy.prompt[0].content == original.prompt[0].content
        assert prompt_images(copy.prompt) != prompt_images(original.prompt)
    assert crop.meta_dict["image_shift"][0]["perturbation"] == "crop:0.1" and "left" in crop.meta_dict["image_shift"][0]
    assert crop.meta_dict["dataset"] == original.meta_dict["dataset"]  # the base's meta kept
    assert list(task.bootstrap_units(groups)) == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    # built again: the same bytes, so the same fingerprint; another seed draws other crops
    assert data_fingerprint(list(ImageShiftTask(path=str(folder), perturbations=["jpeg:75", "crop:0.1"],
                                                seed=3).groups())) == data_fingerprint(groups)
    other = list(ImageShiftTask(path=str(folder), perturbations=["jpeg:75", "crop:0.1"], seed=4).groups())
    assert prompt_images(other[1].prompt) == prompt_images(jpeg.prompt)  # nothing drawn for JPEG
    assert data_fingerprint(other) != data_fingerprint(groups)


def test_a_second_reading_takes_the_kept_perturbations_and_remakes_a_damaged_one(tmp_path, monkeypatch):
    from rmbench.tasks import image_store

    folder = write_folder(tmp_path / "vlrb", 3)
    first = list(ImageShiftTask(path=str(folder), perturbations=["crop:0.1", "jitter:0.2"]).groups())
    calls = []
    real = image_store.perturb_bytes
    monkeypatch.setattr(image_store, "perturb_bytes", lambda *a: calls.append(a) or real(*a))
    again = list(ImageShiftTask(path=str(folder), perturbations=["crop:0.1", "jitter:0.2"]).groups())
    assert calls == [] and [g.to_json() for g in again] == [g.to_json() for g in first]
    damaged = prompt_images(first[1].prompt)[0]
    with open(damaged.source, "ab") as f:
        f.write(b"x")  # its file no longer has its hash: made again, the same bytes as before
    third = list(ImageShiftTask(path=str(folder), perturbations=["crop:0.1", "jitter:0.2"]).groups())
    assert len(calls) == 1 and [g.to_json() for g in third] == [g.to_json() for g in first]
    assert prompt_images(third[1].prompt)[0].read_bytes() != b""


def test_a_cache_that_cannot_be_written_keeps_the_perturbed_bytes_in_memory(tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "vlrb", 2)
    expected = [g.to_json() for g in ImageShiftTask(path=str(folder), perturbations=["crop:0.1"]).groups()]
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a_file"))
    groups = list(ImageShiftTask(path=str(folder), perturbations=["crop:0.1"]).groups())
    copy = prompt_images(groups[1].prompt)[0]
    assert copy.source == "" and copy.data is not None  # held, not written
    assert [g.to_json() for g in groups] == expected


def test_bad_arguments_and_bases_are_one_line_errors(tmp_path):
    folder = write_folder(tmp_path / "vlrb", 2)
    with pytest.raises(ConfigError, match="unknown argument 'pth'"):
        ImageShiftTask(pth=str(folder))
    with pytest.raises(ConfigError, match="given twice"):
        ImageShiftTask(path=str(folder), perturbations=["png", "png"])
    with pytest.raises(ConfigError, match="at least one perturbation"):
        ImageShiftTask(path=str(folder), perturbations=[])
    with pytest.raises(ConfigError, match="another task kind"):
        ImageShiftTask(base="image_shift")
    text = tmp_path / "pairs.jsonl"
    text.write_text(json.dumps({"prompt": "q", "chosen": "a", "rejected": "b"}) + "\n")
    with pytest.raises(DataError, match="no prompt of base 'preference' carries an image"):
        list(ImageShiftTask(base="preference", path=str(text)).groups())


# --- image_specificity and D under shift, by hand ---------------------------------------------------

def _hand_groups() -> list[ComparisonGroup]:
    img = Image.from_bytes(png_bytes(noise(2, 2)))
    p = (Message("user", "q", (img,)),)

    def group(gid: str, shift: str | None = None) -> ComparisonGroup:
        return ComparisonGroup(gid if shift is None else f"{gid}@{shift}", p, ("good", "bad"), (1, 0),
                               source_id=None if shift is None else gid, shift=shift)

    return [group("a"), group("a", "jpeg:75"), group("a", "crop:0.1"),
            group("b"), group("b", "jpeg:75"), group("b", "crop:0.1")]


# rewards: (good, bad) per group, in the order above
HAND_REWARDS = np.array([3.0, 1.0, 3.0, 1.0, 2.0, 2.5,    # a: jpeg changes nothing, crop flips the pair
                         4.0, 0.0, 4.5, 0.0, 4.0, 0.25])  # b: jpeg moves good by 0.5, crop bad by 0.25


def test_image_specificity_hand_computed():
    groups, r = _hand_groups(), HAND_REWARDS
    units = units_by_source(groups)
    # tie sets (original, jpeg, crop) per response; |gaps| of the pairs (o,j), (o,c), (j,c):
    #   a good: 0, 1, 1   a bad: 0, 1.5, 1.5   b good: 0.5, 0, 0.5   b bad: 0, 0.25, 0.25
    scores = image_specificity(groups, r, units, ["jpeg:75", "crop:0.1"], spec_eps=0.0)
    assert scores.labels == (("image_specificity", None), ("image_specificity", "jpeg:75"),
                             ("image_specificity", "crop:0.1"))
    assert scores.counts == (12, 4, 4)
    # eps 0: pooled 8 of 12 above; jpeg (o,j): 1 of 4 above; crop (o,c): 3 of 4 above
    assert np.allclose(scores.statistic(np.array([0, 1])), [1 - 8 / 12, 1 - 1 / 4, 1 - 3 / 4])
    # eps = 0.5 sigma: sigma is the ddof-1 sd of all 12 rewards
    sigma = float(np.std(r, ddof=1))
    eps = 0.5 * sigma
    assert 0.5 < eps < 1  # so the gaps above it are the 1s and the 1.5s
    scores = image_specificity(groups, r, units, ["jpeg:75", "crop:0.1"], spec_eps=0.5)
    assert np.allclose(scores.statistic(np.array([0, 1])), [1 - 4 / 12, 1.0, 1 - 2 / 4])
    # a resample drawing b twice and a never: only b's pairs, at 0 above eps 0.5 sigma
    assert np.allclose(scores.statistic(np.array([1, 1])), [1.0, 1.0, 1.0])


def test_d_under_shift_is_the_shared_paired_gap_hand_computed():
    """The task's groups go through the one shift mechanism of every shift task: D per shift and
    D shifted - original, paired (crop flips a's pair: D 1/2 vs 1 on the originals)."""
    groups = _hand_groups()
    records = summarize("image_shift", groups, HAND_REWARDS, eps=(0.0,), group_units=units_by_source(groups),
                        n_bootstrap=200, seed=0)

    def get(metric, shift):
        return next(m for m in records if m.metric == metric and m.shift == shift and m.subset is None).estimate

    assert get("discrimination", "none").value == 1.0 and get("discrimination", "crop:0.1").value == 0.5
    gap = get("discrimination_shift_gap", "crop:0.1")
    assert gap.value == -0.5 and gap.ci_low <= -0.5 <= gap.ci_high
    assert get("discrimination_shift_gap", "jpeg:75").value == 0.0
    assert get("pairwise_accuracy_shift_gap", "crop:0.1").value == -0.5


@settings(max_examples=40, deadline=None)
@given(r=st.lists(st.floats(-5, 5), min_size=12, max_size=12), a=st.floats(0.1, 10), b=st.floats(-10, 10),
       eps=st.sampled_from([0.0, 0.1, 0.5]), draw=st.lists(st.integers(0, 1), min_size=2, max_size=2))
def test_property_image_specificity_is_invariant_to_affine_rewards_and_the_order_of_sources(r, a, b, eps, draw):
    groups, r = _hand_groups(), np.array(r)
    labels = ["jpeg:75", "crop:0.1"]
    units = units_by_source(groups)
    drawn = np.array(draw)
    value = image_specificity(groups, r, units, labels, eps).statistic(drawn)
    scaled = image_specificity(groups, a * r + b, units, labels, eps).statistic(drawn)
    assert np.allclose(value, scaled, equal_nan=True) or eps == 0.0  # eps 0 compares floats exactly
    swapped = groups[3:] + groups[:3]
    r_swapped = np.concatenate([r[6:], r[:6]])
    again = image_specificity(swapped, r_swapped, units_by_source(swapped), labels, eps).statistic(1 - drawn)
    assert np.allclose(value, again, equal_nan=True)
    assert all(0 <= v <= 1 for v in value if not math.isnan(v))


@settings(max_examples=30, deadline=None)
@given(r=st.lists(st.floats(-5, 5), min_size=4, max_size=4), eps=st.floats(0, 2))
def test_property_a_model_blind_to_pixels_has_image_specificity_one(r, eps):
    """Equal rewards for a response under every rendering of its image: Spec 1 at every eps."""
    groups = _hand_groups()
    by_group = [r[0], r[1]] * 3 + [r[2], r[3]] * 3
    scores = image_specificity(groups, np.array(by_group), units_by_source(groups), ["jpeg:75", "crop:0.1"], eps)
    assert list(scores.statistic(np.array([0, 1]))) == [1.0, 1.0, 1.0]


# --- end to end -----------------------------------------------------------------------------------

def _records(result):
    return {(m.metric, m.subset, m.shift, m.eps): m.estimate for m in result.tasks[0].metrics}


def test_end_to_end_a_pixel_model_and_a_text_model(tmp_path):
    folder = write_folder(tmp_path / "vlrb", 12)
    common = dict(tasks=("image_shift",), data=(("image_shift", str(folder)),), n_bootstrap=100)
    blind = _records(evaluate(EvalConfig(model=f"python:{DATA_MODULE}:text_reward", **common)))
    labels = ["jpeg:75", "png", "resize:0.75", "crop:0.1", "jitter:0.1"]
    for subset in (None, *labels):
        assert blind[("image_specificity", subset, None, None)].value == 1.0
    for label in labels:
        assert blind[("discrimination_shift_gap", None, label, 0.1)].value == 0.0
        assert blind[("pairwise_accuracy_shift_gap", None, label, None)].value == 0.0

    out = tmp_path / "run"
    seeing = _records(evaluate(EvalConfig(model=f"python:{DATA_MODULE}:pixel_reward", **common), out_dir=out))
    assert seeing[("image_specificity", "png", None, None)].value == 1.0  # the same pixels
    assert seeing[("image_specificity", "jitter:0.1", None, None)].value < 1.0
    assert seeing[("image_specificity", None, None, None)].value < 1.0
    spec = seeing[("image_specificity", None, None, None)]
    assert spec.ci_low <= spec.value <= spec.ci_high
    # the copies were scored on their own pixels: a jitter copy's reward is the model's on its image
    task = ImageShiftTask(path=str(folder))
    groups = {g.id: g for g in task.groups()}
    rewards = [json.loads(line) for line in (out / "rewards.jsonl").read_text().splitlines()]
    row = next(x for x in rewards if x["group_id"] == "RLAIF-V_0@jitter:0.1" and x["response_index"] == 0)
    g = groups["RLAIF-V_0@jitter:0.1"]
    level = mean_level(prompt_images(g.prompt)[0].read_bytes())
    assert row["reward"] == pytest.approx((level - 0.5) * (1 if "bright" in g.responses[0] else -1))
    written = (out / "results.json").read_text() + (out / "rewards.jsonl").read_text()
    assert "images/" not in written and "image_shift/" not in written  # images by their hash, never a path


def test_the_cli_reads_a_folder_and_takes_perturbations_as_a_task_arg(tmp_path):
    folder = write_folder(tmp_path / "vlrb", 6)
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["eval", "--model", f"python:{DATA_MODULE}:pixel_reward", "--tasks",
                                      "image_shift", "--data", f"image_shift={folder}", "--task-arg",
                                      "perturbations=[jpeg:50, jitter:0.3]", "--bootstrap", "50", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Original vs shifted" in result.output and "jitter:0.3" in result.output
    doc = json.loads((out / "results.json").read_text())
    shifts = {m["shift"] for m in doc["tasks"][0]["metrics"]}
    assert shifts == {None, "none", "jpeg:50", "jitter:0.3"}
    bad = CliRunner().invoke(app, ["eval", "--model", f"python:{DATA_MODULE}:pixel_reward", "--tasks", "image_shift",
                                   "--data", f"image_shift={folder}", "--task-arg", "perturbations=[crop:0.5]",
                                   "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "crop:0.5: the fraction must be in (0, 0.2]" in bad.output
    assert "Traceback" not in bad.output


class ClusteredImages(Task):
    """A base whose first two groups are one bootstrap unit (as RewardBench 2's tied:K with ref:K)."""

    def __init__(self) -> None:
        pass

    def groups(self):
        for k in range(3):
            prompt = (Message("user", f"q{k}", (Image.from_bytes(png_bytes(noise(6, 6, k))),)),)
            yield ComparisonGroup(f"g{k}", prompt, ("a", "b"), (1, 0))

    def bootstrap_units(self, groups):
        return np.array([0 if g.id in ("g0", "g1") else 1 for g in groups])


def test_the_base_units_are_kept_and_each_copy_joins_its_original():
    task = ImageShiftTask(base="tests.tasks.test_image_shift:ClusteredImages", perturbations=["png", "crop:0.1"])
    groups = list(task.groups())
    assert [g.id for g in groups[:3]] == ["g0", "g0@png", "g0@crop:0.1"]
    assert list(task.bootstrap_units(groups)) == [0, 0, 0, 0, 0, 0, 1, 1, 1]


def test_the_offline_sample_shows_the_toy_vision_rm_tripping_on_a_resize():
    """image_shift_sample (vl_rewardbench_sample under the default perturbations) end to end:
    the length baseline ignores the pixels (Spec 1, no gap); examples/my_vision_rm.py reads
    colours and shapes, unmoved by the same pixels (png) and tripped by a 0.75 resize."""
    blind = _records(evaluate(EvalConfig(model="length", tasks=("image_shift_sample",), n_bootstrap=50)))
    assert blind[("image_specificity", None, None, None)].value == 1.0
    assert blind[("pairwise_accuracy_shift_gap", None, "resize:0.75", None)].value == 0.0
    toy = REPO / "examples" / "my_vision_rm.py"
    seeing = _records(evaluate(EvalConfig(model=f"python:{toy}:score", tasks=("image_shift_sample",), n_bootstrap=50)))
    assert seeing[("image_specificity", "png", None, None)].value == 1.0
    assert seeing[("image_specificity", "resize:0.75", None, None)].value < 1.0
    assert seeing[("pairwise_accuracy_shift_gap", None, "resize:0.75", None)].value < 0
    assert seeing[("pairwise_accuracy", None, "none", None)].value == pytest.approx(0.95)  # as on vl_rewardbench_sample


SAMPLE_FINGERPRINT = "32c441d41bbdccf77ce6f5f50083fa79f57407b01f5889d21bf3532727ed27b9"
"""image_shift_sample's data fingerprint: its 60 groups, every perturbed image by its content hash,
with Pillow 12.3.0 (.ci/constraints.txt). Change the data or a perturbation: bump the task's version."""


def test_the_sample_is_the_same_bytes_on_every_machine_with_the_pinned_pillow():
    import PIL

    from rmbench.catalog import load_catalog
    from rmbench.tasks.loading import load_task

    if PIL.__version__ != "12.3.0":
        pytest.skip(f"Pillow {PIL.__version__}, not the pinned 12.3.0: its encoders may write other bytes")
    _, groups, _ = load_task(load_catalog().task_spec("image_shift_sample"))
    assert len(groups) == 60 and data_fingerprint(groups) == SAMPLE_FINGERPRINT


def test_any_multimodal_base_multimodal_rewardbench(tmp_path):
    """The wrapper is not VL-RewardBench's: Multimodal RewardBench's folder as the base, its
    images perturbed, its meta (the item's image) kept beside what was drawn."""
    from tests.tasks.test_mm_rewardbench import write_folder as write_mm_folder

    folder = write_mm_folder(tmp_path / "mmrb")
    task = ImageShiftTask(base="mm_rewardbench", path=str(folder), perturbations=["jitter:0.1"])
    groups = list(task.groups())
    originals = [g for g in groups if g.shift is None]
    copies = [g for g in groups if g.shift == "jitter:0.1"]
    assert len(copies) == len(originals) > 0 and all(c.source_id == o.id for o, c in zip(originals, copies))
    for o, c in zip(originals, copies):
        assert c.responses == o.responses and prompt_images(c.prompt) != prompt_images(o.prompt)
        assert set(o.meta_dict) < set(c.meta_dict)


@pytest.mark.parametrize("kept_on_disk", [True, False])
def test_a_perturbed_image_is_named_for_the_bytes_it_now_holds(tmp_path, monkeypatch, kept_on_disk):
    """prompt=mm_rewardbench labels an image with the type its file name says, as the official
    client does: a perturbed copy is named by its original's stem and the extension of its new
    bytes (PNG from most perturbations, JPEG from jpeg:Q), kept on disk, held in memory or read
    again, so the label is what is sent; an original keeps its own name."""
    from tests.tasks.test_mm_rewardbench import write_folder as write_mm_folder

    if not kept_on_disk:
        (tmp_path / "a_file").write_text("not a folder")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a_file"))
    folder = write_mm_folder(tmp_path / "mmrb")  # images/sub/0.png, images/sub/1.jpg, ...
    judge = Protocol.make("pairwise", "mm_rewardbench", None, None, None, None, None, None)

    def labels(groups: list[ComparisonGroup]) -> dict[str, tuple[str, str, str]]:
        out = {}
        for g in groups[:6]:
            (image,) = prompt_images(g.prompt)
            assert (image.source == "") == (not kept_on_disk) or g.shift is None
            assert Image.from_ref(image.to_json(sources=True)).name == image.name  # the wire form keeps it
            (call,), _ = judge.calls(ScoreRequest(g.prompt, g.responses[0], g.id, 0, context=(g.responses[1],)))
            url = call.body("gpt-4o")["messages"][0]["content"][1]["image_url"]["url"]
            out[g.id] = (image.name, url[:url.index(";")], image.mime)
        return out

    def read() -> list[ComparisonGroup]:
        return list(ImageShiftTask(base="mm_rewardbench", path=str(folder), perturbations=["png", "jpeg:75"]).groups())

    expected = {
        "nocaps_1": ("0.png", "data:image/png", "image/png"),
        "nocaps_1@png": ("0.png", "data:image/png", "image/png"),
        "nocaps_1@jpeg:75": ("0.jpg", "data:image/jpeg", "image/jpeg"),
        "visitbench_2": ("1.jpg", "data:image/jpeg", "image/jpeg"),  # the original: official-equal
        "visitbench_2@png": ("1.png", "data:image/png", "image/png"),
        "visitbench_2@jpeg:75": ("1.jpg", "data:image/jpeg", "image/jpeg"),
    }
    assert labels(read()) == expected
    assert labels(read()) == expected  # read again: from the kept results where they were written

