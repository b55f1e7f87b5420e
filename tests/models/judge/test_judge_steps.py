"""``judge:MODEL`` as a process reward model: ``mode=steps`` (a chat PRM answering +/- per step,
RLHFlow style) and ``mode=critic`` (ProcessBench's critique template), against a real HTTP server
on 127.0.0.1 (tests/support/judge_server.py), one per module.

The official code is QwenLM/ProcessBench at e8024636 (``code/run_eval_prm_rlhflow.py``,
``code/run_eval.py``, ``code/templates/critique_template.txt``); its prompt-building and parsing
lines are copied below, unedited but for the names of the client and model, and run as they are:
the RLHFlow script's loop with the real OpenAI python client against the same server.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np
import pytest

import rmbench  # noqa: E402
from rmbench.core import metric_registry as R  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.models.judge import processbench as PB  # noqa: E402
from rmbench.models.judge.adapter import JudgeRM  # noqa: E402
from rmbench.models.judge.step_judge import Judge, StepJudgeRM, critic_step_scores  # noqa: E402
from rmbench.models.step_model import StepRequest, StepScoringModel  # noqa: E402
from rmbench.models.steps import StepRanker  # noqa: E402
from rmbench.scoring.steps import score_steps  # noqa: E402
from rmbench.tasks import TASK_KINDS  # noqa: E402
from tests.core.test_step_groups import StepsTask  # noqa: E402  (a step-level task kind: first_error_acc)
from tests.support.judge_server import ScriptedServer  # noqa: E402
from tests.support.processbench_official import critic_prediction as official_prediction  # noqa: E402

MODEL = "Llama3.1-8B-PRM-Mistral-Data"  # the served name in run_eval_prm_rlhflow.py
PLUS_TOP = [("+", -0.1), ("-", -2.4), ("The", -6.0)]
MINUS_TOP = [("-", -0.05), ("+", -3.0)]
P_PLUS, P_MINUS = 1 / (1 + math.exp(-2.3)), 1 / (1 + math.exp(2.95))  # exp(l+) / (exp(l+) + exp(l-))

# --- the official code (QwenLM/ProcessBench e8024636) --------------------------------------------

# code/templates/critique_template.txt, as run_eval.py reads it (open(...).read().strip()): its sha256
CRITIQUE_SHA256 = "0e7dba24bfaa9dea379907e11b8dc701c6cd6e74453ab2ffc9b1d63237cc4434"


def official_rlhflow(client, d):
    """code/run_eval_prm_rlhflow.py, main.single_process (model name as there)."""
    steps = d['steps']
    messages = []
    for sdx, step in enumerate(steps):
        if sdx == 0:
            messages.append({'role': 'user', 'content': d['problem'] + '\n\n' + step})
        else:
            messages.append({'role': 'user', 'content': step})
        completion = client.chat.completions.create(
            model='Llama3.1-8B-PRM-Mistral-Data',
            messages=messages,
            n=1,
            temperature=0.,
            max_tokens=1,
        )
        judgment = completion.choices[0].message.content.strip().lower().startswith('+')
        if not judgment:
            return sdx
        messages.append({'role': 'assistant', 'content': '+'})
    return -1


def prepare_input_boxed(template, input_d):
    """code/run_eval.py"""
    problem = input_d['problem']
    steps = input_d['steps']
    tagged_response = ''
    for sdx, step in enumerate(steps):
        tagged_response += f'<paragraph_{sdx}>\n{step}\n</paragraph_{sdx}>\n\n'
    tagged_response = tagged_response.strip()
    prompt = template.format(problem=problem, tagged_response=tagged_response)
    messages = [{'role': 'user', 'content': prompt}]
    return messages


CRITIC_SAYS = {"1+1": r"All correct: \boxed{-1}", "2+2": r"\boxed{0}", "3+3": r"Paragraph 2 is wrong, \boxed{2}.",
               "4+4": "I cannot tell."}
"""The critic's replies to the step-level task's problems (tests/core/test_step_groups.py's fixture)."""

# --- the scripted judge --------------------------------------------------------------------------

def reply(body: dict):
    """A PRM step (max_tokens 1): ``-`` for a step that says "wrong", else ``+``, with logprobs; a
    step saying "nologprobs" or "neither" tests the fall-backs. A critique: the ``[say=...]`` of the problem."""
    last = body["messages"][-1]["content"]
    if body["max_tokens"] != 1:
        said = re.search(r"\[say=(.*?)\]", last)
        problem = re.search(r"\[Math Problem\]\n\n(.*?)\n\n", last)
        return said.group(1) if said else CRITIC_SAYS.get(problem.group(1) if problem else "", "no idea")
    if "nologprobs" in last:
        return {"content": "-", "top_logprobs": []}
    if "neither" in last:
        return {"content": " Yes", "top_logprobs": [[(" Yes", -0.1), (" No", -2.0)]]}
    return {"content": "-", "top_logprobs": [MINUS_TOP]} if "wrong" in last else {"content": "+",
                                                                                  "top_logprobs": [PLUS_TOP]}


@pytest.fixture(scope="module")
def server():
    with ScriptedServer(reply=reply, model_id=MODEL) as s:
        yield s


def sent_since(server: ScriptedServer, start: int) -> list[dict]:
    return server.chat_requests()[start:]


def as_json(body: dict) -> str:
    """A body as JSON text, keys sorted: equal texts are equal bodies, number types included (0.0 is not 0)."""
    return json.dumps(body, sort_keys=True)


SOLUTIONS = [{"problem": "1+1?", "steps": ["1+1=2", "so 2"]},
             {"problem": "3+3?", "steps": ["3+3", "=7 wrong", "so 7", "done"]},
             {"problem": "2+2?", "steps": ["2+2=5 wrong", "so 5"]}]


def judge(server: ScriptedServer, **args) -> JudgeRM:
    """What ``--model judge:MODEL --model-arg ...`` builds (the kind's class)."""
    return Judge(MODEL, base_url=server.base_url, **args)


# --- steps ---------------------------------------------------------------------------------------

def test_steps_sends_the_rlhflow_scripts_requests_and_reads_its_verdicts(server):
    openai = pytest.importorskip("openai")
    start = len(server.chat_requests())
    client = openai.OpenAI(base_url=server.base_url, api_key="token-abc123")
    official = [official_rlhflow(client, d) for d in SOLUTIONS]
    assert official == [-1, 1, 0]
    official_bodies = sent_since(server, start)
    assert len(official_bodies) == 2 + 2 + 1  # the script stops at the first '-'

    start = len(server.chat_requests())
    model = judge(server, mode="steps", score="verdict")
    requests = [StepRequest(d["problem"], tuple(d["steps"])) for d in SOLUTIONS]
    scores = model.score_steps(requests)
    ours = sent_since(server, start)
    assert len(ours) == 2 + 4 + 2  # every step asked, with the conversation up to it
    # the official requests are ours up to each solution's first '-', byte for byte as JSON
    asked = {d["problem"]: len(d["steps"]) if k == -1 else k + 1 for d, k in zip(SOLUTIONS, official)}
    upto = [b for b in ours if sum(m["role"] == "user" for m in b["messages"])
            <= asked[b["messages"][0]["content"].split("\n\n")[0]]]
    assert sorted(map(as_json, upto)) == sorted(map(as_json, official_bodies))
    assert scores == [[1.0, 1.0], [1.0, 0.0, 1.0, 1.0], [0.0, 1.0]]
    first_below = [next((i for i, s in enumerate(row) if s < 0.5), -1) for row in scores]
    assert first_below == official  # a 0.5 threshold on the step scores is the script's prediction


def test_steps_reads_p_plus_from_top_logprobs_and_falls_back_to_the_text(server):
    start = len(server.chat_requests())
    model = judge(server, mode="steps")  # score=probability, the default
    req = StepRequest("3+3?", ("3+3", "=7 wrong", "nologprobs", "neither"), "s1")
    (scores,) = model.score_steps([req])
    assert scores == pytest.approx([P_PLUS, P_MINUS, 0.0, 0.0], abs=1e-12)
    assert P_PLUS == pytest.approx(0.908877038985144) and P_MINUS == pytest.approx(0.0497365115585567)
    bodies = sent_since(server, start)
    last = max(bodies, key=lambda b: len(b["messages"]))
    expected = {"model": MODEL, "messages": [{"role": "user", "content": "3+3?\n\n3+3"},
                                             {"role": "assistant", "content": "+"},
                                             {"role": "user", "content": "=7 wrong"},
                                             {"role": "assistant", "content": "+"},
                                             {"role": "user", "content": "nologprobs"},
                                             {"role": "assistant", "content": "+"},
                                             {"role": "user", "content": "neither"}],
                "n": 1, "temperature": 0.0, "max_tokens": 1, "logprobs": True, "top_logprobs": 20}
    assert as_json(last) == as_json(expected)  # the official request, with logprobs asked for
    rows = model.judgments([ScoreRequest("3+3?", s, "s1", i, context=tuple(x for x in req.steps if x != s))
                            for i, s in enumerate(req.steps)])
    assert [(r["response_index"], r["read"], r["parsed"]) for r in rows] == [
        (0, "logprobs", 1.0), (1, "logprobs", 0.0), (2, "text", 0.0), (3, "text", 0.0)]


def test_plus_probability_by_hand():
    assert PB.plus_probability([PLUS_TOP]) == pytest.approx(math.exp(-0.1) / (math.exp(-0.1) + math.exp(-2.4)))
    assert PB.plus_probability([[("+", -0.2)]]) == 1.0  # '-' not among the likeliest: probability 0
    assert PB.plus_probability([[("x", -0.2), ("-", -0.3)]]) == 0.0
    assert PB.plus_probability([[(" +", -0.1)]]) is None and PB.plus_probability([]) is None
    assert PB.parse_step(" +\n") == "+" and PB.parse_step("") == "-" and PB.parse_step("yes +") == "-"


def test_a_steps_judge_is_a_prm_and_a_response_level_rm(server):
    model = judge(server, mode="steps", aggregate="mean")
    assert isinstance(model, StepJudgeRM) and isinstance(model, StepScoringModel) and isinstance(model, StepRanker)
    assert model.identity()["args"] == {"aggregate": "mean"} and "aggregate" not in model.step_identity()["args"]
    assert judge(server, mode="steps", aggregate="min").step_fingerprint() == model.step_fingerprint()
    # the response split at blank lines, its steps' P(+) averaged
    (value,) = model.score([ScoreRequest("3+3?", "3+3\n\n=7 wrong", "g", 0)])
    assert value == pytest.approx((P_PLUS + P_MINUS) / 2)
    with pytest.raises(rmbench.ConfigError, match="aggregate .* is for mode steps or critic"):
        judge(server, mode="rating", aggregate="min")
    with pytest.raises(rmbench.ConfigError, match="score must be 'probability' or 'verdict' in mode steps"):
        judge(server, mode="steps", score="expected")
    assert type(judge(server)) is JudgeRM  # mode rating: a response-level judge only
    with pytest.raises(rmbench.ConfigError, match="mode steps scores steps"):
        JudgeRM(MODEL, base_url=server.base_url, mode="steps")


# --- critic --------------------------------------------------------------------------------------

def test_the_critique_template_is_processbenchs_file():
    assert hashlib.sha256(PB.CRITIQUE_TEMPLATE.encode()).hexdigest() == CRITIQUE_SHA256


@pytest.mark.parametrize("text", [r"so \boxed{3}", r"\boxed{-1}", "garbage", r"\boxed{two}", r"\boxed{}",
                                  r"\boxed{1} then \boxed{ 2 }", r"\boxed{+4}", r"\boxed{1.0}"])
def test_the_critic_reads_a_reply_as_run_eval_does(text):
    assert PB.parse_critic(text) == official_prediction(text)


def test_critic_sends_run_evals_request_and_scores_steps_from_the_index(server):
    solutions = [{"problem": r"A [say=\boxed{2}]", "steps": ["a", "b", "c", "d"]},
                 {"problem": r"B [say=all good \boxed{-1}]", "steps": ["a", "b"]},
                 {"problem": "C [say=garbage]", "steps": ["a", "b"]},
                 {"problem": r"D [say=\boxed{5}]", "steps": ["a", "b"]}]
    start = len(server.chat_requests())
    model = judge(server, mode="critic")
    scores = model.score_steps([StepRequest(d["problem"], tuple(d["steps"])) for d in solutions])
    assert scores[:2] == [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0]]
    assert all(math.isnan(s) for row in scores[2:] for s in row)  # no step named: no verdict
    # run_eval.py's vLLM SamplingParams(temperature=0., max_tokens=8192, seed=42) over the chat API
    official = [{"model": MODEL, "messages": prepare_input_boxed(PB.CRITIQUE_TEMPLATE, d), "max_tokens": 8192,
                 "temperature": 0.0, "seed": 42} for d in solutions]
    assert sorted(map(as_json, sent_since(server, start))) == sorted(map(as_json, official))
    assert model.counters["unparsed"] == 2
    rows = model.judgments([ScoreRequest(d["problem"], d["steps"][0], "g", 0, context=tuple(d["steps"][1:]))
                            for d in solutions])
    assert [(r["parsed"], r["answer"]) for r in rows] == [(2, 2), (-1, -1), (None, None), (None, 5)]
    assert critic_step_scores(0, 3) == [0.0, 0.0, 0.0] and critic_step_scores(-1, 2) == [1.0, 1.0]
    assert math.isnan(critic_step_scores(-2, 2)[0]) and math.isnan(critic_step_scores(None, 1)[0])


def test_a_critic_with_no_verdict_through_score_steps_is_nan_not_an_error(server):
    model = judge(server, mode="critic")
    (row,), _ = score_steps(model, [StepRequest("E [say=none]", ("a", "b"))])
    assert np.isnan(row).all() and row.shape == (2,)
    (value,) = model.score([ScoreRequest("E [say=none]", "a\n\nb", "g", 0)])
    assert math.isnan(value)  # a response-level task leaves it out, as an unparsed judge answer


# --- end to end: a step-level task, the call cache -------------------------------------------------

@pytest.fixture
def step_task(tmp_path):
    """tests/core/test_step_groups.py's step-level task kind on its four solutions (labels -1, 0, 2, -1)."""
    rows = tmp_path / "solutions.jsonl"
    solutions = [{"problem": "1+1", "steps": ["1+1=2", "so 2"], "label": -1},
                 {"problem": "2+2", "steps": ["2+2=5 wrong", "so 5"], "label": 0},
                 {"problem": "3+3", "steps": ["3+3", "=6", "so 7 wrong", "done"], "label": 2},
                 {"problem": "4+4", "steps": ["4+4=8"], "label": -1}]
    rows.write_text("".join(json.dumps(s) + "\n" for s in solutions))
    rmbench.register_task_kind("steps_test_kind", StepsTask)
    yield rows
    TASK_KINDS._entries.pop("steps_test_kind", None)
    R.METRICS.unregister("first_error_acc")


def test_a_step_task_runs_on_a_steps_judge_and_a_rerun_makes_no_call(server, step_task, tmp_path):
    rows = step_task
    config = rmbench.EvalConfig(model=f"judge:{MODEL}", tasks=("steps_test_kind",), task_args=(("path", str(rows)),),
                                model_args=(("base_url", server.base_url), ("mode", "steps")), n_bootstrap=20,
                                cache_dir=str(tmp_path / "cache"))
    start = len(server.chat_requests())
    run = rmbench.evaluate(config, out_dir=tmp_path / "run")
    assert len(sent_since(server, start)) == 2 + 2 + 4 + 1  # one call per step
    assert run.value("steps_test_kind", "first_error_acc") == 1.0
    assert run.value("steps_test_kind", "discrimination", eps=0.0) == 1.0
    judged = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    assert len(judged) == 9 and {j["read"] for j in judged} == {"logprobs"}
    by_solution: dict[str, list[tuple[int, int]]] = {}
    for j in judged:  # each call under the step it asked about, with that step's label
        by_solution.setdefault(j["group_id"], []).append((j["response_index"], j["utility"]))
    assert sorted(tuple(u for _, u in sorted(v)) for v in by_solution.values()) == [
        (0, 0), (1,), (1, 1), (1, 1, 0, 0)]
    # the calls are cached (one file, named by the served model), never the step scores
    calls_file = JudgeRM(MODEL, base_url=server.base_url).call_fingerprint() + ".sqlite"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [calls_file]

    start = len(server.chat_requests())
    again = rmbench.evaluate(config, out_dir=tmp_path / "again")
    assert sent_since(server, start) == []  # every call from the call cache
    assert again.value("steps_test_kind", "first_error_acc") == 1.0
    calls = json.loads((tmp_path / "again" / "results.json").read_text())["execution"]["stats"]["ran_with"]
    assert calls["judge_calls"]["calls"] == 0 and calls["judge_calls"]["cached_calls"] == 9


def test_a_step_task_on_a_critic_leaves_a_solution_with_no_verdict_out_and_counts_it(server, step_task, tmp_path):
    rows = step_task
    config = rmbench.EvalConfig(model=f"judge:{MODEL}", tasks=("steps_test_kind",), task_args=(("path", str(rows)),),
                                model_args=(("base_url", server.base_url), ("mode", "critic")), n_bootstrap=20,
                                cache_dir=str(tmp_path / "cache"))
    start = len(server.chat_requests())
    run = rmbench.evaluate(config, out_dir=tmp_path / "run")
    assert len(sent_since(server, start)) == 4  # one call per solution
    assert run.value("steps_test_kind", "first_error_acc") == 1.0  # 3 of 3 with a verdict
    (task,) = json.loads((tmp_path / "run" / "results.json").read_text())["tasks"]
    assert task["unparsed"] == 1 and task["counts"]["groups"] == 4
    replies = task["judge_replies"]
    assert (replies["calls"], replies["no_verdict"], replies["left_out"]) == (4, 1, 1)
    assert "ProcessBench counts" in replies["no_verdict_scored"]


def test_a_steps_judge_ranks_responses_on_a_response_level_task(server, tmp_path):
    config = rmbench.EvalConfig(model=f"judge:{MODEL}", tasks=("ties_sample",), limit=2, n_bootstrap=20,
                                model_args=(("base_url", server.base_url), ("mode", "steps"), ("aggregate", "prod")),
                                cache_dir=str(tmp_path / "cache"))
    start = len(server.chat_requests())
    rmbench.evaluate(config, out_dir=tmp_path / "run")
    sent = sent_since(server, start)
    judged = [json.loads(line) for line in (tmp_path / "run" / "judgments.jsonl").read_text().splitlines()]
    rewards = [json.loads(line) for line in (tmp_path / "run" / "rewards.jsonl").read_text().splitlines()]
    assert len(judged) == len(sent) > 0 and all(j["read"] == "logprobs" for j in judged)
    per_response: dict[tuple[str, int], float] = {}
    for j in judged:  # a response's reward: the product of its steps' P(+)
        key = (j["group_id"], j["response_index"])
        per_response[key] = per_response.get(key, 1.0) * j["score"]
    assert len(per_response) == len(rewards)
    assert all(r["reward"] == pytest.approx(per_response[(r["group_id"], r["response_index"])]) for r in rewards)
