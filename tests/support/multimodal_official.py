"""The multimodal judges' conformance tier: a scripted judge, synthetic data, the official clients.

A test helper (not a test file) for ``tests/models/judge/test_judge_multimodal_conformance.py`` and
``tests/models/judge/test_judge_one_game.py``. The official clients are never copied into the
repository: the tests read them from checkouts named by environment variables and run them
*unedited apart from their hard-coded endpoint* (copied into a temporary folder with that one
line rewritten to the scripted server on 127.0.0.1):

* ``RMBENCH_VLRB_DIR``: github ``vl-rewardbench/VL_RewardBench`` (``inference_hf.py``,
  ``prompt.py``, ``cal.py``; needs ``tenacity``, ``pandas``, ``pyarrow``, ``datasets``, ``openai``);
* ``RMBENCH_MMRB_DIR``: github ``facebookresearch/multimodal_rewardbench``
  (``scripts/1_run_model_as_judge_gpt4o.py``, ``scripts/2_get_accuracy.py``; needs ``openai``,
  ``tqdm``).

The scripted judge (:func:`reply`) answers as a pure function of the request's text, so both
clients get the same reply to the same request: each question carries ``[case=NAME]``, each
answer ``ans=good`` or ``ans=bad``, and a verdict names the slot that *holds* an answer, so it does
not depend on the order a client drew -- except the ``position`` cases, which always pick the
first (or second) answer shown, so that the K samples of one item disagree with each other.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

VLRB_ENV, MMRB_ENV = "RMBENCH_VLRB_DIR", "RMBENCH_MMRB_DIR"
VLRB_IMPORTS = ("openai", "tenacity", "pandas", "pyarrow", "datasets", "tqdm")
MMRB_IMPORTS = ("openai", "tqdm")
VLRB_MODEL = "Qwen/Qwen2-VL-7B-Instruct"  # inference_hf.py's default --filter_model_name
MMRB_MODEL = "gpt-4o"  # 1_run_model_as_judge_gpt4o.py's hard-coded model
VLRB_ENDPOINT = 'openai_api_base = "http://localhost:8000/v1"'
MMRB_ENDPOINT = "endpoint = 'azure-services-fair-openai1-westus.azure-api.net'"

Reply = str | dict[str, Any]
CASE = re.compile(r"\[case=(\w+)\]")


def _checkout(env: str, files: tuple[str, ...], imports: tuple[str, ...]) -> tuple[Path | None, str | None]:
    """The checkout ``env`` names, or why it cannot be used."""
    value = os.environ.get(env)
    if not value:
        return None, (f"{env} is not set: point it at a checkout of the official code (not shipped with rmbench) "
                      f"to run this test")
    missing = [f for f in files if not (Path(value) / f).is_file()]
    if missing:
        return None, f"{env}={value} holds no {', '.join(missing)}"
    modules = [m for m in imports if importlib.util.find_spec(m) is None]
    if modules:
        return None, f"the official client needs {', '.join(modules)} (pip install them beside rmbench's test extras)"
    return Path(value), None


def vlrb_checkout() -> tuple[Path | None, str | None]:
    return _checkout(VLRB_ENV, ("inference_hf.py", "prompt.py", "cal.py"), VLRB_IMPORTS)


def mmrb_checkout() -> tuple[Path | None, str | None]:
    return _checkout(MMRB_ENV, ("scripts/1_run_model_as_judge_gpt4o.py", "scripts/2_get_accuracy.py"), MMRB_IMPORTS)


def cut(text: str) -> dict[str, Any]:
    """A reply cut off by ``max_tokens``."""
    return {"content": text, "finish_reason": "length"}


# VL-RewardBench: inference_hf.py / cal.py read re.search(PATTERN, reply without "\n" and "*", re.I):
# the LAST "Answer N is ... better" after the first "Overall Judgment" or "Therefore" (greedy .*).
# x: the answer number holding the good answer, y: the other. name: (reply, whether strict reads it otherwise)
VLRB_CASES: dict[str, tuple[Callable[[int, int], Reply], bool]] = {
    "plain": (lambda x, y: f"Accuracy: fine.\nOverall Judgment: Answer {x} is better.", False),
    "pick_bad": (lambda x, y: f"Overall Judgment: Answer {y} is better.", False),
    "markdown": (lambda x, y: f"**Overall Judgment:** Answer {x} is **slightly better**.", False),
    "therefore": (lambda x, y: f"Both are close.\nTherefore, Answer\n{x} is the better one.", False),
    "last_wins": (lambda x, y: f"Overall Judgment: Answer {y} is better at first sight; on reflection Answer {x} "
                               f"is better.", False),
    "none": (lambda x, y: "Both answers are equally good.", False),
    "cut_label": (lambda x, y: cut(f"Overall Judgment: Answer {x} is better because"), True),
    "think_label": (lambda x, y: f"<think>Overall Judgment: Answer {x} is better</think>\nI cannot decide.", True),
    "reasoning_field": (lambda x, y: {"content": f"Therefore Answer {x} is better.",
                                      "reasoning_content": f"Answer {y} is better?"}, False),
}
VLRB_POSITION_CASES: dict[str, tuple[Callable[[int, int], Reply], bool]] = {
    "position_first": (lambda x, y: "Overall Judgment: Answer 1 is better.", False),
    "position_second": (lambda x, y: "Therefore Answer 2 is slightly better.", False),
}
VLRB_ALL_CASES = {**VLRB_CASES, **VLRB_POSITION_CASES}

# Multimodal RewardBench: 2_get_accuracy.py's "[[A]]" in reply, else "[[B]]" in reply, else a random draw.
MMRB_CASES: dict[str, tuple[Callable[[str, str], Reply], bool]] = {
    "plain": (lambda x, y: f"Assistant {x} is more helpful.\n\n[[{x}]]", False),
    "pick_bad": (lambda x, y: f"[[{y}]]", False),
    "both_labels": (lambda x, y: "[[B]] at first, then [[A]]", False),  # [[A]] is looked for first
    "none_1": (lambda x, y: "Both are equally good.", False),
    "none_2": (lambda x, y: "I cannot decide between [A] and [B].", False),
    "none_3": (lambda x, y: "Tie.", False),
    "cut_label": (lambda x, y: cut(f"Assistant {x} is better: [[{x}]] because"), True),
    "think_label": (lambda x, y: f"<think>[[{x}]]</think>\nHard to say.", True),
    "spaces": (lambda x, y: f"  [[{x}]]  \n\n", False),
}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


def reply(body: dict) -> Reply:
    """The scripted judge: the reply to one request of either benchmark's client."""
    text = _user_text(body)
    if "Answer 1: " in text:
        first = _between(text, "Answer 1: ", "\n\nAnswer 2: ")
        x, y = (1, 2) if "ans=good" in first else (2, 1)
        case = CASE.search(_between(text, "Question: ", "\n\nAnswer 1: ")).group(1)
        return VLRB_ALL_CASES[case][0](x, y)
    if "[The Start of Assistant A's Answer]" in text:
        a = _between(text, "[The Start of Assistant A's Answer]\n", "\n[The End of Assistant A's Answer]")
        x, y = ("A", "B") if "ans=good" in a else ("B", "A")
        case = CASE.search(_between(text, "[User Question]\n", "\n\n[The Start")).group(1)
        return MMRB_CASES[case][0](x, y)
    raise AssertionError(f"no scripted reply for {json.dumps(body)[:300]}")


# =============================================================================================
# Synthetic data (PIL-drawn images; never rows of the real sets)
# =============================================================================================

VLRB_IDS = ("RLAIF-V_{}", "RLHF-V_{}", "hallucination_pair_{}", "mathverse_{}", "mmmu-{}", "wildvision-battle_{}",
            "vlfeedback_{}", "other{}")


def image_bytes(k: int, fmt: str = "PNG") -> bytes:
    """A small PIL-drawn image, different for each ``k``."""
    from PIL import Image, ImageDraw

    picture = Image.new("RGB", (24, 16), ((k * 53) % 256, (k * 97) % 256, (k * 31) % 256))
    ImageDraw.Draw(picture).rectangle((k % 8, 2, k % 8 + 6, 12), fill=(255 - k, 10 * k % 256, 128))
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return out.getvalue()


def vlrb_rows(cases: dict) -> list[dict]:
    """VL-RewardBench items in its hub parquet's schema (``id``, ``query``, ``response``,
    ``human_ranking``, ``image`` {bytes, path}, ``models``, ``judge``, ``rationale``,
    ``query_source``), one per case, over the id prefixes of every dataset; the good answer first
    or second by turns, and its ranking to match."""
    rows = []
    for i, case in enumerate(cases):
        good_first = i % 3 != 1
        good, bad = f"Answer {i} ans=good.", f"Answer {i} ans=bad <image>\nhere."
        rows.append({"id": VLRB_IDS[i % len(VLRB_IDS)].format(i), "query": f"<image>\nWhat is shown {i} [case={case}]?",
                     "response": [good, bad] if good_first else [bad, good],
                     "human_ranking": [0, 1] if good_first else [1, 0],
                     "image": {"bytes": image_bytes(i, "PNG" if i % 2 else "JPEG"), "path": f"{i}.png"},
                     "models": ["m1", "m2"], "judge": "human", "rationale": "", "query_source": "synthetic"})
    for j, form in enumerate(VLRB_IDS):  # a plain item in every dataset: cal.py divides by each one's decided items
        i = len(rows)
        rows.append({**rows[0], "id": form.format(f"{i}p"), "query": f"What is shown {i} [case=plain]?",
                     "response": [f"Answer {i} ans=good.", f"Answer {i} ans=bad."] if j % 2 else
                     [f"Answer {i} ans=bad.", f"Answer {i} ans=good."], "human_ranking": [0, 1] if j % 2 else [1, 0],
                     "image": {"bytes": image_bytes(i), "path": f"{i}.png"}})
    return rows


def write_parquet(path: Path, rows: list[dict]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


MMRB_CATEGORIES = (("safety", "pairs-{}"), ("safety", "toxic-{}"), ("reasoning", "math-{}"), ("reasoning", "code-{}"),
                   ("general", "gen-{}"), ("knowledge", "know-{}"))
MMRB_IMAGE_NAMES = ("{}.png", "{}.jpg", "{}.jpeg", "{}.JPG", "{}.img", "{}.webp")  # labels: png, jpeg x3, none, webp


def mmrb_rows(folder: Path) -> list[dict]:
    """Multimodal RewardBench items in its ``all_data.json`` schema (``ID``, ``Text``, ``Output1``,
    ``Output2``, ``Better``, ``Image`` (relative to the image folder), ``Category``), one per case,
    each with a PIL image written under ``folder/images``. The file names' extensions do not always
    say the bytes' type (a ``.jpg`` holding PNG bytes; ``.img``), so the label the client guesses
    from the name shows."""
    rows = []
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(MMRB_CASES):
        category, id_form = MMRB_CATEGORIES[i % len(MMRB_CATEGORIES)]
        name = "images/" + MMRB_IMAGE_NAMES[i % len(MMRB_IMAGE_NAMES)].format(i)
        (folder / name).write_bytes(image_bytes(100 + i, "PNG"))
        good_first = i % 3 != 2
        good, bad = f"Output {i} ans=good.", f"Output {i} ans=bad."
        rows.append({"ID": id_form.format(i), "Text": f"Describe picture {i} [case={case}].",
                     "Output1": good if good_first else bad, "Output2": bad if good_first else good,
                     "Better": "Output1" if good_first else "Output2", "Image": name, "Category": category})
    return rows


# =============================================================================================
# The official clients, run unedited apart from their endpoint
# =============================================================================================

def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_", "AZ_OAI", "HF_TOKEN"))}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p and Path(p).is_dir()), **extra)
    return env


def endpoint_rewritten(source: Path, dest: Path, line: str, new_line: str) -> Path:
    """``source`` copied to ``dest`` with its one endpoint line replaced (asserting it is there once)."""
    text = source.read_text()
    assert text.count(line) == 1, f"{source}: the endpoint line {line!r} is not there once (another version?)"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text.replace(line, new_line))
    return dest


def run_inference_hf(checkout: Path, parquet: Path, base_url: str, work: Path, k: int,
                     timeout: float = 300) -> list[dict]:
    """``inference_hf.py --data_path PARQUET --filter_model_name VLRB_MODEL --k K`` from a copy whose
    ``openai_api_base`` line points at ``base_url`` (its key stays ``EMPTY``), in ``work``; the
    records of the jsonl it writes there."""
    work.mkdir(parents=True, exist_ok=True)
    script = endpoint_rewritten(checkout / "inference_hf.py", work / "inference_hf.py", VLRB_ENDPOINT,
                                f'openai_api_base = "{base_url}"')
    (work / "prompt.py").write_text((checkout / "prompt.py").read_text())
    done = subprocess.run([sys.executable, str(script), "--data_path", str(parquet), "--filter_model_name",
                           VLRB_MODEL, "--k", str(k), "--num_processes", "4"], cwd=work, env=_env({}),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"inference_hf.py exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}"
    (path,) = work.glob("Qwen-Qwen2-VL-7B-Instruct-*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def load_cal(checkout: Path) -> Any:
    spec = importlib.util.spec_from_file_location("vlrb_cal", checkout / "cal.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cal_scores(checkout: Path, records: list[dict], work: Path, k: int) -> dict[str | None, float]:
    """``cal.py`` on inference records (its ``distribution`` with ``reparse=True``, ``classify`` and
    ``distribution_dataset``, at ``k``): the three groups' accuracies, the overall (None) and the
    macro average, exactly from the per-dataset counts ``distribution_dataset`` returns (its
    ``group_mapping`` sums), each checked against the two-decimal percentages it prints."""
    import contextlib

    cal = load_cal(checkout)
    path = work / "cal_input.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        by_dataset = cal.distribution_dataset(cal.classify(cal.distribution(str(path), k=k, reparse=True), k=k))
    mapping = {"vlfeedback": "general", "povid": "hallucination", "reasoning_tasks": "reasoning",
               "rlhf-v": "hallucination", "rlaif-v": "hallucination", "wildvision-battle": "general"}
    agree = {g: 0 for g in ("general", "hallucination", "reasoning")}
    total = dict(agree)
    for dataset, counts in by_dataset.items():
        agree[mapping[dataset]] += counts["agree_number"]
        total[mapping[dataset]] += counts["agree_number"] + counts["reject_number"]
    out: dict[str | None, float] = {g: agree[g] / total[g] for g in agree}
    out[None] = sum(agree.values()) / sum(total.values())
    out["macro"] = sum(out[g] for g in agree) / 3
    text = printed.getvalue()
    assert f"Overall Accuracy: {out[None] * 100:.2f}" in text and f"Macro Average Acc: {out['macro'] * 100:.2f}" in text
    return out


def run_mmrb_judge(checkout: Path, data: Path, images: Path, base_url: str, key: str, work: Path,
                   timeout: float = 300) -> Path:
    """``1_run_model_as_judge_gpt4o.py --question-file DATA --image-folder IMAGES --answers-file ...``
    from a copy whose ``endpoint`` line names the scripted server (AzureOpenAI then posts to
    ``http://HOST:PORT/openai/deployments/gpt-4o/chat/completions``; its key from ``AZ_OAI_API``);
    the answers file."""
    host = base_url.split("://", 1)[1].split("/", 1)[0]
    script = endpoint_rewritten(checkout / "scripts" / "1_run_model_as_judge_gpt4o.py",
                                work / "1_run_model_as_judge_gpt4o.py", MMRB_ENDPOINT, f"endpoint = '{host}'")
    # the script writes f'https://{endpoint}': the scripted server speaks plain HTTP, so the scheme is the
    # one more character the endpoint needs
    text = script.read_text()
    assert text.count("azure_endpoint=f'https://{endpoint}'") == 1
    script.write_text(text.replace("azure_endpoint=f'https://{endpoint}'", "azure_endpoint=f'http://{endpoint}'"))
    answers = work / "outputs" / "answers.jsonl"
    done = subprocess.run([sys.executable, str(script), "--question-file", str(data), "--image-folder", str(images),
                           "--answers-file", str(answers)], cwd=work, env=_env({"AZ_OAI_API": key}),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (f"1_run_model_as_judge_gpt4o.py exited {done.returncode}:\n"
                                  f"{(done.stdout + done.stderr)[-3000:]}")
    return answers


ACC_LINE = re.compile(r"^acc (\S+): (\d+) / (\d+) = (\S+)$", re.M)


def mmrb_accuracy(checkout: Path, answers: Path, work: Path) -> dict[str, float]:
    """``2_get_accuracy.py --answers-file ANSWERS``, run as it is: its printed accuracies by task
    (``all``, ``safety/bias``, ``safety/toxicity``, ``reasoning/math``, ``reasoning/coding`` and the
    other categories), each its full float repr."""
    done = subprocess.run([sys.executable, str(checkout / "scripts" / "2_get_accuracy.py"), "--answers-file",
                           str(answers)], cwd=work, env=_env({}), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return {m.group(1): float(m.group(4)) for m in ACC_LINE.finditer(done.stdout)}
