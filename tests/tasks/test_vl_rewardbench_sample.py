"""The built-in ``vl_rewardbench_sample`` (issue 56): 10 items rmbench wrote in VL-RewardBench's
format, each a drawn PNG; it loads offline with all three official groups, scores end to end with
the tutorial's image-reading ``python:`` reward function (examples/my_vision_rm.py), refuses a
text-only model in one line, and its generator script writes the same rows and pixels again."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.catalog import builtin_tasks_dir, load_catalog
from rmbench.core.prompts import prompt_images
from rmbench.core.vl_rewardbench import GROUP_OF
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.vl_rewardbench import VLRewardBenchTask

REPO = Path(__file__).resolve().parents[2]
SAMPLE = builtin_tasks_dir() / "data" / "vl_rewardbench_sample"
MODEL = f"python:{REPO / 'examples' / 'my_vision_rm.py'}:score"


def test_the_sample_loads_with_every_official_group_and_small_pngs():
    spec = load_catalog().task_spec("vl_rewardbench_sample")
    assert spec.kind == "vl_rewardbench"
    groups = list(VLRewardBenchTask(path=str(SAMPLE)).groups())
    assert len(groups) == 10
    by_group = {g: sum(GROUP_OF[x.subset] == g for x in groups) for g in ("general", "hallucination", "reasoning")}
    assert by_group == {"general": 3, "hallucination": 4, "reasoning": 3}
    assert {x.utilities for x in groups} == {(1, 0), (0, 1)}  # the better answer first, or second
    for g in groups:
        (image,) = prompt_images(g.prompt)
        data = image.read_bytes()
        assert image.mime == "image/png" and len(data) < 4096
    assert sum(p.stat().st_size for p in SAMPLE.rglob("*")) < 16 * 1024


def test_it_scores_end_to_end_with_an_image_reading_python_model():
    pytest.importorskip("PIL")
    result = evaluate(EvalConfig(model=MODEL, tasks=("vl_rewardbench_sample",), n_bootstrap=50, use_cache=False))
    task = result.tasks[0]
    official = {m.subset: (m.value, m.n) for m in task.metrics if m.metric == "vl_rewardbench_score"}
    # 9 items decided right; RLHF-V_s5 (a dog added to the picture) is a tie the toy model cannot see
    assert official == {"general": (1.0, 3), "hallucination": (1.0, 3), "reasoning": (1.0, 3), None: (1.0, 9),
                        "macro": (1.0, 9)}
    accuracy = next(m.value for m in task.metrics if m.metric == "pairwise_accuracy" and m.subset is None)
    assert accuracy == pytest.approx(0.95)  # the tie counts one half


def test_the_examples_folder_reads_with_data_and_shows_what_the_toy_model_misses():
    pytest.importorskip("PIL")
    folder = REPO / "examples" / "vl_rewardbench"
    result = evaluate(EvalConfig(model=MODEL, tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(folder)),),
                                 n_bootstrap=50, use_cache=False))
    official = {m.subset: m.value for m in result.tasks[0].metrics if m.metric == "vl_rewardbench_score"}
    # general: a position (tie, left out) and two touching squares read as one (reject); hallucination: both
    # right; reasoning: the sides right, an outline read as a triangle (reject)
    assert official == {"general": 0.0, "hallucination": 1.0, "reasoning": 0.5, None: 0.6, "macro": 0.5}


def test_a_text_only_model_is_refused_in_one_line(tiny):
    from rmbench.cli import app

    res = CliRunner().invoke(app, ["eval", "--model", f"seqcls:{tiny['seqcls']}", "--tasks", "vl_rewardbench_sample",
                                   "--no-cache", "--out", str(Path(tiny["seqcls"]).parent / "refused")])
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code != 0 and "Traceback" not in res.output
    refused = [line for line in lines if "reads text only" in line]
    assert len(refused) == 1 and "10 of the 10 groups' prompts carry images" in refused[0], res.output


def test_the_generator_writes_the_same_rows_and_pixels(tmp_path):
    image = pytest.importorskip("PIL.Image")
    spec = importlib.util.spec_from_file_location("make_vlrb", builtin_tasks_dir() / "data" /
                                                  "make_vl_rewardbench_sample.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for items, shipped in ((module.ITEMS, SAMPLE), (module.EXAMPLE_ITEMS, REPO / "examples" / "vl_rewardbench")):
        out = tmp_path / shipped.name
        module.write(out, items)
        assert (out / "data.jsonl").read_text() == (shipped / "data.jsonl").read_text()
        for row in map(json.loads, (out / "data.jsonl").read_text().splitlines()):
            with image.open(out / row["image_path"]) as a, image.open(shipped / row["image_path"]) as b:
                assert a.convert("RGB").tobytes() == b.convert("RGB").tobytes(), row["id"]
