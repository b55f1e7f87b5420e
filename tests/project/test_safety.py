"""Safety: no remote code and no pickle weights unless asked for, data-only entry files, plugins
only from where the user points, no files outside --out and the cache, and an HTML leaderboard
that shows hostile names as text (checked in a real headless browser)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.catalog import builtin_tasks_dir, load_catalog
from rmbench.cli.app import _parse_model_args, app
from rmbench.core.specs import ModelSpec
from rmbench.errors import ConfigError
from rmbench.models import Runtime, build_model, parse_model_spec
from tests.support.browser import find_browser

runner = CliRunner()


class _RunsCode:
    """Unpickling this runs a shell command: what a hostile pickle file does."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


# --- (a) remote code ---------------------------------------------------------------------------

def test_remote_code_and_pickle_are_off_by_default(tmp_path):
    assert Runtime().trust_remote_code is False and Runtime().allow_pickle is False
    result = runner.invoke(app, ["eval", "--model", "oracle", "--bootstrap", "0", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    runtime = json.loads((tmp_path / "a" / "results.json").read_text())["execution"]["runtime"]
    assert runtime["trust_remote_code"] is False and runtime["allow_pickle"] is False
    result = runner.invoke(app, ["eval", "--model", "oracle", "--bootstrap", "0", "--trust-remote-code",
                                 "--allow-pickle", "--out", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    runtime = json.loads((tmp_path / "b" / "results.json").read_text())["execution"]["runtime"]
    assert runtime["trust_remote_code"] is True and runtime["allow_pickle"] is True


def test_code_shipped_in_a_model_folder_does_not_run(tiny, tmp_path):
    """A folder whose config maps the auto classes to its own module loads the built-in class."""
    folder = tmp_path / "with_code"
    shutil.copytree(tiny["causal"], folder)
    marker = tmp_path / "remote_code_ran"
    (folder / "custom_code.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
        "from transformers import LlamaConfig, LlamaForCausalLM\n"
        "class CustomConfig(LlamaConfig):\n    pass\n"
        "class CustomModel(LlamaForCausalLM):\n    config_class = CustomConfig\n")
    for name, auto_map in (("config.json", {"AutoConfig": "custom_code.CustomConfig",
                                            "AutoModelForCausalLM": "custom_code.CustomModel"}),
                           ("tokenizer_config.json", {"AutoTokenizer": ["custom_code.CustomTokenizer", None]})):
        data = json.loads((folder / name).read_text())
        data["auto_map"] = auto_map
        (folder / name).write_text(json.dumps(data))
    try:
        model = build_model(ModelSpec.make("m", "implicit", {"model": str(folder)}),
                            Runtime(dtype="float32", device="cpu"))
        assert type(model.model).__name__ == "LlamaForCausalLM"
    except ConfigError:
        pass  # refusing the folder is as good as ignoring its code
    assert not marker.exists()


# --- (b) pickle weights ------------------------------------------------------------------------

def _pickle_copy(src: Path, dst: Path) -> Path:
    """The same model with its weights in pytorch_model.bin instead of model.safetensors
    (transformers 5 saves safetensors only, so the file is written by hand)."""
    import torch
    from safetensors.torch import load_file

    shutil.copytree(src, dst)
    torch.save(load_file(str(dst / "model.safetensors")), dst / "pytorch_model.bin")
    (dst / "model.safetensors").unlink()
    return dst


def test_pickle_weights_are_refused_unless_allowed(tiny, tmp_path):
    from rmbench.models.base import ScoreRequest

    folder = _pickle_copy(tiny["causal"], tmp_path / "pickled")
    spec = ModelSpec.make("m", "implicit", {"model": str(folder)})
    with pytest.raises(ConfigError, match=r"holds only pickle weights \(pytorch_model.bin\).*--allow-pickle"):
        build_model(spec, Runtime(dtype="float32", device="cpu"))
    allowed = build_model(spec, Runtime(dtype="float32", device="cpu", allow_pickle=True))
    safe = build_model(ModelSpec.make("m", "implicit", {"model": str(tiny["causal"])}),
                       Runtime(dtype="float32", device="cpu"))
    batch = [ScoreRequest("Name a colour.", "red"), ScoreRequest("Name a colour.", "Paris is in France.")]
    assert list(allowed.score(batch)) == pytest.approx(list(safe.score(batch)), abs=1e-5)

    result = runner.invoke(app, ["eval", "--model", f"implicit:{folder}", "--limit", "2", "--bootstrap", "0",
                                 "--dtype", "float32", "--device", "cpu", "--out", str(tmp_path / "refused")])
    assert result.exit_code == 2 and "pass --allow-pickle if you trust it" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "refused").exists()
    result = runner.invoke(app, ["eval", "--model", f"implicit:{folder}", "--limit", "2", "--bootstrap", "0",
                                 "--dtype", "float32", "--device", "cpu", "--allow-pickle",
                                 "--out", str(tmp_path / "allowed")])
    assert result.exit_code == 0, result.output


def test_a_hostile_pickle_never_runs(tiny, tmp_path):
    marker = tmp_path / "pickle_ran"
    payload = pickle.dumps({"model.embed_tokens.weight": _RunsCode(f"touch {marker}")}, protocol=2)
    only_pickle = tmp_path / "only_pickle"
    shutil.copytree(tiny["causal"], only_pickle)
    (only_pickle / "model.safetensors").unlink()
    (only_pickle / "pytorch_model.bin").write_bytes(payload)
    with pytest.raises(ConfigError, match="pickle weights"):
        build_model(ModelSpec.make("m", "implicit", {"model": str(only_pickle)}),
                    Runtime(dtype="float32", device="cpu"))
    # Beside safetensors weights a pickle file is never opened.
    both = tmp_path / "both"
    shutil.copytree(tiny["causal"], both)
    (both / "pytorch_model.bin").write_bytes(payload)
    model = build_model(ModelSpec.make("m", "implicit", {"model": str(both)}), Runtime(dtype="float32", device="cpu"))
    assert model.model is not None
    assert not marker.exists()


def test_hub_models_load_safetensors_only_unless_allowed(monkeypatch):
    from rmbench import hub as hub_probe
    from rmbench.models.hf.loading import ModelSource, check_no_pickle, load_weights

    monkeypatch.setattr(hub_probe, "unreachable", lambda: None)  # as if the hub answered

    class FakeAuto:
        seen: dict = {}

        @classmethod
        def from_pretrained(cls, location, **kwargs):
            cls.seen = kwargs
            return cls(), {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": []}

        def to(self, device):
            return self

        def eval(self):
            return self

    hub = ModelSource("org/model", None, False)
    load_weights(FakeAuto, "org/model", hub, Runtime(), "float32", "cpu")
    assert FakeAuto.seen["use_safetensors"] is True and FakeAuto.seen["trust_remote_code"] is False
    load_weights(FakeAuto, "org/model", hub, Runtime(allow_pickle=True), "float32", "cpu")
    assert "use_safetensors" not in FakeAuto.seen  # transformers' own choice: safetensors first, else .bin
    gguf = ModelSource("/some/folder", None, True, "model.Q4.gguf")
    check_no_pickle("m", gguf, Runtime())  # GGUF is not pickle: allowed
    load_weights(FakeAuto, "m", gguf, Runtime(), "float32", "cpu")
    assert "use_safetensors" not in FakeAuto.seen


def test_gguf_folders_are_not_pickle(tmp_path):
    from rmbench.models.hf.loading import ModelSource, check_no_pickle

    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    (tmp_path / "training_args.bin").write_bytes(b"x")
    check_no_pickle("m", ModelSource(str(tmp_path), None, True), Runtime())
    (tmp_path / "model.gguf").unlink()
    with pytest.raises(ConfigError, match="training_args.bin"):
        check_no_pickle("m", ModelSource(str(tmp_path), None, True), Runtime())


def test_a_planted_training_checkpoint_cannot_run_code(tiny, tmp_path):
    from rmbench.core.types import ComparisonGroup
    from rmbench.train.trainer import TrainConfig, train_one

    marker = tmp_path / "checkpoint_ran"
    out = tmp_path / "trained"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(pickle.dumps({"run_id": _RunsCode(f"touch {marker}")}, protocol=2))
    groups = [ComparisonGroup("g", "Name a colour.", ["red", "Paris"], [1, 0])]
    with pytest.raises(ConfigError, match="cannot resume from it"):
        train_one("ex", TrainConfig(base=str(tiny["causal"]), max_length=64), groups, out)
    assert not marker.exists()


# --- (c) entry files are data ------------------------------------------------------------------

def test_yaml_cannot_execute_code(tmp_path):
    marker = tmp_path / "yaml_ran"
    tag = f'!!python/object/apply:os.system ["touch {marker}"]'
    entries = tmp_path / "entries"
    entries.mkdir()
    (entries / "evil.yaml").write_text(f"name: evil\nkind: preference\nargs:\n  path: {tag}\n")
    with pytest.raises(ConfigError, match=r"evil.yaml: cannot parse: .*python/object/apply"):
        load_catalog([entries])
    result = runner.invoke(app, ["eval", "--include", str(entries), "--model", "length", "--tasks", "evil"])
    assert result.exit_code == 2 and "evil.yaml: cannot parse" in result.output and "Traceback" not in result.output

    assert _parse_model_args([f"x={tag}"]) == (("x", tag),)  # kept as text, never constructed

    trained = tmp_path / "trained"
    trained.mkdir()
    (trained / "rmbench_model.yaml").write_text(f"kind: {tag}\nargs: {{}}\n")
    with pytest.raises(ConfigError, match="rmbench_model.yaml: cannot parse"):
        parse_model_spec(str(trained))
    assert not marker.exists()


# --- (d) plugin code comes only from --include and entry points ---------------------------------

def _planted(folder: Path, name: str, markers: Path, body: str = "") -> None:
    (folder / name).write_text(f"from pathlib import Path\nPath({str(markers / name)!r}).write_text('imported')\n"
                               f"{body}")


PLUGIN_TASK = """
from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import Task

class EvilTask(Task):
    def groups(self):
        yield ComparisonGroup("g", "q", ["a", "bb"], [1, 0])
"""


@pytest.mark.slow
def test_python_files_beside_the_data_or_in_cwd_are_never_imported(tmp_path):
    script = Path(sys.executable).with_name("rmbench")
    if not script.is_file():
        pytest.skip(f"no console script {script} (install the package: pip install -e .)")
    cwd, data, markers = tmp_path / "cwd", tmp_path / "data", tmp_path / "markers"
    for d in (cwd, cwd / "tasks", data, markers):
        d.mkdir()
    # Plugin-looking files, and modules whose names shadow what rmbench imports.
    for name in ("evil_task.py", "rmbench_plugins.py", "plugins.py", "yaml.py", "typer.py", "numpy.py",
                 "sitecustomize.py", "usercustomize.py", "conftest.py"):
        _planted(cwd, name, markers, PLUGIN_TASK if name == "evil_task.py" else "")
    (cwd / "evil.yaml").write_text("name: evil\nkind: evil_task.py:EvilTask\n")
    (cwd / "tasks" / "evil2.yaml").write_text("name: evil2\nkind: evil_task2.py:EvilTask\n")
    _planted(cwd / "tasks", "evil_task2.py", markers, PLUGIN_TASK)
    shutil.copy(builtin_tasks_dir() / "data" / "ties_builtin.jsonl", data / "ties_sample.jsonl")
    for name in ("ties_sample.py", "ties_task.py", "__init__.py", "conftest.py"):
        _planted(data, name, markers)
    (data / "ties_sample.yaml").write_text("name: ties\nkind: ties_task.py:EvilTask\n")

    env = {**os.environ, "COLUMNS": "200", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for args in (["eval", "--model", "length", "--tasks", "ties_sample", "--data",
                  f"ties_sample={data / 'ties_sample.jsonl'}",
                  "--bootstrap", "0", "--out", str(tmp_path / "out")],
                 ["tasks", "list"], ["models", "list"], ["leaderboard", "build", str(tmp_path / "out")]):
        result = subprocess.run([str(script), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, (args, result.stderr)
        assert list(markers.iterdir()) == [], args
    # The control: named with --include, the same plugin is imported (so the markers work).
    result = subprocess.run([str(script), "eval", "--include", str(cwd), "--tasks", "evil", "--model", "length",
                             "--bootstrap", "0", "--out", str(tmp_path / "included")], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert [p.name for p in markers.iterdir()] == ["evil_task.py"]


# --- (e) nothing is written outside --out and the cache -----------------------------------------

def _snapshot(*roots: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for root in roots for p in root.rglob("*")
            if p.is_file() or p.is_symlink()}


@pytest.mark.slow
def test_nothing_is_written_outside_out_and_the_cache(tiny, tmp_path):
    home, xdg, tmpdir, cwd, out = (tmp_path / n for n in ("home", "xdg", "tmp", "cwd", "out"))
    for d in (home, xdg, tmpdir, cwd):
        d.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HF_", "TRANSFORMERS_", "TORCH", "XDG_", "MPLCONFIGDIR", "TRITON", "PYTHONPYCACHE"))}
    env.update({"HOME": str(home), "XDG_CACHE_HOME": str(xdg), "TMPDIR": str(tmpdir), "COLUMNS": "200"})
    model_folder = Path(tiny["causal"])
    before = _snapshot(home, xdg, tmpdir, cwd, model_folder)
    for args in (["eval", "--model", f"implicit:{model_folder}", "--tasks", "ties_sample", "--limit", "3",
                  "--bootstrap",
                  "10", "--dtype", "float32", "--device", "cpu", "--out", str(out)],
                 ["leaderboard", "build", str(out), "--format", "html", "--out", str(out / "board.html")]):
        result = subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=cwd, env=env, capture_output=True,
                                text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    after = _snapshot(home, xdg, tmpdir, cwd, model_folder)
    changed = sorted(p for p, stat in after.items() if before.get(p) != stat)
    allowed = (out, xdg / "rmbench")
    outside = [str(p) for p in changed if not any(p.is_relative_to(a) for a in allowed)]
    assert outside == [], outside
    assert set(before) <= set(after)  # nothing removed either
    assert any(p.is_relative_to(xdg / "rmbench" / "scores") for p in changed)  # the cache was written
    assert (out / "results.json").is_file() and (out / "board.html").is_file()


# --- (f) HTML leaderboard escaping, in a real browser ------------------------------------------

SCRIPT = "<script>document.title='pwned-script'</script>"
IMG = "<img src=x onerror=\"document.title='pwned-img'\">"
ATTR = "\"><svg onload=\"document.title='pwned-attr'\">"
SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "div", "h1", "h2", "p", "table", "thead", "tbody", "tr",
             "th", "td", "script", "ul", "li", "figure", "figcaption", "img"}


def _browser() -> str:
    return find_browser()


def _dump_dom(browser: str, page: Path, profile: Path) -> str:
    """The DOM after the page has loaded and its scripts (and image errors) have run."""
    result = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom",
                             page.resolve().as_uri()],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(profile)})
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.title = ""
        self.cells: list[str] = []
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        self._stack.append(tag)
        if tag in ("td", "th"):
            self.cells.append("")

    def handle_endtag(self, tag):
        if tag in self._stack:
            while self._stack.pop() != tag:
                pass

    def handle_data(self, data):
        if self._stack and self._stack[-1] == "title":
            self.title += data
        elif self._stack and self._stack[-1] in ("td", "th"):
            self.cells[-1] += data


def _parse(dom: str) -> _Dom:
    parser = _Dom()
    parser.feed(dom)
    return parser


@pytest.mark.slow
def test_browser_check_detects_script_that_runs(tmp_path):
    """The control: the same check sees a script that does run, so the next test is not vacuous."""
    browser = _browser()
    page = tmp_path / "control.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>rmbench leaderboard</title></head><body>{IMG}</body></html>")
    dom = _parse(_dump_dom(browser, page, tmp_path / "profile"))
    assert dom.title == "pwned-img" and "img" in dom.tags


@pytest.mark.slow
def test_html_leaderboard_shows_hostile_names_as_text_in_a_browser(tmp_path):
    from rmbench.scoring.runner import EvalConfig, evaluate

    browser = _browser()
    runs = []
    for model, name in (("length", SCRIPT), ("oracle", ATTR)):
        folder = tmp_path / model
        evaluate(EvalConfig(model=model, n_bootstrap=20), out_dir=folder)
        doc = json.loads((folder / "results.json").read_text())
        doc["model"]["name"] = name
        for t in doc["tasks"]:
            t["name"] = IMG
            del t["comparability_key"], t["task_key"]  # hand-edited: the reader checks recorded keys
            shifted = []
            for m in t["metrics"]:
                m["task"] = IMG
                if m["subset"] is None and m["shift"] is None and m["metric"] in (
                        "pairwise_accuracy", "discrimination", "specificity", "reward_margin"):
                    shifted += [{**m, "shift": "none"}, {**m, "shift": ATTR}]
            t["metrics"] += shifted
        (folder / "results.json").write_text(json.dumps(doc))
        runs.append(str(folder))
    page = tmp_path / "board.html"
    result = runner.invoke(app, ["leaderboard", "build", *runs, "--format", "html", "--out", str(page)])
    assert result.exit_code == 0, result.output

    dom = _parse(_dump_dom(browser, page, tmp_path / "profile"))
    assert dom.title == "rmbench leaderboard"  # no injected script or handler ran
    assert set(dom.tags) <= SAFE_TAGS, set(dom.tags) - SAFE_TAGS  # no img, svg or other injected element
    assert dom.tags.count("script") == 1  # only the page's own sorting script
    assert not any(name.startswith("on") for name, _ in dom.attrs)
    # the only images are the page's own D-Spec curves, inert SVG data (no script runs in an <img>)
    assert all(v.startswith("data:image/svg+xml;base64,") for name, v in dom.attrs if name == "src")
    assert SCRIPT in dom.cells and ATTR in dom.cells  # model names and the shift name, literally
    assert f"{IMG} acc" in dom.cells  # the task name in the column headers
    assert sum(cell == ATTR for cell in dom.cells) >= 2  # a model row and a shift row
