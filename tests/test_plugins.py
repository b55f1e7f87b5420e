"""A user's own RM without editing rmbench: a TOML/YAML model entry, and an installed entry-point plugin."""

import os
import subprocess
import sys
import textwrap

import pytest

from rmbench import EvalConfig, evaluate, load_catalog, read_run


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


PLUGIN = {
    "pyproject.toml": """
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "rmbench-plugin-demo"
        version = "0.0.1"

        [project.entry-points."rmbench.models"]
        keyword-rm = "rmbench_plugin_demo:KeywordRM"

        [project.entry-points."rmbench.tasks"]
        demo_pairs = "rmbench_plugin_demo:DemoPairs"

        [project.entry-points."rmbench.engines"]
        one-by-one = "rmbench_plugin_demo:ONE_BY_ONE"
    """,
    "rmbench_plugin_demo/__init__.py": """
        from rmbench import ComparisonGroup, Engine, MemoryRetries, RewardModel, Task, score_batch


        class KeywordRM(RewardModel):
            def __init__(self, keyword="please"):
                self.keyword = keyword

            def score(self, batch):
                return [float(r.response.count(self.keyword)) for r in batch]


        class DemoPairs(Task):
            version = 2

            def groups(self):
                for i in range(6):
                    yield ComparisonGroup.preference_pair(f"d{i}", "Ask nicely.", "please " * (i + 1), "no")


        class OneByOne:
            # An engine that scores each batch in this process, one request at a time.

            is_main, scores_here, device = True, True, None

            def __init__(self, options):
                self.memory = MemoryRetries()

            def run(self, model, factory, batches):
                for j, batch in enumerate(batches):
                    yield j, [score_batch(model, [r], self.memory)[0] for r in batch]

            def agree(self, limits):
                return limits

            def describe(self):
                return {"name": "one-by-one"}


        ONE_BY_ONE = Engine(build=OneByOne, in_process=True)
    """,
}


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory):
    src, site = tmp_path_factory.mktemp("plugin_src"), tmp_path_factory.mktemp("plugin_site")
    for rel, text in PLUGIN.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(textwrap.dedent(text))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(site), str(src)], check=True)
    return site


def run_cli(site, cwd, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "250"}
    return subprocess.run([sys.executable, "-m", "rmbench", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.mark.slow
def test_installed_entry_point_plugin(plugin_site, tmp_path):
    listed = run_cli(plugin_site, tmp_path, "models", "list")
    assert listed.returncode == 0 and "keyword-rm" in listed.stdout and "rmbench-plugin-demo" in listed.stdout
    tasks = run_cli(plugin_site, tmp_path, "tasks", "list")
    assert tasks.returncode == 0 and "demo_pairs" in tasks.stdout and "rmbench-plugin-demo" in tasks.stdout
    result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--tasks", "demo_pairs,ties_sample",
                     "--bootstrap", "20", "--out", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr

    run = read_run(tmp_path / "run")
    demo = run.task("demo_pairs")
    assert demo.version == 2 and demo.counts.groups == 6
    assert run.value("demo_pairs", "pairwise_accuracy") == 1.0
    # An engine from the same package: --engine takes it, and the rewards are the local engine's.
    result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--tasks", "demo_pairs,ties_sample",
                     "--bootstrap", "20", "--engine", "one-by-one", "--no-cache", "--out", str(tmp_path / "engine"))
    assert result.returncode == 0, result.stderr
    assert read_run(tmp_path / "engine").execution.backend == {"name": "one-by-one"}
    assert (tmp_path / "engine" / "rewards.jsonl").read_text() == (tmp_path / "run" / "rewards.jsonl").read_text()


@pytest.mark.slow
def test_an_installed_plugin_kind_refuses_a_misspelt_argument_naming_its_own(plugin_site, tmp_path):
    """Issue 44: an entry-point kind's arguments are read from its signature, as a built-in kind's are."""
    result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--model-arg", "keywrod=thanks",
                     "--tasks", "demo_pairs", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == ("error: model 'keyword-rm': unknown argument 'keywrod' for kind 'keyword-rm'; "
                                     "did you mean 'keyword'? (it takes: keyword)"), result.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_broken_plugin_fails_loudly(plugin_site, tmp_path):
    (plugin_site / "rmbench_plugin_demo" / "__init__.py").write_text("raise ImportError('half-installed')\n")
    try:
        result = run_cli(plugin_site, tmp_path, "eval", "--model", "keyword-rm", "--out", str(tmp_path / "r"))
    finally:
        (plugin_site / "rmbench_plugin_demo" / "__init__.py").write_text(
            textwrap.dedent(PLUGIN["rmbench_plugin_demo/__init__.py"]))
    assert result.returncode == 2
    assert "entry point 'keyword-rm' of rmbench-plugin-demo" in result.stderr and "half-installed" in result.stderr
    assert "Traceback" not in result.stderr
