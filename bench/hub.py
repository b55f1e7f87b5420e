"""How fast an unreachable hub fails (tests/test_hub.py checks the one line and that nothing is
retried; the seconds are measured here, not asserted there).

Each case is ``rmbench eval`` in a fresh process with ``HF_ENDPOINT`` at a closed local port or at
a name that does not resolve and an empty hub cache: a missing model (``seqcls:``) and a missing
data set (``--tasks rewardbench2``), beside the CLI's own start (``python -m rmbench --help``), the
cases taking turns. The difference is what the failure costs over starting at all: one probe of
at most ``rmbench.hub.PROBE_TIMEOUT_S`` seconds, then the cache only (transformers and datasets on
their own retry every file with back-off, tens of seconds).

    python -m bench.hub --reps 3 --write
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.results import interleaved, machine_line, write_section
from rmbench.hub import PROBE_TIMEOUT_S

CLOSED, UNRESOLVED = "http://127.0.0.1:9", "http://hub.invalid"


def _rmbench(args: list[str], work: Path, **env: str) -> int:
    full = {**os.environ, "HF_HUB_CACHE": str(work / "hub"), "HF_HOME": str(work / "hf"), **env}
    done = subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=work, env=full, capture_output=True,
                          text=True, timeout=600)
    return done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="replace the hub section of bench/RESULTS.md")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = ["eval", "--model", "seqcls:someorg/no-such-model", "--limit", "2", "--out", str(work / "run")]
        data = ["eval", "--model", "length", "--tasks", "rewardbench2", "--out", str(work / "run")]
        sides = {
            "CLI start (`rmbench --help`)": lambda: _rmbench(["--help"], work),
            f"missing model, hub at {CLOSED}": lambda: _rmbench(model, work, HF_ENDPOINT=CLOSED),
            f"missing model, hub at {UNRESOLVED}": lambda: _rmbench(model, work, HF_ENDPOINT=UNRESOLVED),
            f"missing data set, hub at {CLOSED}": lambda: _rmbench(data, work, HF_ENDPOINT=CLOSED),
        }
        got = interleaved(sides, opts.reps)
    start = got["CLI start (`rmbench --help`)"][0]
    rows = [f"| {name} | {seconds:.2f} | {seconds - start:+.2f} | {code} |" for name, (seconds, code) in got.items()]
    body = "\n".join([
        "## Unreachable hub (bench/hub.py)", "",
        f"`python -m bench.hub --reps {opts.reps} --write`: `rmbench eval` in a fresh process with an unreachable "
        f"hub and an empty hub cache, medians of {opts.reps}, the cases taking turns; the probe waits at most "
        f"{PROBE_TIMEOUT_S:g} s. Machine: {machine_line()}; load average {os.getloadavg()[0]:.1f} at the end.", "",
        "| case | seconds | over the CLI start | exit code |", "|---|---:|---:|---:|", *rows])
    print(body)
    if opts.write:
        write_section("hub", body)


if __name__ == "__main__":
    main()
