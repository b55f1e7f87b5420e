"""Write one benchmark's section of bench/RESULTS.md, leaving the other sections as they are."""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path

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
