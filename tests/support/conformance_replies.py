"""The conformance tier's scripted judge, its synthetic data, and the official clients' runners.

A test helper (not a test file) for ``tests/models/judge/test_judge_conformance.py``: the official judge
clients run unedited, as subprocesses, against :class:`judge_server.ScriptedServer` with
:func:`reply` as its judge, and so does rmbench's ``judge`` kind. Every reply is a pure function
of the request's messages, so both clients get the same reply to the same request:

* each answer text carries ``[rate=K case=NAME]`` (RewardBench 2 ratings: :data:`RATING_CASES`);
* each question carries ``[case=NAME]`` (RewardBench 2 best-of-4: :data:`FOURWAY_CASES`;
  JudgeBench: :data:`ARENA_CASES`, :data:`VANILLA_CASES`), and each answer its role, ``ans=good``
  or ``ans=badJ``. A verdict names the slot that *holds* a text, never a fixed slot, so it does
  not depend on where a client placed the answers (RewardBench 2's best-of-4 shuffles with an
  unseeded ``np.random``).

Each case says whether rmbench's ``fidelity=strict`` reads it differently from the official
code (``differs``): a reply cut off by ``max_tokens`` that holds a verdict, a verdict inside
``<think>``, a ``<think>`` that never closes.

Official code:

* RewardBench 2's ``scripts/run_generative_v2.py`` at reward-bench 05a9005, from
  ``../shared/official/reward-bench-05a9005`` (see its README there): :func:`start_rb2`,
  :func:`rb2_scores` (its printed subset lines: ``Math: 1.25/2 (0.625)``, ``Ties: Ties score: x``);
* JudgeBench's ``run_judge.py`` (ScalerLab/JudgeBench e2c52c2; no licence, so never copied here):
  a checkout named by ``RMBENCH_JUDGEBENCH_DIR``: :func:`start_judgebench`,
  :func:`judgebench_scores` (the outputs file it writes, scored by the checkout's own
  ``utils/metrics.py::compute_final_metrics``, and its printed two-decimal lines).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
OFFICIAL = REPO.parent / "shared" / "official"
RB2_DIR = OFFICIAL / "reward-bench-05a9005"
RB2_SCRIPT = RB2_DIR / "scripts" / "run_generative_v2.py"
JUDGEBENCH_ENV = "RMBENCH_JUDGEBENCH_DIR"

RB2_MODEL = "gpt-4o-2024-08-06"  # in generative_v2's OPENAI_MODEL_LIST: its OpenAI() path
JB_MODEL = "gpt-4o-2024-05-13"  # a "gpt" name: JudgeBench's OpenAIAPI (openai.AsyncClient)

# What each official client imports (besides numpy, which rmbench needs anyway).
RB2_IMPORTS = ("openai", "datasets", "transformers", "accelerate", "sentencepiece", "tiktoken", "anthropic", "backoff")
JB_IMPORTS = ("openai", "anthropic", "backoff", "tqdm", "jinja2", "transformers", "datasets")

Reply = str | dict[str, Any]


def missing_modules(names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` that cannot be imported here (found by spec, nothing imported)."""
    return [n for n in names if importlib.util.find_spec(n) is None]


def rb2_unavailable() -> str | None:
    """Why RewardBench 2's script cannot run here, or None."""
    if not RB2_SCRIPT.is_file():
        return f"RewardBench 2's official script is not at {RB2_SCRIPT} (shared/official is absent)"
    missing = missing_modules(RB2_IMPORTS)
    if missing:
        return (f"run_generative_v2.py needs {', '.join(missing)}: install the official clients' packages "
                f"(the line in .ci/run)")
    return None


def judgebench_dir() -> Path | None:
    value = os.environ.get(JUDGEBENCH_ENV)
    return Path(value) if value else None


def judgebench_unavailable() -> str | None:
    """Why JudgeBench's run_judge.py cannot run here, or None."""
    checkout = judgebench_dir()
    if checkout is None:
        return (f"{JUDGEBENCH_ENV} is not set: JudgeBench (ScalerLab/JudgeBench e2c52c2) has no licence, so "
                f"its run_judge.py is not shipped; point {JUDGEBENCH_ENV} at a checkout to run this test")
    if not (checkout / "run_judge.py").is_file() or not (checkout / "utils" / "metrics.py").is_file():
        return f"{JUDGEBENCH_ENV}={checkout} holds no run_judge.py and utils/metrics.py (a JudgeBench checkout)"
    missing = missing_modules(JB_IMPORTS)
    if missing:
        return f"run_judge.py needs {', '.join(missing)}: install the official clients' packages (the line in .ci/run)"
    return None


# =============================================================================================
# The scripted judge
# =============================================================================================

TAG = re.compile(r"\[rate=(\d+) case=(\w+)\]")
CASE = re.compile(r"\[case=(\w+)\]")
ANS = re.compile(r"ans=(good|bad\d)")
CONTINUE = "continue your judgment and finish by outputting a final verdict label"  # ArenaHard.get_judgment


def cut(text: str) -> dict[str, Any]:
    """A reply cut off by ``max_tokens``."""
    return {"content": text, "finish_reason": "length"}


# RewardBench 2 ratings: the official parser is re.search(r"\b([1-9]|10)\b\s*$", reply.strip()) on
# message.content, whatever the finish reason; anything else is -1.
# name: (reply for rating K, whether fidelity=strict reads it differently)
RATING_CASES: dict[str, tuple[Callable[[int], Reply], bool]] = {
    "plain": (lambda k: f"The response is accurate and clear.\n\n{k}", False),
    "spaces": (lambda k: f"Rating: {k}  \n \t\n", False),  # trailing whitespace
    "brackets": (lambda k: f"A solid answer. Rating: [[{k}]]", False),  # [[N]]: not a trailing number
    "two_numbers": (lambda k: f"Somewhere between 3 and {k}; I settle on {k}", False),
    "none": (lambda k: "I cannot rate this response.", False),
    "cut_rating": (lambda k: cut(f"The response covers the main points, so overall {k}"), True),
    "cut_none": (lambda k: cut("The response covers the main points but the"), False),
    "think_open": (lambda k: f"<think>Weighing it up, I land on {k}", True),  # never closes
    "cut_think": (lambda k: cut(f"<think>Step by step, the score is {k}"), True),
    "think_closed": (lambda k: f"<think>First guess: 2</think>\nOn reflection it is good.\n{k}", False),
    "think_only": (lambda k: f"<think>I would give it {k}</think>", False),  # ends in </think>: -1 both ways
    "reasoning_field": (lambda k: {"content": f"Rating: {k}", "reasoning_content": "thinking about a 2"}, False),
}


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def rating_reply(user: str) -> Reply:
    answer = _between(user, "[Response]\n", "\n\n[Your judgement]")
    rate, case = TAG.search(answer).groups()
    return RATING_CASES[case][0](int(rate))


FOURWAY = re.compile(r"\[The Start of Assistant ([ABCD])'s Answer\]\n(.*?)\n\[The End of Assistant \1's Answer\]",
                     re.S)


def fourway_slots(user: str) -> dict[str, str]:
    """Each answer's role (``good``, ``bad0``..``bad2``) -> the slot letter holding it."""
    return {ANS.search(text).group(1): letter for letter, text in FOURWAY.findall(user)}


# RewardBench 2 best-of-4: process_judgement returns the first of "[[A]]".."[[D]]" found *in that
# order* (not the first in the text), else "error" (the row scores 0.25). Labels naming two slots
# name two rejected answers, so the official score does not depend on the shuffle.
# name: (reply from {role: slot}, whether fidelity=strict reads it differently)
FOURWAY_CASES: dict[str, tuple[Callable[[dict[str, str]], Reply], bool]] = {
    "pick_good": (lambda s: f"Assistant {s['good']} answers best.\n\n[[{s['good']}]]", False),
    "pick_bad": (lambda s: f"My final verdict: [[{s['bad0']}]]  \n", False),
    "cut_good": (lambda s: cut(f"Comparing the four, assistant {s['good']} is right: [[{s['good']}]]"), True),
    "cut_none": (lambda s: cut("Comparing the four responses, assistant"), False),
    "think_good": (lambda s: f"<think>Probably [[{s['good']}]]</think>\nI cannot decide.", True),
    "think_two": (lambda s: "<think>[[{}]]</think>\nFinal verdict: [[{}]]".format(*sorted((s["bad0"], s["bad1"]))),
                  True),  # official: the earlier letter (inside <think>); strict: the later one
    "two_labels": (lambda s: "[[{1}]] or rather [[{0}]]".format(*sorted((s["bad1"], s["bad2"]))), False),
    "none": (lambda s: "All four are equally good.", False),
}


def fourway_reply(user: str) -> Reply:
    case = CASE.search(_between(user, "[User Question]\n", "\n\n[The Start of Assistant A")).group(1)
    return FOURWAY_CASES[case][0](fourway_slots(user))


# JudgeBench arena_hard: ArenaHard.get_judgment searches r"\[\[([AB<>=]+)\]\]" in "\n" + reply (and
# "\n" + follow-up): one distinct label is the decision (">>" -> ">"), two distinct ones None with no
# retry, none: asked once more with CONTINUE. x: the slot holding the good answer, y: the other.
# name: (first reply, follow-up reply, whether fidelity=strict reads it differently)
ARENA_CASES: dict[str, tuple[Callable[[str, str], Reply], Callable[[str, str], Reply] | None, bool]] = {
    "plain": (lambda x, y: f"Assistant {x} is correct.\n\nMy final verdict is: [[{x}>>{y}]]", None, False),
    "tie": (lambda x, y: "Both are fine. My final verdict is tie: [[A=B]]", None, False),
    "cut_label": (lambda x, y: cut(f"Assistant {x} is right, verdict [[{x}>{y}]] and further"), None, True),
    "cut_none": (lambda x, y: cut("The two answers differ in"), lambda x, y: f"[[{x}>{y}]]", True),
    "think_two": (lambda x, y: f"<think>[[{y}>{x}]]</think>\nMy final verdict is: [[{x}>{y}]]", None, True),
    "think_only": (lambda x, y: f"<think>Leaning [[{x}>>{y}]]</think>\nLet me weigh this further.",
                   lambda x, y: f"My final verdict is: [[{y}>{x}]]", True),
    "none_then_label": (lambda x, y: "I need to think more.", lambda x, y: f"Final: [[{x}>>{y}]]", False),
    "none_then_none": (lambda x, y: "Hard to say.", lambda x, y: "Still undecided.", False),
    "two_labels": (lambda x, y: f"[[{x}>{y}]] at first, then [[{y}>{x}]]", None, False),
    "repeat_mixed": (lambda x, y: f"[[{x}>{y}]], and again [[{x}>>{y}]]", None, False),  # two distinct strings
    "trailing": (lambda x, y: f"  [[{y}>{x}]]  \n\n", None, False),
    "position_bias": (lambda x, y: "[[A>B]]", None, False),
    # content null (a reasoning judge cut off inside its reasoning): JudgeBench's "\n" + None raises, the
    # game has no decision and nothing is asked again
    "null_content": (lambda x, y: {"content": None, "reasoning_content": f"Leaning {x}", "finish_reason": "length"},
                     lambda x, y: f"[[{x}>{y}]]", False),
}

# JudgeBench vanilla: Vanilla.extract_pairwise_result(output.strip()) is exactly "Output (a)" or
# "Output (b)", else an exception, which run_judge.py records as a game with no decision.
VANILLA_CASES: dict[str, tuple[Callable[[str, str], Reply], bool]] = {
    "plain": (lambda x, y: f"Output ({x})", False),
    "tie": (lambda x, y: "Output (a)", False),
    "cut_label": (lambda x, y: cut(f"Output ({x})"), True),
    "cut_none": (lambda x, y: cut("Output ("), False),
    "think_two": (lambda x, y: f"<think>Output ({y})</think>Output ({x})", True),
    "think_only": (lambda x, y: f"<think>Output ({x})</think>", False),
    "none_then_label": (lambda x, y: f"  Output ({x})\n", False),  # surrounding spaces
    "none_then_none": (lambda x, y: "Both are good.", False),
    "two_labels": (lambda x, y: f"Output ({x}) Output ({y})", False),
    "repeat_mixed": (lambda x, y: f"Output ({x}).", False),
    "trailing": (lambda x, y: f"Output ({y})\n\n", False),
    "position_bias": (lambda x, y: {"content": "Output (a)", "reasoning_content": "I compared both."}, False),
    "null_content": (lambda x, y: {"content": None, "reasoning_content": f"Output ({x})", "finish_reason": "length"},
                     False),
}


def arena_reply(messages: list[dict]) -> Reply:
    user = messages[1]["content"]
    case = CASE.search(_between(user, "<|User Prompt|>\n", "\n\n<|The Start of Assistant A")).group(1)
    a = _between(user, "<|The Start of Assistant A's Answer|>\n", "\n<|The End of Assistant A's Answer|>")
    x, y = ("A", "B") if "ans=good" in a else ("B", "A")
    first, follow, _ = ARENA_CASES[case]
    if len(messages) == 2:
        return first(x, y)
    assert len(messages) == 4 and messages[3]["content"] == CONTINUE, messages
    return follow(x, y) if follow is not None else "[[A=B]]"


def vanilla_reply(user: str) -> Reply:
    case = CASE.search(_between(user, "# Instruction:\n", "\n# Output (a):")).group(1)
    a = _between(user, "# Output (a):\n", "\n# Output (b):")
    x, y = ("a", "b") if "ans=good" in a else ("b", "a")
    return VANILLA_CASES[case][0](x, y)


def reply(body: dict) -> Reply:
    """The scripted judge: the reply to one chat request, by the protocol its messages are in."""
    messages = body["messages"]
    last = messages[-1]["content"]
    if messages[0]["role"] == "system" and "<|User Prompt|>" in messages[1]["content"]:
        return arena_reply(messages)
    if "# Which is better, Output (a) or Output (b)?" in last:
        return vanilla_reply(last)
    if "[Your judgement]" in last:
        return rating_reply(last)
    if "[The Start of Assistant D's Answer]" in last:
        return fourway_reply(last)
    raise AssertionError(f"no scripted reply for {json.dumps(body)[:300]}")


# =============================================================================================
# Synthetic data (never rows of the real sets)
# =============================================================================================

NON_TIES_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus")


def rb2_rows() -> list[dict]:
    """RewardBench 2's schema, as run_generative_v2.py (load_eval_dataset_multi: ``prompt``,
    ``chosen``, ``rejected``, ``id``, ``subset``, ``num_correct``) and rmbench's ``rewardbench2``
    task read it: one best-of-4 row per :data:`FOURWAY_CASES` (1 chosen, 3 rejected) over the
    five non-Ties subsets, and four ``tied``/``ref`` prompt pairs for Ties (3 correct + 2
    incorrect, 1 correct + 2 incorrect). Every answer's rating case cycles through
    :data:`RATING_CASES`."""
    cases = list(RATING_CASES)
    counter = iter(range(10_000))

    def answer(text: str, rate: int) -> str:
        j = next(counter)
        return f"{text} [rate={rate} case={cases[j % len(cases)]}]"

    rows = []
    for i, case in enumerate(FOURWAY_CASES):
        good = 7 + i % 3
        rows.append({"id": f"nt{i}", "prompt": f"Question {i} [case={case}]?",
                     "chosen": [answer(f"Answer {i} ans=good.", good)],
                     "rejected": [answer(f"Answer {i} ans=bad{j}.", (good - 1, 4 + i % 2, good)[j]) for j in range(3)],
                     "num_correct": 1, "subset": NON_TIES_SUBSETS[i % len(NON_TIES_SUBSETS)]})
    for k in range(4):
        chosen = [answer(f"Tied {k} correct {c}.", (9, 8, 8 - k % 2)[c]) for c in range(3)]
        rows.append({"id": f"tied:{k}", "prompt": f"Ties question {k}?", "chosen": chosen,
                     "rejected": [answer(f"Tied {k} wrong {w}.", (3 + k, 5)[w]) for w in range(2)],
                     "num_correct": 3, "subset": "Ties"})
        rows.append({"id": f"ref:{k}", "prompt": f"Ties question {k}?",
                     "chosen": [answer(f"Ref {k} correct.", 9 - k % 2)],
                     "rejected": [answer(f"Ref {k} wrong {w}.", (2 + k, 6)[w]) for w in range(2)],
                     "num_correct": 1, "subset": "Ties"})
    return rows


JB_SOURCES = ("mmlu-pro-law", "livebench-reasoning", "livebench-math", "livecodebench")


def judgebench_rows() -> list[dict]:
    """JudgeBench's schema (``pair_id``, ``original_id``, ``source``, ``question``,
    ``response_model``, ``response_A``, ``response_B``, ``label``): one pair per case of
    :data:`ARENA_CASES` (the same names key :data:`VANILLA_CASES`), over the four source prefixes."""
    rows = []
    for i, case in enumerate(ARENA_CASES):
        good_first = i % 3 != 1
        good, bad = f"Response {i} ans=good.", f"Response {i} ans=bad0."
        rows.append({"pair_id": f"pair-{i}", "original_id": i, "source": JB_SOURCES[i % 4],
                     "question": f"Pair question {i} [case={case}]?", "response_model": JB_MODEL,
                     "response_A": good if good_first else bad, "response_B": bad if good_first else good,
                     "label": "A>B" if good_first else "B>A"})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# =============================================================================================
# Request bodies, compared
# =============================================================================================

def _numbers(value: Any) -> Any:
    """JSON with every number as a float (``temperature: 0`` and ``0.0`` are the same request)."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return value


ROLE_ORDER = ("good", "bad0", "bad1", "bad2")


def unshuffle_fourway(body: dict) -> tuple[dict, bool]:
    """A best-of-4 request with its answers put back in the row's order (chosen, then the three
    rejected), and whether the placement it was sent with is the official kind: the row's order
    with the chosen answer swapped into one slot (run_generative_v2.py's shuffle_option)."""
    user = body["messages"][-1]["content"]
    placed = FOURWAY.findall(user)
    if len(placed) != 4:
        return body, True
    texts = [text for _, text in placed]
    roles = [ANS.search(t).group(1) for t in texts]
    s = roles.index("good")
    swapped = list(ROLE_ORDER)
    swapped[0], swapped[s] = swapped[s], swapped[0]
    by_role = dict(zip(roles, texts))
    parts = iter([by_role[r] for r in ROLE_ORDER])
    canonical = FOURWAY.sub(lambda m: f"[The Start of Assistant {m.group(1)}'s Answer]\n{next(parts)}\n"
                                      f"[The End of Assistant {m.group(1)}'s Answer]", user)
    out = json.loads(json.dumps(body))
    out["messages"][-1]["content"] = canonical
    return out, roles == swapped


def body_multiset(bodies: list[dict]) -> Counter:
    """The request bodies as a multiset of canonical JSON strings (numbers as floats, best-of-4
    answers in the row's order)."""
    return Counter(json.dumps(_numbers(unshuffle_fourway(b)[0]), sort_keys=True) for b in bodies)


def _short(canonical: str) -> str:
    """A canonical body with its messages shortened to their roles and the last one's tail."""
    body = json.loads(canonical)
    messages = body.pop("messages")
    tail = messages[-1]["content"][-80:]
    return f"{json.dumps(body, sort_keys=True)} messages={[m['role'] for m in messages]} ...{tail!r}"


def multiset_difference(a: Counter, b: Counter, limit: int = 3) -> str:
    """What ``a`` and ``b`` do not share, shortened for an assertion message."""
    only_a, only_b = list((a - b).elements()), list((b - a).elements())
    return "\n".join([f"only in the first ({len(only_a)}):", *(_short(s) for s in only_a[:limit]),
                      f"only in the second ({len(only_b)}):", *(_short(s) for s in only_b[:limit])])


# =============================================================================================
# The official clients, run unedited
# =============================================================================================

def _env(base_url: str, key: str, cache: Path, pythonpath: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "HF_TOKEN"))}
    env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY=key, PYTHONPATH=pythonpath, HF_HUB_OFFLINE="1",
               HF_DATASETS_OFFLINE="1", HF_DATASETS_CACHE=str(cache / "datasets"), HF_HOME=str(cache / "hf"),
               TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1",
               OMP_NUM_THREADS="1")
    return env


def start_rb2(data_dir: Path, base_url: str, key: str, work: Path, ratings: bool) -> subprocess.Popen:
    """``run_generative_v2.py`` as its README there says (``--score_w_ratings`` or best-of-4), its
    stdout and stderr into ``work/out.txt``."""
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(RB2_SCRIPT), "--model", RB2_MODEL, "--dataset", str(data_dir), "--do_not_save",
           "--disable_beaker_save", "--num_threads", "4", *(["--score_w_ratings"] if ratings else [])]
    with open(work / "out.txt", "w") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(cmd, cwd=RB2_DIR, env=_env(base_url, key, work, "stubs:."), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


@contextmanager
def killed_on_error(procs: Iterable[subprocess.Popen]) -> Iterator[None]:
    """Kill the official runs if the block fails (their clients would retry a stopped server for
    minutes)."""
    procs = list(procs)
    try:
        yield
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.wait()
        raise


def finish(proc: subprocess.Popen, work: Path, timeout: float) -> str:
    """Wait for an official run; its output, or AssertionError with the output's tail."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    text = (work / "out.txt").read_text(errors="replace")
    assert proc.returncode == 0, f"{proc.args[1]} exited {proc.returncode}:\n{text[-3000:]}"
    return text


RB2_LINE = re.compile(r"^(?P<subset>[A-Za-z][\w ]*): (?:Ties score: (?P<ties>\S+)|(?P<num>[\d.]+)/(?P<den>\d+) "
                      r"\((?P<value>\S+)\))$", re.M)


def rb2_scores(output: str) -> dict[str, float]:
    """run_generative_v2.py's printed scores: ``{subset}: {num_correct}/{num_total} ({value})`` per
    non-Ties subset and ``Ties: Ties score: {ties_score}`` (full float reprs)."""
    scores = {}
    for m in RB2_LINE.finditer(output.replace("\r", "\n")):
        value = m.group("ties") if m.group("ties") is not None else m.group("value")
        scores[m.group("subset")] = float(value)
        if m.group("num") is not None:
            assert math.isclose(float(m.group("num")) / int(m.group("den")), scores[m.group("subset")])
    return scores


def start_judgebench(pairs: Path, judge_name: str, base_url: str, key: str, work: Path) -> subprocess.Popen:
    """``run_judge.py --judge_name NAME --judge_model gpt-4o-2024-05-13`` from the checkout, with cwd
    ``work`` (its ``./outputs`` go there) and the checkout on PYTHONPATH for its ``utils`` imports."""
    checkout = judgebench_dir()
    assert checkout is not None
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(checkout / "run_judge.py"), "--judge_name", judge_name, "--judge_model", JB_MODEL,
           "--pairs", str(pairs), "--concurrency_limit", "4"]
    with open(work / "out.txt", "w") as out:
        return subprocess.Popen(cmd, cwd=work, env=_env(base_url, key, work, str(checkout)), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


JB_CATEGORIES = {"mmlu-pro": "knowledge", "livebench-reasoning": "reasoning", "livebench-math": "math",
                 "livecodebench": "coding", "": None}
JB_LINE = re.compile(r"^(mmlu-pro|livebench-reasoning|livebench-math|livecodebench|Overall): ([\d.]+)%\.$", re.M)


def judgebench_scores(output: str, work: Path) -> tuple[dict[str | None, float], list[dict]]:
    """JudgeBench's scores as fractions, by rmbench's category names (None: overall), computed by
    the checkout's own ``compute_final_metrics`` (two games: reverse_order) on the outputs file
    ``run_judge.py`` wrote (its printed lines round to two decimals; they are checked against
    these); and the file's records."""
    (path,) = (work / "outputs").glob("*.jsonl")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    spec = importlib.util.spec_from_file_location("judgebench_metrics", judgebench_dir() / "utils" / "metrics.py")
    metrics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(metrics)
    scores = {name: metrics.compute_final_metrics(records, True, lambda x, p=prefix: x["source"].startswith(p)) / 100
              for prefix, name in JB_CATEGORIES.items()}
    printed = {m.group(1): float(m.group(2)) for m in JB_LINE.finditer(output)}
    for prefix, name in JB_CATEGORIES.items():
        assert printed[prefix or "Overall"] == round(100 * scores[name], 2), (prefix, printed, scores)
    return scores, records
