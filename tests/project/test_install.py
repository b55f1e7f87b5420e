"""A plain, non-editable install (a wheel) still finds the built-in tasks and runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed_site(tmp_path_factory):
    dist, site = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist),
                    str(REPO)], check=True, cwd=dist)
    wheels = list(dist.glob("rmbench-*.whl"))
    assert len(wheels) == 1
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheels[0])],
                   check=True)
    return site


def run(site, cwd, *args):
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "250"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_wheel_ships_builtin_tasks(installed_site, tmp_path):
    probe = run(installed_site, tmp_path, "-c",
                "import rmbench; from rmbench.catalog import builtin_tasks_dir; print(rmbench.__file__); "
                "print(builtin_tasks_dir())")
    assert probe.returncode == 0, probe.stderr
    module_file, tasks_dir = probe.stdout.split()
    assert module_file.startswith(str(installed_site)), "the test must exercise the wheel, not the checkout"
    assert tasks_dir.startswith(str(installed_site))
    assert (Path(tasks_dir) / "ties_sample.yaml").is_file()
    assert (Path(tasks_dir) / "data" / "ties_builtin.jsonl").is_file()
    listed = run(installed_site, tmp_path, "-m", "rmbench", "tasks", "list")
    assert listed.returncode == 0 and "ties_sample" in listed.stdout and "ties" in listed.stdout
    result = run(installed_site, tmp_path, "-m", "rmbench", "eval", "--model", "length", "--bootstrap", "20")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "runs" / "length__ties_sample" / "results.json").is_file()
