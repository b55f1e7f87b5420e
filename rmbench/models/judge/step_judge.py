"""``judge:MODEL`` in mode ``steps`` or ``critic``: an LLM judge as a process reward model.

``--model judge:MODEL --model-arg mode=steps`` (or ``mode=critic``) builds a :class:`StepJudgeRM`
(the kind ``judge`` is :class:`Judge`, which builds a :class:`PairwiseJudgeRM` in mode
``pairwise`` and a :class:`~rmbench.models.judge.adapter.JudgeRM` in the others): a
:class:`~rmbench.models.step_model.StepScoringModel` (step-level tasks score each step with it:
:func:`rmbench.scoring.steps.score_steps`) and, through :class:`~rmbench.models.steps.StepRanker`,
a response-level RM (its response split into steps, their scores aggregated:
``--model-arg aggregate=min|last|prod|mean``). Its calls go through the judge's call cache like
any judge's (:mod:`rmbench.scoring.calls`); its step scores are P(step correct) (``probability``
scale):

* ``steps`` (``prompt=rlhflow``, ProcessBench's ``run_eval_prm_rlhflow.py``): one call per step,
  the conversation up to that step (:func:`~rmbench.models.judge.processbench.step_messages`:
  the earlier steps each answered ``"+"``), ``max_tokens=1``. A solution of n steps costs n
  calls, of 1, 2, ..., n user turns (the official script stops at the first ``-``, so costs
  k + 1 calls for a first error at step k; rmbench scores every step, which the aggregates and the
  step-level pairs need; a server with prefix caching reads each conversation's prefix once).
  ``score=probability`` (the default) asks for ``top_logprobs`` (20) and reads P(+) normalised
  over ``+`` and ``-`` from the generated token's alternatives
  (:func:`~rmbench.models.judge.processbench.plus_probability`); where the reply carries no
  logprobs, or neither token is among them, the reply's text gives 1.0 (``+``) or 0.0 (``-``).
  ``score=verdict`` reads the text only, and sends exactly the official script's request. Each
  judgment row says which was read (``read``: ``logprobs`` or ``text``).
* ``critic`` (``prompt=processbench``, ProcessBench's ``run_eval.py``): one call per solution
  (``temperature=0, max_tokens=8192, seed=42``); the reply's last ``\\boxed{k}`` names the earliest
  wrong step. Step scores: 1.0 before step k, 0.0 from k on, all 1.0 for k = -1 (so the first
  step below 0.5 is the critic's answer). An answer naming no step of the solution (no box, no
  integer, or an index out of range, which ProcessBench counts wrong) is every step NaN: no
  verdict (``step_abstains``; a step-level task counts it as no prediction, a response-level one
  leaves the response out as it does an unparsed judge answer).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from rmbench.models.base import PairVerdictModel, ScoreRequest
from rmbench.models.judge.adapter import JudgeRM
from rmbench.models.judge.client import ChatReply, ChatRequest
from rmbench.models.judge.judge_protocol import STEP_MODES, infer_mode
from rmbench.models.judge.protocol import answer_text
from rmbench.models.step_model import StepRequest
from rmbench.models.steps import StepRanker, check_aggregate, problem_text, split_steps


def critic_step_scores(index: int | None, n_steps: int) -> list[float]:
    """A critic's answer (the earliest wrong step, -1 for none) as step scores: 1.0 before the
    named step, 0.0 from it on, all 1.0 for -1; every score NaN (no verdict) when the answer
    names no step of the solution (None, below -1, or ``n_steps`` or more)."""
    if index == -1:
        return [1.0] * n_steps
    if index is None or not 0 <= index < n_steps:
        return [math.nan] * n_steps
    return [1.0] * index + [0.0] * (n_steps - index)


class StepJudgeRM(StepRanker, JudgeRM):
    """A judge in mode ``steps`` or ``critic`` (module docstring); kind ``judge`` builds it (:class:`Judge`)."""

    step_abstains = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        bound = inspect.signature(JudgeRM.__init__).bind(self, *args, **kwargs)
        bound.apply_defaults()
        self.aggregate = check_aggregate(bound.arguments["aggregate"] or "min")
        self._step_rows: dict[str, list[dict[str, Any]]] = {}

    def identity(self) -> dict[str, Any]:
        """The judge's identity and the aggregate (``args``: left out of :meth:`step_identity`)."""
        return {**super().identity(), "args": {"aggregate": self.aggregate}}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "aggregate": self.aggregate}

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        """Each response split into steps, scored and aggregated (:class:`~rmbench.models.steps.StepRanker`)."""
        return np.asarray(StepRanker.score(self, batch), dtype=np.float64)

    def postprocess(self, groups, raw: np.ndarray) -> np.ndarray:
        """The aggregated step scores are the rewards (NaN: a critic's answer that named no step)."""
        return np.asarray(raw, dtype=np.float64)

    def step_lengths(self, batch: Sequence[StepRequest]) -> list[int]:
        # a batch's calls run concurrently: its size counts, not its tokens (as JudgeRM.lengths)
        return [0 if self.batch is not None else 1] * len(batch)

    # --- the calls -----------------------------------------------------------------------------
    def step_calls(self, req: StepRequest) -> list[ChatRequest]:
        """``steps``: one request per step, the conversation up to it; ``critic``: one request."""
        spec = self.protocol.spec
        if self.protocol.mode == "steps":
            return [self.protocol.request(spec.messages(req.problem, req.steps[:i + 1], None))
                    for i in range(len(req.steps))]
        return [self.protocol.request(spec.messages(req.problem, req.steps, None))]

    def score_steps(self, batch: Sequence[StepRequest]) -> list[list[float]]:
        heads = [self.step_calls(r) for r in batch]
        chains, replies, called, requests = self._chains(heads)
        out = []
        for req, ks in zip(batch, chains):
            keys = [chain[0] for chain in ks]
            got = [replies[k] for k in keys]
            if self.protocol.mode == "steps":
                read = [self._step_value(r) for r in got]
                scores = [v for v, _, _ in read]
                facts: list[dict[str, Any]] = [{"step": i, "parsed": p, "read": how, "score": v}
                                               for i, (v, p, how) in enumerate(read)]
            else:
                index = self.protocol.spec.parse(answer_text(got[0], self.protocol.fidelity))
                scores = critic_step_scores(index, len(req.steps))
                named = not (scores and math.isnan(scores[0]))  # an index out of range names no step
                facts = [{"parsed": index if named else None, "answer": index}]
                self.counters["unparsed"] += not named
            self._step_rows[req.key()] = [self._step_row(k, requests[k], replies[k], k not in called, f)
                                          for k, f in zip(keys, facts)]
            out.append(scores)
        return out

    def _step_value(self, reply: ChatReply) -> tuple[float, float, str]:
        """A step's score, the text's verdict (1.0 ``+``, 0.0 ``-``) and what gave the score:
        ``logprobs`` (score=probability, when the reply's alternatives hold ``+`` or ``-``) or ``text``."""
        verdict = float(self.protocol.spec.parse(reply.text))
        probability = self.protocol.spec.probability
        if self.protocol.score == "probability" and probability is not None and reply.top_logprobs is not None:
            p = probability(reply.top_logprobs)
            if p is not None:
                return p, verdict, "logprobs"
        return verdict, verdict, "text"

    def _step_row(self, key: str, call: ChatRequest, reply: ChatReply, cached: bool,
                  facts: dict[str, Any]) -> dict[str, Any]:
        """One judgments.jsonl row (as :meth:`JudgeRM._judgment`'s), with the step and what was read."""
        return {**self._call_fields(key, call), **facts, **self._reply_fields(reply, cached)}

    def judgments(self, requests: Sequence[ScoreRequest]) -> list[dict[str, Any]]:
        """The calls behind ``requests``' scores: a step-level task's solution (its requests are its
        steps) lists its calls once, under the step each asked about (a critic's under step 0); a
        response-level task's response, under the response."""
        rows: list[dict[str, Any]] = []
        for r in requests:
            steps = (*r.context[:r.index], r.response, *r.context[r.index:])
            solution = StepRequest(r.prompt if isinstance(r.prompt, str) else "", tuple(steps)).key()
            if solution in self._step_rows:
                rows += [{"group_id": r.group_id, "response_index": row.get("step", 0), **row}
                         for row in self._step_rows[solution]] if r.index == 0 else []
                continue
            response = StepRequest(problem_text(r.prompt), split_steps(r.response)).key()
            rows += [{"group_id": r.group_id, "response_index": r.index, **row}
                     for row in self._step_rows.get(response, [])]
        return rows


class PairwiseJudgeRM(JudgeRM, PairVerdictModel):
    """A judge in mode ``pairwise``: its reward gap on a pair is its verdict (+1, 0 or -1), so it
    declares :class:`~rmbench.models.base.PairVerdictModel`; kind ``judge`` builds it (:class:`Judge`)."""


class Judge(JudgeRM):
    """The ``judge`` model kind: a :class:`StepJudgeRM` in mode ``steps`` or ``critic``, a
    :class:`PairwiseJudgeRM` in mode ``pairwise``, else a
    :class:`~rmbench.models.judge.adapter.JudgeRM` (the arguments are JudgeRM's)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            arguments = inspect.signature(JudgeRM.__init__).bind(None, *args, **kwargs).arguments
            mode = infer_mode(arguments.get("mode"), arguments.get("prompt"))
        except TypeError:  # JudgeRM itself raises the clear error
            mode = None
        built = StepJudgeRM if mode in STEP_MODES else PairwiseJudgeRM if mode == "pairwise" else JudgeRM
        return built(*args, **kwargs)
