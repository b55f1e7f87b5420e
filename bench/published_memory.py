"""Peak memory and wall time of replaying a large published file on a task that reads a few of
its rows (issue 53, item 8: a 725 MB file took 4.4 GB and 2 min, read whole), before and after
the readers stream.

Writes, in a temporary folder deleted after, a synthetic JudgeBench outputs file of about
``--mb`` MB (``run_judge.py``'s lines: the pair, ``judge_name`` and a reward model's two games
with their scores; long responses, as a judge's outputs on long answers are) and a JudgeBench
data file of ``--read`` of its pairs, spread over the file. Then, each in a fresh process whose
peak RSS a wrapper process reads (``getrusage(RUSAGE_CHILDREN).ru_maxrss``), the one command

    rmbench eval --model published:judgebench:FILE --tasks judgebench --data judgebench=DATA \\
        --bootstrap 0 --no-cache --out RUNS

with the checkout at ``--before REV`` (a ``git worktree``, removed after), with this checkout,
and with this checkout on a file of the read pairs alone (the floor: what the run needs without
the rest of the file), taking turns ``--reps`` times. The rewards written must be byte-equal.

    python -m bench.published_memory --before 14fa111~1 --mb 700 --write
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.results import machine_line, write_section

REPO = Path(__file__).resolve().parents[1]
SOURCES = ("mmlu-pro-law", "livebench-reasoning", "livebench-math", "livecodebench", "mmlu-pro-math")
WORDS = ("the answer is", "because", "we compute", "so that", "therefore", "in summary", "note that", "step")
WRAPPER = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
print(json.dumps({"rc": done.returncode, "seconds": time.perf_counter() - start,
                  "peak_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
                  "stderr": done.stderr[-2000:]}))
"""


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS) + f" {rng.randint(0, 999)}")
    return " ".join(words)


def write_files(folder: Path, mb: int, read: int, chars: int) -> tuple[Path, Path, Path, int]:
    """(the published file, the task's data, a published file of the read pairs alone, pairs in the file)."""
    rng = random.Random(0)
    blocks = [_text(rng, chars) for _ in range(16)]
    published = folder / "judgebench_outputs.jsonl"
    small = folder / "read_only.jsonl"
    pairs_est = max(read, mb * 1_000_000 // (2 * chars + 400))
    every = max(pairs_est // read, 1)
    data_rows, n = [], 0
    with open(published, "w", encoding="utf-8") as out, open(small, "w", encoding="utf-8") as few:
        while out.tell() < mb * 1_000_000:
            a, b = rng.random(), rng.random()
            pair = {"pair_id": f"p{n}", "original_id": n, "source": SOURCES[n % 5], "question": f"Question {n}?",
                    "response_model": "gpt-4o-2024-05-13", "response_A": blocks[n % 16] + f" A{n}",
                    "response_B": blocks[(n + 7) % 16] + f" B{n}", "label": "A>B" if n % 3 else "B>A"}
            games = [{"judgment": {"judge_model": "org/rm", "scores": [x, y]}, "decision": "A>B" if x > y else "B>A"}
                     for x, y in ((a, b), (b, a))]
            line = json.dumps({**pair, "judge_name": "reward_model", "judgments": games}, ensure_ascii=False) + "\n"
            out.write(line)
            if n % every == 0 and len(data_rows) < read:
                data_rows.append(pair)
                few.write(line)
            n += 1
    data = folder / "judgebench.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in data_rows), encoding="utf-8")
    return published, data, small, n


def run(checkout: Path, published: Path, data: Path, out: Path) -> dict:
    """The command in a fresh process under the wrapper: rc, seconds, peak RSS (MiB), stderr's tail."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "rmbench", "eval", "--model", f"published:judgebench:{published}",
           "--tasks", "judgebench", "--data", f"judgebench={data}", "--bootstrap", "0", "--no-cache", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, env=env,
                          cwd=out.parent)
    result = json.loads(done.stdout)
    if result["rc"] != 0:
        raise SystemExit(f"{checkout}: rmbench eval failed:\n{result['stderr']}")
    result["rewards"] = sorted(p.read_bytes() for p in out.rglob("rewards.jsonl"))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--before", required=True, help="the git revision whose readers read a file whole")
    ap.add_argument("--mb", type=int, default=700, help="size of the published file (MB)")
    ap.add_argument("--read", type=int, default=350, help="pairs the task reads (JudgeBench's gpt set: 350)")
    ap.add_argument("--chars", type=int, default=9_000, help="characters of each response")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="rmbench-published-memory-") as tmp:
        folder = Path(tmp)
        before = folder / "before"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=REPO, check=True,
                       capture_output=True)
        try:
            published, data, small, pairs = write_files(folder, args.mb, args.read, args.chars)
            size = published.stat().st_size
            sides = {"before": (before, published), "after": (REPO, published), "floor": (REPO, small)}
            measured: dict[str, list[dict]] = {name: [] for name in sides}
            names = list(sides)
            for rep in range(args.reps):
                for name in names[rep % 3:] + names[:rep % 3]:
                    checkout, file = sides[name]
                    measured[name].append(run(checkout, file, data, folder / f"runs_{name}"))
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, capture_output=True)
    peak = {k: max(r["peak_mib"] for r in v) for k, v in measured.items()}
    secs = {k: statistics.median(r["seconds"] for r in v) for k, v in measured.items()}
    equal = measured["before"][-1]["rewards"] == measured["after"][-1]["rewards"] == measured["floor"][-1]["rewards"]
    rows = [f"| {label} | {secs[k]:.1f} | {peak[k]:,.0f} | {peak[k] - peak['floor']:+,.0f} |"
            for k, label in (("before", f"before ({args.before}): read whole"), ("after", "after: streamed"),
                             ("floor", "floor: a file of the read pairs alone"))]
    mib = size / 2**20
    body = (f"## A large published file, a few rows read (issue 53, item 8)\n\n"
            f"Command: `python -m bench.published_memory --before {args.before} --mb {args.mb} --reps {args.reps} "
            f"--write`\n\n"
            f"Machine: {machine_line()}. A synthetic JudgeBench outputs file of {mib:,.0f} MiB ({pairs:,} pairs, two "
            f"reward-model games each, responses of {args.chars:,} characters); the task reads {args.read} of its "
            f"pairs, "
            f"spread over the file. `rmbench eval` each time in a fresh process (peak RSS of the whole process, "
            f"imports included; seconds are the median of {args.reps}, the sides taking turns; load average "
            f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end: other processes share these cores).\n\n"
            f"| reader | seconds | peak RSS (MiB) | above the floor (MiB) |\n|---|---:|---:|---:|\n" + "\n".join(rows) +
            f"\n\nPeak memory above the floor: before {(peak['before'] - peak['floor']) / mib:.2f}x the file, after "
            f"{(peak['after'] - peak['floor']) / mib:.3f}x; before / after peak RSS "
            f"{peak['before'] / peak['after']:.1f}x, wall time {secs['before'] / secs['after']:.1f}x. Rewards "
            f"byte-equal (before, after, floor): {'yes' if equal else '**no**'}.\n")
    print(body)
    if args.write:
        write_section("published_memory", body)


if __name__ == "__main__":
    sys.exit(main())
