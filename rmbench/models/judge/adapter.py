"""``judge:MODEL``: an LLM behind an OpenAI-compatible server as a reward model.

``--model judge:MODEL`` with ``--model-arg`` keys (these names are kept for scripts):

* ``base_url`` (default ``$OPENAI_BASE_URL``): the server's ``/v1`` address;
* ``api_key_env`` (default ``OPENAI_API_KEY``): the *name* of the environment variable that
  holds the key; a server without auth needs none. The key itself is read when the first call
  is made and is never written anywhere (identity, results, caches, judgments, logs, errors);
* ``mode``: ``rating``, ``pairwise`` or ``fourway``; ``steps`` or ``critic``: a process reward
  model (:mod:`rmbench.models.judge.step_judge`, with ``aggregate``); left out, the one mode whose
  registry names ``prompt`` (``prompt=vl_rewardbench`` is pairwise), else rating; ``prompt``: a
  registered protocol of the mode
  (:mod:`rmbench.models.judge.judge_protocol`) or a template file whose front matter declares its
  grade (:mod:`rmbench.models.judge.template`); ``fidelity`` (``official``, the default for a
  named protocol: requests, parses and unparsed answers as the official client; ``strict``);
  ``max_tokens`` (the official client's), ``temperature`` (the official client's, else 0), ``n`` (ratings
  averaged; a one-game pairwise protocol's K samples per item, by default its own: 10 for vl_rewardbench),
  ``seed`` (none: not sent), ``score`` (``rating`` or ``expected``; steps: ``probability`` or
  ``verdict``), ``unparsed``
  (``official`` or ``skip``; by default ``official`` under fidelity official);
* ``concurrency`` (16), ``timeout`` (seconds for a whole attempt, connect to the reply's last
  byte, 120), ``max_reply_bytes`` (1,000,000: a larger reply is a failed call): how it runs, not
  its identity;
* ``batch`` (off): ``openai`` (the Files + Batches API of ``base_url``), ``anthropic`` (Message
  Batches; ``base_url`` defaults to Anthropic's, ``api_key_env`` to ``ANTHROPIC_API_KEY``) or
  ``vllm`` (vLLM's offline ``run_batch`` on ``batch_model``, default the model's name, with
  ``batch_args``); ``batch_poll`` (seconds between polls, 30), ``batch_wait`` (seconds to wait
  before stopping; the batch runs on and a re-run re-attaches): how it runs, not its identity
  (:mod:`rmbench.models.judge.batch`). The same requests, parses and scores as without;
* ``revision``: pins a version where the served name does not; ``price_in``/``price_out``: US$
  per million prompt/completion tokens, for the cost in results.json.

Identity: the served model's name, the id the server reports for it (``/v1/models``), the
revision, the prompt text and the sampling arguments; not ``base_url``, so the same model
served elsewhere shares cached calls.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.judge_replies import JudgeReplies, count_replies
from rmbench.errors import ConfigError, did_you_mean
from rmbench.models.base import CallingModel, GroupContextModel, RewardModel, ScoreRequest
from rmbench.models.judge.batch import DEFAULT_BASE_URLS, BatchExecutor, BatchOutcome, make_batch_executor
from rmbench.models.judge.batch import KINDS as BATCH_KINDS
from rmbench.models.judge.client import ChatClient, ChatReply, ChatRequest, ClientStats
from rmbench.models.judge.judge_protocol import STEP_MODES, infer_mode
from rmbench.models.judge.protocol import Protocol
from rmbench.models.judge.wire import MAX_REPLY_BYTES
from rmbench.models.step_model import StepScoringModel
from rmbench.paths import user_cache_dir
from rmbench.registry import PluginSource

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
BATCH_ROWS = 50_000
"""Requests per provider batch in batch mode (OpenAI's cap; Anthropic's is 100,000): the engine
hands the judge up to this many at once, so a task goes out as one batch, not one per 1,024."""


class MemoryCallStore:
    """Calls kept for this process only (``--no-cache``, or a judge used from code)."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any]] = {}

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {k: self.values[k] for k in keys if k in self.values}

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.values.setdefault(key, value)


def _server_address(base_url: str | None, batch: str | None) -> str | None:
    """The server's ``/v1`` address: given, else ``$OPENAI_BASE_URL`` (Anthropic's own address for
    ``batch=anthropic``); none is needed for ``batch=vllm`` (a local subprocess)."""
    if batch == "anthropic":
        base_url = base_url or DEFAULT_BASE_URLS["anthropic"]
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url and batch != "vllm":
        raise ConfigError("judge: no server address: give --model-arg base_url=http://HOST:PORT/v1 or set "
                          "OPENAI_BASE_URL")
    if base_url and not str(base_url).startswith(("http://", "https://")):
        raise ConfigError(f"judge base_url must start with http:// or https://, got {base_url!r}")
    return base_url


class JudgeRM(RewardModel, GroupContextModel, CallingModel):
    kind = "judge"
    target_arg = "model"
    description = ("LLM judge behind an OpenAI-compatible server (judge:MODEL; modes rating, pairwise, fourway; "
                   "steps, critic: a PRM)")
    reads_subset = True
    reads_images = True  # a prompt's images go with the question as image_url parts (ChatRequest.images)
    may_abstain = True
    preferred_batch = 1024

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = DEFAULT_KEY_ENV,
                 mode: str | None = None, prompt: str | None = None, max_tokens: int | None = None,
                 temperature: float | None = None, n: int | None = None, seed: int | None = None,
                 score: str | None = None,
                 unparsed: str | None = None, fidelity: str | None = None, concurrency: int = 16,
                 timeout: float = 120.0, max_reply_bytes: int = MAX_REPLY_BYTES,
                 revision: str | None = None, price_in: float | None = None, price_out: float | None = None,
                 batch: str | None = None, batch_poll: float = 30.0, batch_wait: float | None = None,
                 batch_model: str | None = None, batch_args: str = "", aggregate: str | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("judge: give the served model's name, judge:MODEL")
        mode = infer_mode(mode, prompt)
        if aggregate is not None and mode not in STEP_MODES:
            raise ConfigError(f"judge aggregate (how step scores make a reward) is for mode steps or critic, not "
                              f"{mode!r}")
        if mode in STEP_MODES and not isinstance(self, StepScoringModel):
            raise ConfigError(f"judge mode {mode} scores steps: build it as kind 'judge' (judge:MODEL), which gives "
                              f"a StepJudgeRM")
        if batch is not None and batch not in BATCH_KINDS:
            raise ConfigError(f"judge batch must be one of {', '.join(BATCH_KINDS)} (or left out: no batch), got "
                              f"{batch!r}{did_you_mean(str(batch), BATCH_KINDS)}")
        if batch == "anthropic" and api_key_env == DEFAULT_KEY_ENV:
            api_key_env = "ANTHROPIC_API_KEY"
        base_url = _server_address(base_url, batch)
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ConfigError(f"judge concurrency must be a positive integer, got {concurrency!r}")
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1:
            raise ConfigError(f"judge max_reply_bytes must be a positive integer, got {max_reply_bytes!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
            raise ConfigError(f"judge timeout must be a positive number of seconds, got {timeout!r}")
        self.max_reply_bytes = max_reply_bytes
        self.model_name, self.base_url, self.api_key_env = model, str(base_url or ""), str(api_key_env)
        self.batch, self.batch_model, self.batch_args = batch, batch_model, str(batch_args or "")
        self.batch_poll, self.batch_wait = float(batch_poll), None if batch_wait is None else float(batch_wait)
        self._executor: BatchExecutor | None = None
        self._batches: list[BatchOutcome] = []
        if batch is not None:
            self.preferred_batch = BATCH_ROWS
        self.protocol = Protocol.make(mode, prompt, max_tokens, temperature, n, seed, score, unparsed, fidelity)
        self.concurrency, self.timeout, self.revision = concurrency, float(timeout), revision
        self.prices = (price_in, price_out)
        self._client: ChatClient | None = None
        self._closed_stats: ClientStats | None = None
        self._served: dict[str, Any] | None = None
        self._call_fingerprint: str | None = None
        self._store: Any = MemoryCallStore()
        self._judgments: dict[str, list[dict[str, Any]]] = {}
        self.counters = {"calls": 0, "cached_calls": 0, "unparsed": 0}

    # --- the server -------------------------------------------------------------------------
    def _key(self) -> str | None:
        """The API key, read from the environment now (never kept beyond the client)."""
        key = os.environ.get(self.api_key_env) or None if self.api_key_env else None
        if key is None and self.api_key_env and self.api_key_env != DEFAULT_KEY_ENV:
            raise ConfigError(f"judge: api_key_env names {self.api_key_env!r}, which is not set in the "
                              f"environment (export it, or leave api_key_env out for a server without auth)")
        return key

    @property
    def client(self) -> ChatClient:
        if self._client is None:
            self._client = ChatClient(self.base_url, self.model_name, self._key(), concurrency=self.concurrency,
                                      timeout=self.timeout, description=f"judge {self.model_name}",
                                      max_reply_bytes=self.max_reply_bytes)
        return self._client

    @property
    def executor(self) -> BatchExecutor:
        """The batch executor (``batch=...``); its state files live beside the call cache."""
        if self._executor is None:
            assert self.batch is not None
            path = getattr(self._store, "path", None)
            state_dir = Path(path).parent / "judge-batches" if path is not None else user_cache_dir() / "judge-batches"
            vllm = self.batch == "vllm"
            self._executor = make_batch_executor(
                self.batch, base_url=self.base_url or None, model=(self.batch_model or self.model_name) if vllm
                else self.model_name, api_key=None if vllm else self._key(), state_dir=state_dir,
                poll_interval=self.batch_poll, timeout=self.timeout, wait_limit=self.batch_wait,
                description=f"judge {self.model_name}", served_name=self.model_name if vllm else None,
                extra_args=shlex.split(self.batch_args) if vllm else (),
                max_reply_bytes=None if vllm else self.max_reply_bytes)
        return self._executor

    def served(self) -> dict[str, Any]:
        """What the server reports for this model (``/v1/models``): its id, and the weights it
        serves (``root``) where the server says (vLLM does). A server that does not list the
        name (some load a model on its first request) reports the name alone."""
        if self._served is None and self.batch in ("anthropic", "vllm"):  # no OpenAI-style /models to ask
            root = (self.batch_model or self.model_name) if self.batch == "vllm" else None
            self._served = {"id": self.model_name, **({"root": root} if root else {})}
        if self._served is None:
            entries = self.client.model_entries()  # one line if the server cannot be reached
            entry = next((e for e in entries if str(e.get("id")) == self.model_name), {})
            root = entry.get("root")
            self._served = {"id": self.model_name, **({"root": str(root)} if root else {})}
        return self._served

    def identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model_name, "served": self.served(), "revision": self.revision,
                "protocol": self.protocol.identity()}

    def call_fingerprint(self) -> str:
        if self._call_fingerprint is None:
            plugin = self.protocol.plugin  # a plugin protocol's code makes the requests and reads the replies
            self._call_fingerprint = sha256_hex(canonical_json({"model": self.model_name, "served": self.served(),
                                                                "revision": self.revision,
                                                                **({"protocol_plugin": plugin.to_json()}
                                                                   if plugin is not None else {})}))
        return self._call_fingerprint

    def use_call_store(self, store: Any) -> None:
        self._store = store

    def plugins(self) -> tuple[PluginSource, ...]:
        return tuple(p for p in (self.plugin, self.protocol.plugin) if p is not None)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.model_name, "mode": self.protocol.mode, "prompt": self.protocol.prompt,
                "fidelity": self.protocol.fidelity, "official_client": self.protocol.official_client,
                "concurrency": self.concurrency, "timeout": self.timeout,
                **({"batch": self.batch} if self.batch is not None else {})}

    # --- scoring ----------------------------------------------------------------------------
    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        # a batch's calls run concurrently: its size, not its tokens, is what counts; in batch mode
        # nothing but BATCH_ROWS limits it (a task goes out as one provider batch)
        return [0 if self.batch is not None else 1] * len(batch)

    def _call_key(self, request: ChatRequest) -> str:
        body = request.body(self.model_name, keyed=True)  # images by content hash: the same as the bytes sent
        return sha256_hex(canonical_json({"judge": self.call_fingerprint(), "request": body}))

    def _answers(self, wanted: dict[str, ChatRequest]) -> tuple[dict[str, ChatReply], set[str]]:
        """The replies to ``wanted`` (key -> request) and to the follow-ups the protocol asks after
        them: from the call store, the rest from the server, each stored as it arrives. A fresh
        call's follow-up runs in the call's own slot (no second round). Also the keys called now."""
        known = self._store.get_many(list(wanted))
        todo = [k for k in wanted if k not in known]
        fresh: dict[str, dict[str, Any]] = {}

        def keep(key: str, reply: ChatReply) -> None:
            value = reply.to_json()
            self._store.put(key, value)
            fresh[key] = value

        if todo and self.batch is not None:  # follow-ups go in the next batch (_chains asks for them)
            self._batches.append(self.executor.complete([wanted[k] for k in todo], todo,
                                                        lambda i, reply: keep(todo[i], reply),
                                                        answered=lambda ks: set(self._store.get_many(list(ks)))))
            # what another run's batch of the same requests answered while this one waited for it
            known.update(self._store.get_many([k for k in todo if k not in fresh]))
            todo = [k for k in todo if k not in known]
        elif todo:
            self.client.complete([wanted[k] for k in todo], on_reply=lambda i, reply: keep(todo[i], reply),
                                 follow=lambda i, request, reply: self.protocol.continuation(request, reply),
                                 on_follow=lambda i, request, reply: keep(self._call_key(request), reply))
        self.counters["calls"] += len(fresh)
        self.counters["cached_calls"] += len(wanted) - len(todo)
        return {k: ChatReply.from_json(v) for k, v in {**known, **fresh}.items()}, set(fresh)

    def _chains(self, heads: list[list[ChatRequest]]
                ) -> tuple[list[list[list[str]]], dict[str, ChatReply], set[str], dict[str, ChatRequest]]:
        """Each call's chain of keys (the call, then its follow-ups), the replies to all of them,
        the keys called now, and every key's request. Follow-ups of cached replies that the store
        lacks are asked in another round."""
        chains = [[[self._call_key(c)] for c in calls] for calls in heads]
        requests = {chain[0]: c for calls, ks in zip(heads, chains) for chain, c in zip(ks, calls)}
        wanted = dict(requests)
        replies: dict[str, ChatReply] = {}
        called: set[str] = set()
        while wanted:
            got, now = self._answers(wanted)
            replies.update(got)
            called |= now
            wanted = {}
            for chain in (chain for ks in chains for chain in ks):
                while chain[-1] in replies and (more := self.protocol.continuation(requests[chain[-1]],
                                                                                   replies[chain[-1]])) is not None:
                    chain.append(self._call_key(more))
                    requests[chain[-1]] = more
                if chain[-1] not in replies:
                    wanted[chain[-1]] = requests[chain[-1]]
        return chains, replies, called, requests

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        """Each request's calls (a follow-up where the protocol asks again), then its value:
        ``[value, 1]``, or ``[0, 0]`` for an answer that did not parse."""
        plans = [self.protocol.calls(r) for r in batch]
        chains, replies, called, requests = self._chains([calls for calls, _ in plans])
        out = np.zeros((len(batch), 2))
        for row, (req, (_, facts), ks) in enumerate(zip(batch, plans, chains)):
            value, parsed = self.protocol.value(req, [[replies[k] for k in chain] for chain in ks])
            out[row] = (value, 1.0) if value is not None else (0.0, 0.0)
            self.counters["unparsed"] += value is None
            self._judgments[req.key()] = [self._judgment(req, k, requests[k], replies[k], p, i, attempt,
                                                         k not in called, facts)
                                          for i, (chain, p) in enumerate(zip(ks, parsed))
                                          for attempt, k in enumerate(chain, 1)]
        return out

    def postprocess(self, groups, raw: np.ndarray) -> np.ndarray:
        """[value, parsed] per response -> the value, or NaN where the answer did not parse."""
        raw = np.asarray(raw, dtype=np.float64).reshape(len(raw), -1)
        return np.where(raw[:, 1] > 0, raw[:, 0], np.nan)

    def _judgment(self, req: ScoreRequest, key: str, call: ChatRequest, reply: ChatReply, parsed: Any, i: int,
                  attempt: int, cached: bool, facts: dict[str, Any]) -> dict[str, Any]:
        """One judgments.jsonl row: ``prompt_sha256`` hashes the messages this call sent (rendered),
        ``protocol_sha256`` the protocol's text (a template's, or a named protocol's prompts)."""
        p = self.protocol
        row = self._call_fields(key, call)
        row.update(p.judgment_fields(req, i))
        if attempt > 1:
            row["attempt"] = attempt  # a follow-up asking for the verdict (arena_hard)
        row.update(facts)
        row.update({"parsed": parsed, **self._reply_fields(reply, cached)})
        return row

    def _call_fields(self, key: str, call: ChatRequest) -> dict[str, Any]:
        """A judgments.jsonl row's head: the mode, the call's key, the hashes of its messages and
        of the protocol's text."""
        return {"mode": self.protocol.mode, "call": key[:16],
                "prompt_sha256": sha256_hex(canonical_json([list(m) for m in call.messages] if not call.images else
                                                           {"messages": [list(m) for m in call.messages],
                                                            "images": [[i.sha256 for i in m] for m in call.images]})),
                "protocol_sha256": self.protocol.text_sha256}

    @staticmethod
    def _reply_fields(reply: ChatReply, cached: bool) -> dict[str, Any]:
        """A judgments.jsonl row's tail: the reply's text, reasoning, tokens and timing."""
        return {"text": reply.text, "reasoning": reply.reasoning, "finish_reason": reply.finish_reason,
                "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                "latency_s": round(reply.latency_s, 4), "retries": reply.retries, "cached": cached}

    def judgments(self, requests: Sequence[ScoreRequest]) -> list[dict[str, Any]]:
        return [{"group_id": r.group_id, "response_index": r.index, **j}
                for r in requests for j in self._judgments.get(r.key(), [])]

    def reply_counts(self, rows: Sequence[Mapping[str, Any]], left_out: int) -> JudgeReplies:
        p = self.protocol
        fidelity = "template" if p.template is not None else p.fidelity
        return count_replies(rows, left_out, fidelity, p.reading(), p.no_verdict_scored())

    def ran_with(self) -> dict[str, Any]:
        stats: ClientStats | None = self._client.stats if self._client is not None else self._closed_stats
        out: dict[str, Any] = {"calls": self.counters["calls"], "cached_calls": self.counters["cached_calls"],
                               "unparsed": self.counters["unparsed"]}
        tokens = [0, 0]
        if stats is not None:
            out.update(retries=stats.retries, failures=stats.failures, timeouts=stats.timeouts,
                       malformed=stats.malformed, prompt_tokens=stats.prompt_tokens,
                       completion_tokens=stats.completion_tokens, seconds=round(stats.seconds, 3))
            if stats.seconds > 0 and stats.calls:
                out["calls_per_s"] = round(stats.calls / stats.seconds, 3)
            tokens = [stats.prompt_tokens, stats.completion_tokens]
        batch_tokens = [sum(b.prompt_tokens for b in self._batches), sum(b.completion_tokens for b in self._batches)]
        if self._batches:
            out["batches"] = [b.to_json() for b in self._batches]
            out["prompt_tokens"], out["completion_tokens"] = (t + b for t, b in zip(tokens, batch_tokens))
        price_in, price_out = self.prices
        if (price_in is not None or price_out is not None) and (stats is not None or self._batches):
            factor = self._executor.price_factor if self._executor is not None else 1.0
            in_batch = [sum(b.batch_tokens[j] for b in self._batches) for j in (0, 1)]  # lines the batch answered

            def price(prompt: int, completion: int) -> float:
                return (prompt * float(price_in or 0) + completion * float(price_out or 0)) / 1e6

            sync = price(tokens[0] + batch_tokens[0] - in_batch[0], tokens[1] + batch_tokens[1] - in_batch[1])
            batched = factor * price(*in_batch)  # the provider's batch price, for the lines the batch answered
            out["cost_usd"] = round(sync + batched, 6)
            if self._batches:  # both parts: a batch's synchronous retries are billed at the synchronous price
                out["cost_usd_batch"], out["cost_usd_sync"] = round(batched, 6), round(sync, 6)
        return {"judge_calls": out}

    def close(self) -> None:
        if self._client is not None:
            self._closed_stats = self._client.stats
        self._client = None
