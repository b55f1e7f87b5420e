"""Judge-client throughput: rmbench's ChatClient beside a RewardBench-style thread pool, on one
loopback OpenAI-compatible server that answers every request after a fixed latency (so the
clients are measured, not a model).

Contenders, each sending the same N chat requests to the same server (tests/support/judge_server.py):

* ``RewardBench pool``: what RewardBench's generative scripts do: a
  ``concurrent.futures.ThreadPoolExecutor(max_workers=10)``, one blocking request per task, and,
  as ``chat_completion_openai`` in rewardbench/generative.py does, a new ``openai.OpenAI``
  client in every call (a sync ``httpx.Client`` when the ``openai`` SDK is not installed);
* ``pool, shared client``: the same pool with one client for all calls (the best a pool of 10
  does);
* ``ChatClient, concurrency 10``: rmbench's asynchronous client at the pool's concurrency;
* ``ChatClient, concurrency 16``: at its default.

The server runs in its own process (so its threads do not share the clients' GIL). The ceiling
of a contender is concurrency / latency requests per second. The contenders are interleaved
within each repetition; medians over repetitions, ratios from the same run.

    python -m bench.judge --n 400 --latency 0.05 --reps 3

``--workload arena_hard`` (bench/judge_followups.py): JudgeBench's arena_hard games, where a
reply without a verdict label is asked again, through JudgeBench's own client (a checkout named
by ``--judgebench DIR`` or ``$RMBENCH_JUDGEBENCH_DIR``) and rmbench's judge at equal concurrency:

    python -m bench.judge --workload arena_hard --n 90 --latency 0.05 --reps 3 --concurrency 10
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from bench.loopback import KEY, TESTS
from bench.results import RESULTS, machine_line, write_section
from rmbench import __version__
from rmbench.models.judge.client import ChatClient, ChatRequest

SERVE = ("import sys\nsys.path.insert(0, sys.argv[1])\nfrom judge_server import ScriptedServer\n"
         "s = ScriptedServer(reply=sys.argv[2], latency=float(sys.argv[3]), model_id=sys.argv[4], keep_log=False)\n"
         "print(s.base_url, flush=True)\nsys.stdin.read()\ns.stop()\n")

MODEL, VERDICT = "judge-model", "[[A]]"
SYSTEM = "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants."


def prompts(n: int) -> list[str]:
    """N distinct judge prompts of a realistic size."""
    return [f"[User Question]\nQuestion {i}?\n\n[The Start of Assistant A's Answer]\nAnswer A {i}.\n"
            f"[The End of Assistant A's Answer]\n\n[The Start of Assistant B's Answer]\nAnswer B {i}.\n"
            "[The End of Assistant B's Answer]" for i in range(n)]


def _openai_call(base_url: str, shared):
    """One blocking call, as RewardBench makes it (a new client per call unless ``shared``)."""
    import openai

    def call(text: str) -> str:
        client = shared or openai.OpenAI(base_url=base_url, api_key=KEY)
        r = client.chat.completions.create(model=MODEL, n=1, temperature=0, max_tokens=2048,
                                           messages=[{"role": "system", "content": SYSTEM},
                                                     {"role": "user", "content": text}])
        return r.choices[0].message.content

    return call


def _httpx_call(base_url: str, shared):
    """The same without the openai SDK: a sync httpx.Client per call (or the shared one)."""
    import httpx

    def call(text: str) -> str:
        client = shared or httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
        body = {"model": MODEL, "n": 1, "temperature": 0, "max_tokens": 2048,
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}]}
        return client.post(f"{base_url}/chat/completions", json=body).json()["choices"][0]["message"]["content"]

    return call


def pool_peer() -> str:
    """Which client the pool uses: ``openai`` when the SDK imports, else ``httpx``."""
    try:
        import openai  # noqa: F401
    except ImportError:
        return "httpx"
    return "openai"


def run_pool(base_url: str, texts: list[str], workers: int, shared: bool) -> tuple[float, list[str]]:
    """Seconds and replies of a thread pool of ``workers``, one blocking request per task (the
    shared client's construction included, as the ChatClient's is)."""
    t0 = time.perf_counter()
    if pool_peer() == "openai":
        import openai

        client = openai.OpenAI(base_url=base_url, api_key=KEY) if shared else None
        call = _openai_call(base_url, client)
    else:
        import httpx

        client = httpx.Client(headers={"Authorization": f"Bearer {KEY}"}, timeout=120) if shared else None
        call = _httpx_call(base_url, client)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        out = list(pool.map(call, texts))
    seconds = time.perf_counter() - t0
    if client is not None:
        client.close()
    return seconds, out


def run_client(base_url: str, texts: list[str], concurrency: int) -> tuple[float, list[str]]:
    """Seconds and replies of rmbench's ChatClient (client construction included)."""
    requests = [ChatRequest(messages=(("system", SYSTEM), ("user", t)), max_tokens=2048) for t in texts]
    t0 = time.perf_counter()
    client = ChatClient(base_url, MODEL, KEY, concurrency=concurrency, progress=False)
    replies = client.complete(requests)
    return time.perf_counter() - t0, [r.text for r in replies]


@contextmanager
def server_process(latency: float, reply: str = VERDICT) -> Iterator[str]:
    """A ScriptedServer in a child process that answers ``reply``; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(TESTS), reply, str(latency), MODEL],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(10)


def cached_rerun_seconds(n: int, latency: float) -> tuple[float, float, int]:
    """``rmbench eval`` of a rating judge on n/2 preference pairs (n calls): the cold run's
    seconds, the re-run's (every call answered by the call cache) and the calls the re-run made."""
    import json
    import tempfile

    from rmbench.scoring.runner import EvalConfig, evaluate

    with tempfile.TemporaryDirectory() as tmp, server_process(latency, "Rating: 7") as url:
        data = Path(tmp) / "pairs.jsonl"
        data.write_text("".join(json.dumps({"prompt": f"question {i}?", "chosen": f"answer {i}",
                                            "rejected": f"other answer {i}"}) + "\n" for i in range(n // 2)))
        config = EvalConfig(model=f"judge:{MODEL}", model_args=(("base_url", url),), tasks=("preference",),
                            data=(("preference", str(data)),), n_bootstrap=200, cache_dir=str(Path(tmp) / "cache"))
        t0 = time.perf_counter()
        evaluate(config, out_dir=Path(tmp) / "cold")
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = evaluate(config, out_dir=Path(tmp) / "again")
        cached = time.perf_counter() - t0
    return cold, cached, int(again.execution.stats.ran_with["judge_calls"]["calls"])


CONTENDERS = {
    "pool": ("RewardBench pool: 10 threads, new client per call", 10,
             lambda url, texts: run_pool(url, texts, 10, shared=False)),
    "pool-shared": ("pool: 10 threads, one shared client", 10,
                    lambda url, texts: run_pool(url, texts, 10, shared=True)),
    "client10": ("rmbench ChatClient, concurrency 10", 10, lambda url, texts: run_client(url, texts, 10)),
    "client16": ("rmbench ChatClient, concurrency 16 (default)", 16, lambda url, texts: run_client(url, texts, 16)),
}


def measure(n: int, latency: float, reps: int) -> dict[str, float]:
    """Median requests/s of every contender on one server; every reply checked."""
    texts = prompts(n)
    rates: dict[str, list[float]] = {k: [] for k in CONTENDERS}
    with server_process(latency) as url:
        for _, _, fn in CONTENDERS.values():  # warm-up: imports, first connections
            fn(url, texts[:20])
        for rep in range(reps):
            for name, (label, _, fn) in CONTENDERS.items():
                seconds, out = fn(url, texts)
                if out != [VERDICT] * n:
                    raise SystemExit(f"{label}: wrong replies")
                rates[name].append(n / seconds)
                print(f"rep {rep + 1} {label:48s} {seconds:6.2f} s  {n / seconds:7.1f} requests/s", flush=True)
    return {k: statistics.median(v) for k, v in rates.items()}


def report(rates: dict[str, float], n: int, latency: float, reps: int) -> str:
    """The markdown table and the ratios."""
    base = rates["pool"]
    lines = ["| contender | concurrency | requests/s | % of ceiling | vs RewardBench pool |",
             "|---|---:|---:|---:|---:|"]
    for name, (label, conc, _) in CONTENDERS.items():
        lines.append(f"| {label} | {conc} | {rates[name]:.1f} | {100 * rates[name] * latency / conc:.0f}% | "
                     f"{rates[name] / base:.2f}x |")
    cold, cached, calls = cached_rerun_seconds(n, latency)
    lines += ["", f"- ChatClient vs the pool at equal concurrency (10): {rates['client10'] / base:.2f}x "
                  f"(vs the pool with a shared client: {rates['client10'] / rates['pool-shared']:.2f}x)",
              f"- ChatClient at its default 16 vs the RewardBench pool: {rates['client16'] / base:.2f}x",
              f"- `rmbench eval` of a rating judge on {n // 2} pairs ({n} calls, concurrency 16): cold "
              f"{cold:.2f} s, re-run from the call cache {cached:.2f} s with {calls} calls ({cold / cached:.1f}x)"]
    return "\n".join([f"{n} requests, server latency {latency * 1000:.0f} ms each, medians of {reps} repetitions; "
                      f"the pool's client: {pool_peer()}", "", *lines])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", choices=("plain", "arena_hard"), default="plain",
                    help="plain: one request per call; arena_hard: JudgeBench's games with follow-ups")
    ap.add_argument("--n", type=int, default=400, help="requests per contender (arena_hard: games, two a pair)")
    ap.add_argument("--latency", type=float, default=0.05, help="the server's seconds per request")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=10, help="arena_hard: every contender's concurrency")
    ap.add_argument("--judgebench", default=None, help="arena_hard: a JudgeBench checkout (default: "
                    "$RMBENCH_JUDGEBENCH_DIR; without one that contender is left out)")
    ap.add_argument("--conditions", default="quiet", help="arena_hard: comma-separated, of quiet, busy1 (one "
                    "spinning process started here)")
    ap.add_argument("--write", action="store_true", help="write bench/RESULTS.md")
    args = ap.parse_args(argv)
    if args.workload == "arena_hard":
        from bench.judge_followups import run

        return run(args)
    rates = measure(args.n, args.latency, args.reps)
    table = report(rates, args.n, args.latency, args.reps)
    print(table)
    if args.write:
        import httpx

        kept = re.search(r"<!-- judge-arena_hard:start -->.*?<!-- judge-arena_hard:end -->",
                         RESULTS.read_text() if RESULTS.exists() else "", re.S)  # the arena_hard workload's block
        write_section("judge", f"## Judge client\n\nCommand: `python -m bench.judge --n {args.n} --latency "
                      f"{args.latency:g} --reps {args.reps} --write`\n\nMachine: {machine_line()}, httpx "
                      f"{httpx.__version__}, rmbench {__version__}.\n\n{table}" + (f"\n\n{kept[0]}" if kept else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
