"""Batch execution for LLM judges: the replies to many :class:`ChatRequest` through a provider's
*batch* API instead of one synchronous call each (OpenAI and Anthropic charge half for a batch;
vLLM's offline runner is the fastest way to run an open judge locally).

One interface, :class:`BatchExecutor`, made by :func:`make_batch_executor`::

    executor = make_batch_executor("openai", base_url=..., model=..., api_key=..., state_dir=...)
    outcome = executor.complete(requests, keys, on_reply)   # on_reply(i, reply), in this thread
    # answered=lambda keys: {...}: what the call cache holds by now (another run's batch)

* ``keys[i]`` is the call-cache key of ``requests[i]`` (64 hex characters): it is the batch
  line's ``custom_id``, so results are matched to requests by the key, never by position, and
  ``on_reply(i, reply)`` hands each reply over as the results are read, so that the caller
  stores it at once (a later failure or Ctrl-C loses nothing already read).
* The lines carry the body the synchronous :class:`~rmbench.models.judge.client.ChatClient` would
  POST (``request.body(model)``), so the answers, their parses and scores are the same either way.
  Anthropic's API differs: its params are the same conversation and sampling (system apart).
* **State and re-attaching** (OpenAI, Anthropic): a small JSON state file in ``state_dir``
  (written atomically, named from a sha256 of the kind, the model, the server's host and the
  sorted keys) is written *before anything is paid for*: the request set's hash first, then the
  upload's ``input_file_id`` as soon as it exists, a ``creating`` mark before the batch is
  created, and the batch id as soon as it is known; a line on stderr says ``judge MODEL: submitted
  batch ID (N requests); state in PATH``. A later ``complete`` with the same keys (after a crash,
  SIGKILL, Ctrl-C or ``wait_limit``) finds the file and polls that batch instead of paying for a
  second one. A file with no batch id yet (the creation's answer was lost, the process was
  killed while it created) makes the next try **look the batch up on the server first**
  (OpenAI: ``GET /batches``, the batch made from the ``input_file_id``; Anthropic: its listing of
  message batches, a batch created since the first try with as many requests, confirmed by its
  results' custom ids once it has ended) and re-attach; only when none exists is one created. A
  POST whose answer was lost is resolved the same way, never by a blind retry. A server that no
  longer knows the batch gets a new one. The file is never deleted on a failed creation; it goes
  once every result has been handed to ``on_reply``. It never holds the API key. A state file
  that cannot be written before the creation (a full disk) stops the run in one line, before
  anything is paid for.
* **One run per request set**: ``complete`` holds an ``flock`` on ``batch-….lock`` beside the
  state file (:func:`rmbench.files.waiting_lock`) from before it reads the state until its last
  synchronous retry. A second run of the same requests waits for it (one line naming its pid),
  then asks ``answered(keys)`` (the caller's call cache) what the first run answered and
  submits only the rest: never a second batch of the same requests.
* **Polling**: every ``poll_interval`` seconds, one progress line on stderr (state, completed/
  total, failed, elapsed, ETA linear from the completed count). ``wait_limit``: stop waiting
  after so many seconds in all with a one-line error (the batch runs on; call again to
  re-attach). A call that fails in passing (a dropped connection, 408, 409, 425, 429, 5xx) is
  tried again after ``backoff_first`` seconds (at most ``poll_interval``), doubling up to
  ``backoff_cap``, never sooner than the server's ``Retry-After``, one line on stderr per wait,
  until the failures have lasted ``outage_limit`` seconds (30 minutes) or ``wait_limit`` is
  reached. ``timeout`` bounds each call whole (connect to the answer's last byte, the result
  files' downloads included, plus 1 s per 100 kB received), not only each read.
* **Result lines** are read one by one (:func:`read_lines`): a line that is not JSON, holds a
  number that is not finite (``NaN``, ``Infinity``, ``1e999``), absurd usage counts or anything
  else unreadable is one failed line of its request, after every good line has been handed on.
* **What the batch left unanswered** (failed or expired lines, requests missing from the output
  of a batch that ended ``expired``, or every request of a batch that ``failed`` or was
  ``cancelled`` as a whole): retried synchronously through a ``ChatClient`` on the same server,
  model and key (OpenAI only; ``retry_sync=False`` turns it off); otherwise a one-line
  :class:`JudgeServerError` naming how many and the first error, raised only after every reply
  that came back has gone to ``on_reply``.
* vLLM runs ``python -m vllm.entrypoints.openai.run_batch -i IN -o OUT --model MODEL`` in a
  subprocess of its own session (its output passed through as progress; the process group ends
  with an error or Ctrl-C here); ``served_name`` is the model name the request bodies carry (the
  synchronous path's), passed as ``--served-model-name``.

The batch replies' ``latency_s`` is 0 (a batch has no per-request latency) and ``retries`` 0;
:class:`BatchOutcome` has the counts, the tokens (those of the synchronous retries also apart)
and the wall seconds. ``price_factor`` is the provider's batch price relative to its synchronous
price (0.5 for OpenAI and Anthropic): it applies to the lines the batch answered, not to the
synchronous retries.

The base classes and the line reader are in :mod:`rmbench.models.judge.batch_core`, the loop of a
batch run by a server in :mod:`rmbench.models.judge.batch_remote`, the providers in
:mod:`rmbench.models.judge.batch_providers`; this module is the interface to import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rmbench.errors import ConfigError, did_you_mean
from rmbench.models.judge.batch_core import BatchExecutor, BatchOutcome, BatchStatus, LineResult, OnReply, read_lines
from rmbench.models.judge.batch_providers import AnthropicBatch, OpenAIBatch, VLLMBatch, anthropic_params, openai_input
from rmbench.models.judge.batch_remote import RemoteBatch

KINDS = ("openai", "anthropic", "vllm")
DEFAULT_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1"}


def make_batch_executor(kind: str, *, base_url: str | None = None, model: str, api_key: str | None = None,
                        state_dir: Path | str, poll_interval: float = 30.0, timeout: float = 120.0,
                        progress: bool = True, retry_sync: bool = True, wait_limit: float | None = None,
                        outage_limit: float = 1800.0, backoff_first: float = 1.0, backoff_cap: float = 60.0,
                        description: str | None = None, served_name: str | None = None, python: str | None = None,
                        extra_args: Sequence[str] = (), max_reply_bytes: int | None = None) -> BatchExecutor:
    """The executor of ``kind`` (``openai``, ``anthropic`` or ``vllm``).

    ``base_url``: the server's ``/v1`` address (default: the provider's own; unused by vllm);
    ``model``: the model's name on the server, or for vllm what it loads (a folder or hub id);
    ``api_key``: sent to ``base_url``'s host only, never printed or stored; ``state_dir``: where
    the state files go (vllm: its temporary folder); ``poll_interval``/``timeout``/``wait_limit``:
    seconds between polls, per HTTP call, and to wait in all (None: until the batch ends);
    ``outage_limit``/``backoff_first``/``backoff_cap``: how long a management call that fails in
    passing (429, 5xx, a dropped connection) is tried again, the first wait (at most
    ``poll_interval``) and the longest (the server's Retry-After is honoured above it);
    ``retry_sync``: retry unanswered requests synchronously (openai), their replies limited to
    ``max_reply_bytes`` (None: the client's default); ``description``: how
    messages name the judge (``judge MODEL``); vllm only: ``served_name``, ``python`` (default
    this interpreter) and ``extra_args`` for run_batch (``--dtype float32``...)."""
    if kind not in KINDS:
        raise ConfigError(f"unknown batch kind {kind!r} (expected {', '.join(KINDS)}){did_you_mean(kind, KINDS)}")
    if kind == "vllm":
        return VLLMBatch(model, state_dir=state_dir, served_name=served_name, python=python, extra_args=extra_args,
                         progress=progress, description=description)
    if served_name is not None or python is not None or extra_args:
        raise ConfigError(f"served_name, python and extra_args are for the vllm batch, not {kind}")
    cls = OpenAIBatch if kind == "openai" else AnthropicBatch
    return cls(model, base_url=base_url or DEFAULT_BASE_URLS[kind], state_dir=state_dir, api_key=api_key,
               poll_interval=poll_interval, timeout=timeout, wait_limit=wait_limit, outage_limit=outage_limit,
               backoff_first=backoff_first, backoff_cap=backoff_cap, progress=progress, retry_sync=retry_sync,
               description=description, max_reply_bytes=max_reply_bytes)


__all__ = ["AnthropicBatch", "BatchExecutor", "BatchOutcome", "BatchStatus", "KINDS", "LineResult", "OnReply",
           "OpenAIBatch", "RemoteBatch", "VLLMBatch", "anthropic_params", "make_batch_executor", "openai_input",
           "read_lines"]
