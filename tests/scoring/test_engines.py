"""--engine is a registry: a third-party engine is one module and one registration, and runs
the same batches as the local engine (so gives the same rewards)."""

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from rmbench import (
    Backend,
    BackendOptions,
    ConfigError,
    Engine,
    EvalConfig,
    ExecutionSettings,
    MemoryRetries,
    Option,
    RunSpec,
    Runtime,
    evaluate,
    register_engine,
    score_batch,
)
from rmbench.registry import RegistryError
from rmbench.scoring.engines import ENGINES, engine_named


class ReversedBackend:
    """A toy engine: every batch scored in this process, the last batch first (results may come
    back in any order), or with ``--engine-arg order=first`` in the plan's order."""

    is_main = True
    scores_here = True
    device = None

    def __init__(self, options: BackendOptions) -> None:
        self.options, self.memory, self.order = options, MemoryRetries(), []

    def run(self, model, factory, batches):
        order = range(len(batches))
        for j in reversed(order) if self.options.args.get("order", "last") == "last" else order:
            self.order.append(j)
            yield j, score_batch(model, batches[j], self.memory)

    def agree(self, limits):
        return limits

    def describe(self):
        return {"name": "reversed", "batches": len(self.order)}


REVERSED = Engine(build=ReversedBackend, options=(
    Option("order", ("last", "first"), "which batch runs first: the plan's last or its first"),))


@pytest.fixture
def reversed_engine():
    built: list[ReversedBackend] = []

    def build(options: BackendOptions) -> Backend:
        built.append(ReversedBackend(options))
        return built[-1]

    register_engine("reversed", dataclasses.replace(REVERSED, build=build), description="every batch here, last first")
    yield built
    ENGINES._entries.pop("reversed")


def test_a_registered_engine_runs_a_whole_evaluation_with_the_local_engines_rewards(reversed_engine, tmp_path):
    config = dict(model="length", tasks=("ties_sample",), n_bootstrap=20, use_cache=False,
                  runtime=Runtime(token_budget=512))
    local = evaluate(EvalConfig(**config), out_dir=tmp_path / "local")
    toy = evaluate(EvalConfig(**config, engine="reversed"), out_dir=tmp_path / "toy")
    backend = reversed_engine[-1]
    assert backend.options.args == {"order": "last"} and backend.options.deadline is None  # its default
    assert len(backend.order) > 1 and backend.order == sorted(backend.order, reverse=True)
    # results.json records the engine's options beside what its backend describes
    assert toy.execution.backend == {"name": "reversed", "batches": len(backend.order), "order": "last"}
    first = evaluate(EvalConfig(**config, engine="reversed", engine_args={"order": "first"}), out_dir=tmp_path / "1st")
    assert reversed_engine[-1].order == sorted(backend.order) and first.execution.backend["order"] == "first"
    assert (tmp_path / "1st" / "rewards.jsonl").read_text() == (tmp_path / "local" / "rewards.jsonl").read_text()
    assert toy.execution.stats.batches_computed == local.execution.stats.batches_computed == len(backend.order)
    assert (tmp_path / "toy" / "rewards.jsonl").read_text() == (tmp_path / "local" / "rewards.jsonl").read_text()
    assert [m.to_json() for m in toy.records()] == [m.to_json() for m in local.records()]
    assert toy.execution.stats.threads is None and local.execution.stats.threads is not None  # not in-process


def test_what_an_engine_allows_is_a_property_of_the_engine(reversed_engine):
    with pytest.raises(ConfigError, match="--score-timeout works with an engine that scores in this process"):
        ExecutionSettings(engine="reversed", score_timeout=5.0)
    assert engine_named("local").in_process and not engine_named("reversed").in_process
    ExecutionSettings(engine="local", score_timeout=5.0)  # the local engine allows it


def test_an_unknown_engine_names_the_registered_ones(reversed_engine):
    with pytest.raises(ConfigError, match=r"^--engine 'nope': use one of accelerate, local, ray, reversed$"):
        EvalConfig(engine="nope")
    with pytest.raises(RegistryError, match="duplicate engine name 'reversed'"):
        register_engine("reversed", lambda options: None)


def test_an_engine_that_fails_to_load_is_one_line_naming_it():
    register_engine("broken", "no_such_engine_module:ENGINE")
    try:
        with pytest.raises(ConfigError, match=r"^--engine broken: engine 'broken' from register_engine\('broken'\) "
                                              r"failed to load: could not import 'no_such_engine_module'"):
            EvalConfig(engine="broken")
    finally:
        ENGINES._entries.pop("broken")


def test_a_plain_build_callable_registers_too(tmp_path):
    register_engine("plain", lambda options: ReversedBackend(options))
    try:
        assert engine_named("plain") == Engine(build=ENGINES.get("plain"))
        run = evaluate(EvalConfig(model="length", n_bootstrap=0, use_cache=False, engine="plain"))
        assert run.execution.backend["name"] == "reversed"
    finally:
        ENGINES._entries.pop("plain")


def test_the_cli_takes_and_lists_a_registered_engine(reversed_engine, tmp_path):
    from rmbench.cli.app import app
    from rmbench.scoring.engines import engines_help

    assert "reversed (every batch here, last first)" in engines_help() and "local (this process)" in engines_help()
    result = CliRunner().invoke(app, ["eval", "--model", "length", "--engine", "reversed", "--bootstrap", "0",
                                      "--no-cache", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["execution"]["backend"]["name"] == "reversed"
    bad = CliRunner().invoke(app, ["eval", "--model", "length", "--engine", "revresed", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "--engine 'revresed': use one of" in bad.output
    bad = CliRunner().invoke(app, ["eval", "--engine", "reversed", "--engine-arg", "ordr=first"])  # add-engine.md's
    assert bad.exit_code == 2 and bad.output.splitlines() == [
        "error: --engine reversed has no option 'ordr'; did you mean 'order'? (its options: order=last|first)"]


def test_the_config_is_what_is_measured_and_how_it_runs():
    config = EvalConfig(model="length", tasks=("ties_sample",), eps=(0.1, 0.0, 0.1), engine="ray",
                        engine_args={"workers": 3})
    assert config.measured == RunSpec(model="length", tasks=("ties_sample",), eps=(0.0, 0.1))
    assert config.execution == ExecutionSettings(engine="ray", engine_args=(("workers", "3"),))
    assert EvalConfig(config.measured, config.execution) == config
    again = EvalConfig(config.measured, config.execution, eps=(0.2,), use_cache=False)
    assert again.measured.eps == (0.2,) and again.measured.model == "length" and not again.execution.use_cache

    assert dataclasses.replace(config, seed=3).measured.seed == 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'"):
        EvalConfig(modle="length")
    with pytest.raises(TypeError, match="takes a RunSpec and ExecutionSettings"):
        EvalConfig("length")
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.measured.model = "other"  # type: ignore[misc]
    with pytest.raises(ConfigError, match="--eps-unit must be 'sigma' or 'raw', got 'sd'"):
        RunSpec(eps_unit="sd")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="--truncation must be"):
        RunSpec(truncation="middle")
    with pytest.raises(ConfigError, match="--max-length must be a positive integer"):
        RunSpec(max_length=0)


def test_each_check_of_a_run_happens_once(tmp_path, monkeypatch):
    """Per run: one folder check, one lock, one thread-policy decision, one look for the split a
    trained model was trained on (the plan objects carry their results down)."""
    import rmbench.results.storage.folder as folder
    import rmbench.scoring.planning as planning
    import rmbench.scoring.runner as runner
    import rmbench.scoring.suite as suite
    from rmbench import evaluate_models

    calls: dict[str, int] = {}
    locked: list[str] = []

    def counting(module, name):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] = calls.get(name, 0) + 1
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counting(folder, "existing_run")  # every check_destination reads the folder's run once
    counting(planning, "prepare_threads")
    counting(suite, "trained_split")
    counting(planning, "trained_split")
    for module in (runner, suite):
        monkeypatch.setattr(module, "run_folders_locked", lambda folders, take=module.run_folders_locked:
                            take(locked.extend(map(str, folders)) or folders))
    configs = [EvalConfig(model=m, n_bootstrap=0, use_cache=False) for m in ("length", "constant")]
    for _ in range(2):  # the second time, each folder holds its run already
        evaluate_models(configs, out=tmp_path / "runs")
    assert calls == {"existing_run": 4, "prepare_threads": 4, "trained_split": 4}
    assert len(locked) == 4 and len(set(locked)) == 2
    calls.clear()
    locked.clear()
    evaluate(EvalConfig(model="length", n_bootstrap=0, use_cache=False), out_dir=tmp_path / "one")
    assert calls == {"existing_run": 1, "prepare_threads": 1, "trained_split": 1}
    assert locked == [str(tmp_path / "one")]
