"""Judge-client throughput with follow-ups (``python -m bench.judge --workload arena_hard``).

JudgeBench's arena_hard judge asks again ("continue your judgment and finish by outputting a
final verdict label", its reply appended as an assistant turn) when a reply holds no ``[[...]]``
label. Workload: n games (n/2 pairs, each played in both orders, as JudgeBench's
``reverse_order`` does) with JudgeBench's arena_hard messages (system + user), on one loopback
server in its own process (tests/support/judge_server.py, every request answered after the same
latency). The server's reply holds no label when a first call shows the pair's better answer
("alpha ...") as Assistant A (every other game: one of each pair's two), and a label otherwise
and to every follow-up (3 messages or more). So n games make n + n/2 requests: the server counts
them for every contender and repetition, and every game's verdict is checked.

Contenders at equal concurrency C, interleaved in each repetition (their order rotated):

* ``JudgeBench``: its own client, ``run_judge.judge_pairs(pairs, "arena_hard", MODEL,
  concurrency_limit=C, reverse_order=True)`` with its ``ArenaHard`` judge on
  ``openai.AsyncClient`` (``OPENAI_BASE_URL``/``OPENAI_API_KEY`` point at the server), imported
  from a checkout (``--judgebench DIR`` or ``$RMBENCH_JUDGEBENCH_DIR``; github
  ScalerLab/JudgeBench e2c52c2; it has no licence, so it is imported, never copied). A pair's two
  games and their follow-ups run one after another in one of C semaphore slots. Left out, with
  the reason printed, when no checkout is given or it does not import;
* ``JudgeRM``: what a user of rmbench's judge gets: ``JudgeRM(MODEL, base_url,
  mode="pairwise", prompt="arena_hard", concurrency=C).score(batch)`` on the pairs'
  ScoreRequests (a pair: two requests, each with the other answer as ``context``), with its
  in-memory call store (the model listing, call keys, the store and the values included);
* ``ChatClient, follow-ups in the slot``: the request phase alone,
  ``ChatClient.complete(requests, follow=protocol.continuation)``;
* ``ChatClient, two rounds (before)``: every first call, then the follow-ups in a second
  ``complete``, as the judge ran before follow-ups took their call's slot.

Each time includes building the contender's client. "ideal s": the time the contender's order of
requests takes at C slots with no client overhead (list scheduling of its calls at the server's
latency); "% of ceiling": requests/s x latency / C. Conditions: ``quiet`` (nothing started) and
``busy1`` (one spinning process, started and stopped here, as bench/load.py does); each says how
many cores other processes kept busy meanwhile (/proc/stat less the CPU time of this process and
of the server's), which on a shared machine includes whatever else runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench.loopback import KEY, TESTS
from bench.results import RESULTS, machine_line, write_section
from rmbench import __version__
from rmbench.models.base import ScoreRequest
from rmbench.models.judge import judgebench as JB
from rmbench.models.judge.client import ChatClient, ChatReply, ChatRequest
from rmbench.models.judge.protocol import Protocol

MODEL = "gpt-4o-2024-05-13"  # JudgeBench sends a "gpt..." name through openai.AsyncClient
JUDGEBENCH_ENV = "RMBENCH_JUDGEBENCH_DIR"
SECTION = "judge-arena_hard"  # a block inside RESULTS.md's judge section
ALPHA_AS_A = "<|The Start of Assistant A's Answer|>\nalpha"
PROTOCOL = Protocol.make("pairwise", "arena_hard", None, 0.0, 1, None, "rating", None)
SERVE = ("import sys, time\nsys.path[:0] = [sys.argv[1], sys.argv[2]]\nfrom judge_server import ScriptedServer\n"
         "from bench.judge_followups import reply\n"
         "s = ScriptedServer(reply=reply, latency=float(sys.argv[3]), model_id=sys.argv[4], keep_log=False)\n"
         "print(s.base_url, flush=True)\n"
         "for _ in sys.stdin:  # each line asks for the chat replies served so far\n"
         "    while s.in_flight:\n        time.sleep(0.001)\n"
         "    print(s.served, flush=True)\ns.stop()\n")


def reply(body: dict) -> str:
    """The server's judgment (alpha is the better answer): no label to a first call showing alpha
    as Assistant A; a label to the other first calls and to every follow-up."""
    messages = body["messages"]
    alpha_first = ALPHA_AS_A in messages[1]["content"]
    label = "[[A>B]]" if alpha_first else "[[B>A]]"
    if len(messages) >= 3:
        return f"Having weighed both answers again, my final verdict is: {label}"
    if alpha_first:
        return "Assistant A's answer is correct and complete; Assistant B's answer misses a step."
    return f"Assistant A's answer misses a step; Assistant B's answer is correct. My final verdict is: {label}"


def games(n: int) -> list[tuple[str, str, str]]:
    """n/2 pairs (n games): (question, the better answer, the other)."""
    return [(f"Question {i}: what is {i} + {i}? Show the steps.", f"alpha {i}: {i} + {i} = {2 * i}.",
             f"beta {i}: {i} + {i} = {2 * i + 1}.") for i in range(n // 2)]


class Server:
    """The scripted arena_hard server in a child process; ``served()``: chat replies so far."""

    def __init__(self, latency: float) -> None:
        args = [sys.executable, "-c", SERVE, str(TESTS), str(TESTS.parents[1]), str(latency), MODEL]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()

    def cpu_seconds(self) -> float:
        """The server process's CPU seconds so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def served(self) -> int:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(10)


@contextlib.contextmanager
def openai_env(url: str) -> Iterator[None]:
    """OPENAI_BASE_URL / OPENAI_API_KEY pointing at the server (restored after)."""
    old = {k: os.environ.get(k) for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    os.environ.update(OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_judgebench(path: str | None) -> tuple[object | None, str]:
    """JudgeBench's ``run_judge`` module imported from the checkout at ``path`` and its commit,
    or None and why it is left out."""
    if not path:
        return None, f"no JudgeBench checkout (set {JUDGEBENCH_ENV} or pass --judgebench DIR)"
    if not (Path(path) / "run_judge.py").is_file():
        return None, f"{path} is not a JudgeBench checkout (no run_judge.py)"
    sys.path.insert(0, str(Path(path).resolve()))
    try:
        import run_judge
    except Exception as exc:  # noqa: BLE001 - a missing dependency: left out, with the reason
        return None, f"JudgeBench at {path} does not import: {type(exc).__name__}: {exc}"
    commit = subprocess.run(["git", "-C", str(path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return run_judge, commit.stdout.strip() or "commit unknown"


def run_judgebench(run_judge, url: str, pairs, c: int) -> tuple[float, int, bool]:
    """JudgeBench's judge_pairs: seconds, replies it received, whether every decision is right."""
    rows = [{"pair_id": f"pair-{i}", "original_id": str(i), "source": "livebench-reasoning", "question": q,
             "response_model": "bench", "response_A": a, "response_B": b, "label": "A>B"}
            for i, (q, a, b) in enumerate(pairs)]
    t0 = time.perf_counter()
    out = asyncio.run(run_judge.judge_pairs(rows, "arena_hard", MODEL, concurrency_limit=c, reverse_order=True,
                                            output_file=None))
    seconds = time.perf_counter() - t0
    judged = [j for p in out for j in p["judgments"]]
    ok = all([j and j["decision"] for j in p["judgments"]] == ["A>B", "B>A"] for p in out)
    return seconds, sum(j["judgment"]["response"].count("\n") for j in judged if j), ok  # "\n" + each reply


def score_requests(pairs) -> list[ScoreRequest]:
    return [ScoreRequest(q, x, f"pair-{i}", k, context=(y,))
            for i, (q, a, b) in enumerate(pairs) for k, (x, y) in enumerate(((a, b), (b, a)))]


def run_judgerm(url: str, pairs, c: int) -> tuple[float, int, bool]:
    """rmbench's JudgeRM.score on the pairs: seconds, calls made, whether every value is right."""
    from rmbench.models.judge.adapter import JudgeRM

    batch = score_requests(pairs)
    t0 = time.perf_counter()
    judge = JudgeRM(MODEL, base_url=url, mode="pairwise", prompt="arena_hard", concurrency=c)
    raw = judge.score(batch)
    seconds = time.perf_counter() - t0
    judge.close()
    want = [0.5 if r.response.startswith("alpha") else -0.5 for r in batch]
    return seconds, judge.counters["calls"], bool(raw[:, 1].all()) and raw[:, 0].tolist() == want


def game_requests(pairs) -> list[ChatRequest]:
    return [PROTOCOL._request(JB.pair_messages("arena_hard", q, x, y), None) for q, a, b in pairs
            for x, y in ((a, b), (b, a))]


def verdicts_ok(requests: list[ChatRequest], chains: list[list[ChatReply]]) -> bool:
    """Every game's verdict (its replies joined as JudgeBench joins them) is alpha's."""
    return all(JB.parse_verdict("arena_hard", "".join("\n" + r.text for r in chain))
               == ("A>B" if ALPHA_AS_A in request.messages[1][1] else "B>A")
               for request, chain in zip(requests, chains))


def run_follow(url: str, pairs, c: int) -> tuple[float, int, bool]:
    """ChatClient.complete with follow=: a follow-up in its call's slot."""
    requests = game_requests(pairs)
    chains: list[list[ChatReply]] = [[] for _ in requests]
    t0 = time.perf_counter()
    client = ChatClient(url, MODEL, KEY, concurrency=c, progress=False)
    client.complete(requests, on_reply=lambda i, r: chains[i].append(r),
                    follow=lambda i, request, r: PROTOCOL.continuation(request, r),
                    on_follow=lambda i, request, r: chains[i].append(r))
    return time.perf_counter() - t0, client.stats.calls, verdicts_ok(requests, chains)


def run_two_rounds(url: str, pairs, c: int) -> tuple[float, int, bool]:
    """The judge before: every first call, then the follow-ups in a second round."""
    requests = game_requests(pairs)
    chains: list[list[ChatReply]] = [[] for _ in requests]
    t0 = time.perf_counter()
    client = ChatClient(url, MODEL, KEY, concurrency=c, progress=False)
    first = client.complete(requests, on_reply=lambda i, r: chains[i].append(r))
    more = [(i, f) for i, (q, r) in enumerate(zip(requests, first)) if (f := PROTOCOL.continuation(q, r)) is not None]
    client.complete([f for _, f in more], on_reply=lambda k, r: chains[more[k][0]].append(r))
    return time.perf_counter() - t0, client.stats.calls, verdicts_ok(requests, chains)


def list_schedule(durations: list[int], slots: int) -> int:
    """The time jobs taken in order by the first free of ``slots`` workers take (in latencies)."""
    free = [0] * min(slots, len(durations))
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free, default=0)


def ideal_latencies(name: str, pairs, c: int) -> int:
    """The contender's schedule at zero client overhead, in server latencies."""
    if name == "judgebench":  # a pair's games and follow-ups, one after another in one slot
        return list_schedule([3] * len(pairs), c)
    if name == "two-rounds":
        return list_schedule([1] * 2 * len(pairs), c) + list_schedule([1] * len(pairs), c)
    requests = game_requests(pairs)
    if name == "judgerm":  # the judge's own order: each request's calls, a call asked once
        requests = list(dict.fromkeys(call for r in score_requests(pairs) for call in PROTOCOL.calls(r)[0]))
    return list_schedule([2 if ALPHA_AS_A in r.messages[1][1] else 1 for r in requests], c)  # a follow-up: 2


LABELS = {"judgebench": "JudgeBench run_judge.judge_pairs (ArenaHard, openai.AsyncClient)",
          "judgerm": "rmbench JudgeRM.score (follow-ups in the slot)",
          "follow": "rmbench ChatClient, follow-ups in the slot",
          "two-rounds": "rmbench ChatClient, two rounds (before)"}


def _own_seconds(server: Server) -> float:
    """CPU seconds of this process and of the server's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime + server.cpu_seconds()


def measure(n: int, latency: float, reps: int, concurrency: int, judgebench: str | None = None,
            conditions: tuple[str, ...] = ("quiet",)) -> dict:
    """Every contender on the same server: per condition its median seconds and the requests the
    server (and the client) counted; raises SystemExit on a wrong count or verdict."""
    from bench.load import CONDITIONS, Load, _busy_seconds

    if unknown := [c for c in conditions if c not in CONDITIONS]:
        raise SystemExit(f"--conditions: unknown {', '.join(unknown)} (of {', '.join(CONDITIONS)})")
    if n < 2 or n % 2:
        raise SystemExit("--workload arena_hard: --n counts games, two a pair: give an even number >= 2")
    module, info = load_judgebench(judgebench)
    fns: dict[str, Callable] = {"judgerm": run_judgerm, "follow": run_follow, "two-rounds": run_two_rounds}
    if module is not None:
        fns = {"judgebench": lambda url, p, c: run_judgebench(module, url, p, c), **fns}
    else:
        print(f"JudgeBench: left out: {info}", flush=True)
    pairs, expected = games(n), n + n // 2
    out: dict = {"judgebench": info, "expected": expected, "conditions": {}}
    server = Server(latency)
    try:
        with openai_env(server.url), contextlib.redirect_stderr(io.StringIO()):  # progress bars and lines
            for fn in fns.values():  # warm-up: imports, first connections
                fn(server.url, games(min(n, 2 * concurrency)), concurrency)
            for condition in conditions:
                seconds: dict[str, list[float]] = {k: [] for k in fns}
                counts: dict[str, tuple[int, int]] = {}
                with Load(condition):
                    busy0, own0, t0 = _busy_seconds(), _own_seconds(server), time.monotonic()
                    for rep in range(reps):
                        for name in list(fns)[rep % len(fns):] + list(fns)[:rep % len(fns)]:
                            before = server.served()
                            s, client_count, ok = fns[name](server.url, pairs, concurrency)
                            counts[name] = (server.served() - before, client_count)
                            if not ok or counts[name] != (expected, expected):
                                raise SystemExit(f"{LABELS[name]}: requests (server, client) {counts[name]}, "
                                                 f"expected {expected}; verdicts right: {ok}")
                            seconds[name].append(s)
                            print(f"{condition} rep {rep + 1} {LABELS[name]:66s} {s:6.2f} s  {counts[name][0]} "
                                  f"requests ({client_count} by the client)  {expected / s:7.1f} requests/s",
                                  flush=True)
                    others = ((_busy_seconds() - busy0) - (_own_seconds(server) - own0)) / (time.monotonic() - t0)
                out["conditions"][condition] = {"others": max(0.0, others), "rows": {
                    k: {"seconds": statistics.median(v), "requests": counts[k][0], "client_requests": counts[k][1],
                        "ideal": ideal_latencies(k, pairs, concurrency) * latency} for k, v in seconds.items()}}
    finally:
        server.close()
    return out


def report(result: dict, n: int, latency: float, reps: int, c: int) -> str:
    """One markdown table per condition, and the ratios."""
    lines = [f"{n} games ({n // 2} pairs, both orders) + {n // 2} follow-ups = {result['expected']} requests per "
             f"contender (counted by the server), server latency {latency * 1000:.0f} ms, concurrency {c} for "
             f"every contender, medians of {reps} repetitions. JudgeBench: {result['judgebench']}."]
    for condition, got in result["conditions"].items():
        rows, base = got["rows"], got["rows"].get("judgebench")
        lines += ["", f"**{condition}**: other processes kept {got['others']:.2f} of the {os.cpu_count()} cores "
                      f"busy on average{' (the spinning process among them)' if condition != 'quiet' else ''}", "",
                  "| contender | requests | ideal s | wall s | requests/s | % of ceiling | vs JudgeBench |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for k, row in rows.items():
            rate = row["requests"] / row["seconds"]
            vs = f"{base['seconds'] / row['seconds']:.2f}x" if base else ""
            lines.append(f"| {LABELS[k]} | {row['requests']} | {row['ideal']:.2f} | {row['seconds']:.2f} | "
                         f"{rate:.1f} | {100 * rate * latency / c:.0f}% | {vs} |")
        lines.append("")
        if base:
            lines.append(f"- rmbench JudgeRM / JudgeBench: {base['seconds'] / rows['judgerm']['seconds']:.2f}x "
                         f"requests/s ({rows['judgerm']['seconds']:.2f} s vs {base['seconds']:.2f} s)")
        lines.append(f"- follow-ups in the slot / two rounds (ChatClient): "
                     f"{rows['two-rounds']['seconds'] / rows['follow']['seconds']:.2f}x "
                     f"({rows['follow']['seconds']:.2f} s vs {rows['two-rounds']['seconds']:.2f} s)")
    return "\n".join(lines)


def write(body: str) -> None:
    """Replace this workload's block, kept inside RESULTS.md's judge section."""
    start, end = f"<!-- {SECTION}:start -->", "<!-- judge:end -->"
    text = RESULTS.read_text() if RESULTS.exists() else ""
    if start not in text and end in text:
        RESULTS.write_text(text.replace(end, f"\n{start}\n<!-- {SECTION}:end -->\n{end}"))
    write_section(SECTION, body)


def run(args) -> int:
    """``python -m bench.judge --workload arena_hard``."""
    import httpx
    import openai

    path = args.judgebench or os.environ.get(JUDGEBENCH_ENV)
    conditions = tuple(c.strip() for c in args.conditions.split(",") if c.strip())
    result = measure(args.n, args.latency, args.reps, args.concurrency, path, conditions)
    table = report(result, args.n, args.latency, args.reps, args.concurrency)
    print(table)
    if args.write:
        command = (f"python -m bench.judge --workload arena_hard --n {args.n} --latency {args.latency:g} --reps "
                   f"{args.reps} --concurrency {args.concurrency} --conditions {','.join(conditions)} --write")
        write(f"### arena_hard with follow-ups (JudgeBench's client beside rmbench's judge)\n\nCommand: `{command}` "
              f"(`{JUDGEBENCH_ENV}` a JudgeBench checkout)\n\nMachine: {machine_line()}, httpx {httpx.__version__}, "
              f"openai {openai.__version__}, rmbench {__version__}.\n\n{table}")
    return 0
