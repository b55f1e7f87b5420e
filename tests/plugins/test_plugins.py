"""A user's own RM without editing rmbench: a TOML/YAML model entry, and an installed entry-point plugin."""

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from rmbench import EvalConfig, evaluate, load_catalog, read_run
from tests.support.judge_server import ScriptedServer  # noqa: E402


def test_toml_and_yaml_model_entries(tmp_path):
    (tmp_path / "my_rm.py").write_text("def score(pairs):\n    return [-float(len(r)) for _, r in pairs]\n")
    (tmp_path / "my-rm.toml").write_text(textwrap.dedent("""
        type = "model"
        name = "my-rm"
        kind = "python"
        description = "prefers short answers"
        args = { target = "my_rm.py:score" }
    """))
    (tmp_path / "my-const.yaml").write_text("type: model\nname: my-const\nkind: constant\nargs: {value: 3}\n")
    catalog = load_catalog([tmp_path])
    assert {"my-rm", "my-const"} <= set(catalog.models)
    res = evaluate(EvalConfig(model="my-rm", include=(str(tmp_path),), n_bootstrap=20))
    assert res.model.name == "my-rm" and res.model.spec["kind"] == "python"
    acc = res.value("ties_sample", "pairwise_accuracy")
    assert acc > 0.5  # shorter is better on Ties: the opposite of the length baseline
    res = evaluate(EvalConfig(model="my-const", include=(str(tmp_path),), n_bootstrap=20))
    assert res.model.spec["args"] == {"value": 3}


PLUGIN_PKG = Path(__file__).parents[1] / "plugin_pkg"
"""An out-of-tree plugin package: one task kind, computed metric, format, engine, model kind and judge
protocol, each registered by one entry point and importing only ``rmbench.plugins``."""
TOPIC_PAIRS = PLUGIN_PKG / "data" / "topic_pairs.jsonl"
PLUGIN_DIST = "rmbench-plugin-example"


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    """The plugin package installed (offline, no dependencies) into a folder of its own, which the CLI
    subprocesses put on PYTHONPATH: its .dist-info there is how ``importlib.metadata`` finds the entry
    points, and the shared virtualenv stays as it was."""
    for tool in ("pip", "setuptools"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed in this Python ({sys.executable}): it installs the plugin package")
    src, site = tmp_path_factory.mktemp("plugin_src") / "plugin_pkg", tmp_path_factory.mktemp("plugin_site")
    shutil.copytree(PLUGIN_PKG, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))  # builds
    # write build/ and *.egg-info beside the sources: the copy keeps them out of the repository
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(src)], check=True)
    return site


def run_cli(site, cwd, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "250", "RMBENCH_PLUGINS": PLUGIN_DIST}  # the suite's own runs load none (tests/conftest.py)
    return subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=cwd, env=env, capture_output=True, text=True)


def grade_by_politeness(body: dict) -> str:
    """The judge's reply: 5 for an answer that says "please", else 2 (both inside the protocol's 1-5)."""
    answer = body["messages"][-1]["content"].split("###Response: ")[1].split("\n###Score Rubrics")[0]
    return f"Feedback: fine. [RESULT] {5 if 'please' in answer.lower() else 2}"


def test_the_how_to_pages_show_the_plugin_package_s_own_code_and_entry_points():
    """The docs show the code that runs: each module of the package is included from its file, and each
    page's entry point is the package's own line."""
    docs = Path(__file__).parents[2] / "docs" / "how-to"
    modules = sorted(p.name for p in (PLUGIN_PKG / "rmbench_plugin_example").glob("*.py") if p.name != "__init__.py")
    assert modules == ["board.py", "engine.py", "export.py", "judge.py", "metric.py", "model.py", "tasks.py"]
    include = '--8<-- "tests/plugin_pkg/{}"'.format
    page = (docs / "write-a-plugin.md").read_text(encoding="utf-8")
    assert include("pyproject.toml:entry-points") in page
    assert all(include(f"rmbench_plugin_example/{m}") in page for m in modules)
    groups = tomllib.loads((PLUGIN_PKG / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]
    assert len(groups) == 7 and all(len(points) == 1 for points in groups.values())
    pages = {"rmbench.tasks": "add-task.md", "rmbench.models": "add-model.md", "rmbench.engines": "add-engine.md",
             "rmbench.judge_protocols": "add-model.md"}
    for group, page_name in pages.items():
        (name, value), = groups[group].items()
        text = "\n".join(line.strip() for line in (docs / page_name).read_text(encoding="utf-8").splitlines())
        assert include(f"rmbench_plugin_example/{value.split(':')[0].split('.')[-1]}.py") in text, page_name
        key = name if name.replace("-", "_").isidentifier() else f'"{name}"'
        assert f'[project.entry-points."{group}"]\n{key} = "{value}"' in text, (page_name, group)


@pytest.mark.slow
def test_the_plugin_package_s_seven_extensions_run_end_to_end(plugin_site, tmp_path):
    """Its model kind scores its task kind on its engine, its metric is a leaderboard column, its judge
    protocol judges on a real server, its format writes the leaderboard, its export format exports the
    runs: no edit to rmbench."""
    listed = run_cli(plugin_site, tmp_path, "models", "list")
    assert listed.returncode == 0, listed.stderr
    assert all(name in listed.stdout for name in ("keyword-rm", "rating/prometheus", "rmbench-plugin-example"))
    data = f"topic_pairs={TOPIC_PAIRS}"
    result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--tasks", "topic_pairs", "--data", data,
                     "--engine", "serial", "--metrics", "tie_rate", "--bootstrap", "20", "--out", str(tmp_path / "kw"))
    assert result.returncode == 0, result.stderr
    run = read_run(tmp_path / "kw")
    # "please" counted in (good, bad): chat (1, 0) (0, 0) (1, 0); math (1, 0) (0, 0) (1, 2)
    assert run.value("topic_pairs", "topic_accuracy") == 3 / 6
    assert run.value("topic_pairs", "topic_accuracy", subset="chat") == 2 / 3
    assert run.value("topic_pairs", "topic_accuracy", subset="math") == 1 / 3
    assert run.value("topic_pairs", "tie_rate") == 2 / 6
    assert run.task("topic_pairs").metric_def("tie_rate").label == "tie rate"  # recorded in metric_specs
    specs = {m.name: m for m in run.task("topic_pairs").metric_specs}  # tie_rate's with the package that declared it
    assert specs["tie_rate"].plugin is not None and specs["tie_rate"].plugin.module == "rmbench_plugin_example.metric"
    assert specs["topic_accuracy"].plugin is None and specs["pairwise_accuracy"].plugin is None
    assert run.execution.backend == {"name": "serial", "scored": 12}  # the plugin engine scored every response
    assert run.model.spec["kind"] == "keyword-rm"
    assert {p.module.rpartition(".")[2] for p in run.environment.plugins} == {"model", "tasks", "metric", "engine"}

    with ScriptedServer(reply=grade_by_politeness) as server:
        result = run_cli(plugin_site, tmp_path, "eval", "--model", "judge:judge-model", "--model-arg",
                         f"base_url={server.base_url}", "--model-arg", "prompt=prometheus", "--tasks", "topic_pairs",
                         "--data", data, "--bootstrap", "20", "--out", str(tmp_path / "judge"))
        sent = server.chat_requests()
    assert result.returncode == 0, result.stderr
    assert len(sent) == 12 and all(b["max_tokens"] == 512 and "###Score Rubrics" in b["messages"][-1]["content"]
                                   for b in sent)
    judged = read_run(tmp_path / "judge")
    assert judged.tasks[0].judge_replies.no_verdict == 0
    # 5 for a "please" (any case), else 2: rows 1, 2, 5 win; 3 and 6 tie (both polite); 4 ties (neither)
    assert judged.value("topic_pairs", "topic_accuracy") == 3 / 6 and judged.value("topic_pairs", "tie_rate") == 3 / 6
    assert {p.module.rpartition(".")[2] for p in judged.environment.plugins} == {"judge", "tasks", "metric"}

    board = tmp_path / "board.org"
    result = run_cli(plugin_site, tmp_path, "leaderboard", "build", str(tmp_path / "kw"), str(tmp_path / "judge"),
                     "--format", "org", "--metrics", "tie_rate", "--out", str(board))
    assert result.returncode == 0, result.stderr
    text = board.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| model"))
    assert "topic_pairs topic acc" in header and "topic_pairs tie rate" in header, header
    assert "* Topic pairs" in text and "| Math | Chat | Score |" in text  # the plugin task's official table
    assert "Tasks:" in text and "keyword-rm" in text and "judge" in text

    result = run_cli(plugin_site, tmp_path, "export", str(tmp_path / "kw"), "--format", "tsv", "--out",
                     str(tmp_path / "tsv"))
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "tsv" / "keyword-rm.tsv").read_text().splitlines()
    assert "topic_pairs\ttopic_accuracy\t0.5" in lines and "topic_pairs\ttie_rate\t0.3333333333333333" in lines


@pytest.mark.slow
def test_an_installed_plugin_kind_refuses_a_misspelt_argument_naming_its_own(plugin_site, tmp_path):
    """Issue 44: an entry-point kind's arguments are read from its signature, as a built-in kind's are."""
    result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--model-arg", "keywrod=thanks",
                     "--tasks", "ties_sample", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == ("error: model 'keyword-rm': unknown argument 'keywrod' for kind 'keyword-rm'; "
                                     "did you mean 'keyword'? (it takes: keyword)"), result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
@pytest.mark.parametrize("module", ["model", "metric"])
def test_broken_plugin_fails_loudly(plugin_site, tmp_path, module):
    installed = plugin_site / "rmbench_plugin_example" / f"{module}.py"
    kept = installed.read_text()
    installed.write_text("raise ImportError('half-installed')\n")
    try:
        result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--tasks", "ties_sample",
                         "--out", str(tmp_path / "r"))
    finally:
        installed.write_text(kept)
    name = {"model": "keyword-rm", "metric": "tie_rate"}[module]
    assert result.returncode == 2, result.stderr
    assert f"entry point {name!r} of rmbench-plugin-example" in result.stderr and "half-installed" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_a_plugin_s_code_is_in_the_identity_of_what_it_computes(plugin_site, tmp_path):
    """Issue 52: an edit to an installed plugin model's module (a local install: its sha256 is kept) is
    another model to the score cache, so its next run computes again and its numbers change; the runs
    name the plugin modules they used, and the leaderboard and verify name the one they differ by."""
    import hashlib

    data = f"topic_pairs={TOPIC_PAIRS}"

    def run(out):
        result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--tasks", "topic_pairs", "--data",
                         data, "--bootstrap", "20", "--out", str(tmp_path / out))
        assert result.returncode == 0, result.stderr
        return read_run(tmp_path / out)

    module = plugin_site / "rmbench_plugin_example" / "model.py"
    kept = module.read_text()
    run("first")
    again = run("again")  # the same code: every score is the cache's
    assert again.execution.stats.cached == 12 and again.execution.stats.computed == 0
    assert again.value("topic_pairs", "topic_accuracy") == 3 / 6
    used = {p.module: p for p in again.environment.plugins}
    assert set(used) == {"rmbench_plugin_example.model", "rmbench_plugin_example.tasks",
                         "rmbench_plugin_example.metric"}  # the model, the task and the computed tie_rate
    assert all(p.name == PLUGIN_DIST and p.version == "0.1.0" for p in used.values())
    assert used["rmbench_plugin_example.model"].sha256 == hashlib.sha256(module.read_bytes()).hexdigest()
    try:
        module.write_text(kept.replace("return [float(", "return [-float("))  # the reward's sign flipped
        flipped = run("flipped")
    finally:
        module.write_text(kept)
    assert flipped.execution.stats.cached == 0 and flipped.execution.stats.computed == 12
    assert flipped.model.fingerprint != again.model.fingerprint
    # "please" counted in (good, bad): (1, 0) (0, 0) (1, 0) (1, 0) (0, 0) (1, 2); negated, only the last wins
    assert flipped.value("topic_pairs", "topic_accuracy") == 1 / 6
    tasks_code = [[p.sha256 for p in r.environment.plugins if p.module.endswith(".tasks")] for r in (again, flipped)]
    assert tasks_code[0] == tasks_code[1] and tasks_code[0][0] is not None  # the task's module is as it was

    board = run_cli(plugin_site, tmp_path, "leaderboard", "build", str(tmp_path / "again"), str(tmp_path / "flipped"),
                    "--format", "md")
    assert board.returncode == 0, board.stderr
    short = {name: next(p.sha256[:12] for p in r.environment.plugins if p.module.endswith(".model"))
             for name, r in (("again", again), ("flipped", flipped))}
    assert f"plugin {PLUGIN_DIST} differs between runs: " in board.stdout
    assert f"model {short['again']}" in board.stdout and f"model {short['flipped']}" in board.stdout
    verified = run_cli(plugin_site, tmp_path, "verify", str(tmp_path / "flipped"), "--against", str(tmp_path / "again"))
    assert (f"the runs differ in plugin {PLUGIN_DIST} 0.1.0, module model {short['flipped']} vs {short['again']}"
            in verified.stdout), verified.stdout + verified.stderr


@pytest.mark.slow
def test_rmbench_plugins_none_loads_no_installed_plugin(plugin_site, tmp_path):
    """``RMBENCH_PLUGINS=none`` (the suite's own setting, tests/conftest.py): an installed package's kinds are
    unknown."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin_site), os.environ.get("PYTHONPATH")])),
           "RMBENCH_PLUGINS": "none"}
    result = subprocess.run([sys.executable, "-m", "rmbench", "eval", "--model", "keyword-rm", "--tasks", "ties_sample",
                             "--out", str(tmp_path / "r")], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 2 and "error: unknown model 'keyword-rm'" in result.stderr, result.stderr
    listed = subprocess.run([sys.executable, "-m", "rmbench", "models", "list"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert listed.returncode == 0 and "keyword-rm" not in listed.stdout and "prometheus" not in listed.stdout
