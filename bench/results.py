"""Write one benchmark's section of bench/RESULTS.md, leaving the other sections as they are."""

from __future__ import annotations

import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("RESULTS.md")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_line() -> str:
    return f"{platform.machine()}, {cpu_name()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"


def write_section(name: str, body: str) -> None:
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(text)


def interleaved(sides: dict[str, Callable[[], Any]], reps: int) -> dict[str, tuple[float, Any]]:
    """Each side's median seconds and last result, the sides taking turns in each repetition (in a
    rotating order), so a burst of load from another process falls on all of them alike."""
    names = list(sides)
    times: dict = {name: [] for name in names}
    results: dict = {}
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            t0 = time.perf_counter()
            results[name] = sides[name]()
            times[name].append(time.perf_counter() - t0)
    return {name: (statistics.median(times[name]), results[name]) for name in names}
