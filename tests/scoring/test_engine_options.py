"""One option record (:class:`rmbench.Option`) for what formats, engines and trackers declare
(issue 52, item 9): an engine's options are set with ``--engine-arg KEY=VALUE`` and checked
against the chosen engine, Ray's (``workers``, ``ray_address``, ``worker_cpus``, ``worker_gpus``)
among them; the old ``--workers``-style flags still work, with a note."""

from __future__ import annotations

import json
import warnings

import pytest
from typer.testing import CliRunner

import rmbench
import rmbench.plugins
from rmbench import BackendOptions, ConfigError, Engine, EvalConfig, ExecutionSettings, MemoryRetries, Option
from rmbench.cli.app import app
from rmbench.core.options import resolve_options, split_assignment
from rmbench.results.publishing.formats import output_format
from rmbench.results.trackers.registry import TRACKERS
from rmbench.scoring.engines import ENGINES, RAY_ENGINE, engine_args, make_backend, recorded_backend

runner = CliRunner()
RAY_OPTIONS = "(its options: workers=INT, ray_address=TEXT, worker_cpus=NUMBER, worker_gpus=NUMBER)"


# --- the record ---------------------------------------------------------------------------------

def test_an_option_reads_a_word_as_its_kind_and_checks_it():
    workers = Option("workers", kind=int, default=2, at_least=1)
    assert workers.read("8") == 8 and workers.read(3) == 3 and workers.read(None) == 2
    cpus = Option("cpus", kind=float, default=1.0, above=0)
    assert cpus.read("0.5") == 0.5 and cpus.read(2) == 2.0 and isinstance(cpus.read(2), float)
    flag = Option("fast", kind=bool, default=False)
    assert flag.read("true") is True and flag.read("no") is False and flag.read(True) is True
    for option, value, why in [(workers, "0", "must be >= 1"), (workers, "2.5", "expected a whole number"),
                               (workers, True, "expected a whole number"), (cpus, "0", "must be > 0"),
                               (cpus, "nan", "expected a finite number"), (cpus, "x", "expected a finite number"),
                               (flag, "maybe", "expected true or false"),
                               (Option("ci", ("brackets", "pm")), "round", "use one of brackets, pm"),
                               (Option("name"), 3, "expected text")]:
        with pytest.raises(ConfigError, match=f"^{why}$"):
            option.read(value)


def test_an_options_default_is_its_first_choice_unless_it_says_otherwise():
    assert Option("ci", ("brackets", "pm"), "how CIs look").default == "brackets"
    assert Option("mode", ("online", "offline"), default=None).default is None  # not set: the environment decides
    assert Option("project").default is None
    assert Option("ci", ("brackets", "pm"), default="pm").default == "pm"
    with pytest.raises(ValueError, match="its default 0: must be >= 1"):
        Option("workers", kind=int, default=0, at_least=1)
    with pytest.raises(ValueError, match="choices are words"):
        Option("n", ("1", "2"), kind=int)
    with pytest.raises(ValueError, match="use letters, digits and _"):
        Option("a-b")


def test_usage_and_help_lines():
    assert Option("ci", ("brackets", "pm"), "CI style").line == "ci=brackets|pm (CI style; default brackets)"
    assert Option("workers", help="actors", kind=int, default=2).line == "workers=INT (actors; default 2)"
    assert Option("fast", kind=bool, default=False).line == "fast=true|false (default false)"
    assert Option("uri").line == "uri=TEXT"


def test_resolving_names_the_owner_and_lists_its_options_in_one_line():
    declared = (Option("workers", kind=int, default=2, at_least=1), Option("address"))
    assert resolve_options(declared, {"workers": "4"}, "x") == {"workers": 4, "address": None}
    assert resolve_options(declared, [("address", "auto")], "x", defaults=False) == {"address": "auto"}
    with pytest.raises(ConfigError, match=r"^thing 'x' has no option 'worker'; did you mean 'workers'\? "
                                          r"\(its options: workers=INT, address=TEXT\)$"):
        resolve_options(declared, {"worker": 1}, "thing 'x'")
    with pytest.raises(ConfigError, match=r"^thing 'x': option workers='-1': must be >= 1 "
                                          r"\(its options: workers=INT, address=TEXT\); see the docs$"):
        resolve_options(declared, {"workers": "-1"}, "thing 'x'", note="; see the docs")
    with pytest.raises(ConfigError, match=r"^thing 'x' has no option 'a' \(it takes none\)$"):
        resolve_options((), {"a": 1}, "thing 'x'")
    with pytest.raises(ConfigError, match="option workers is given twice"):
        resolve_options(declared, [("workers", 1), ("workers", 2)], "thing 'x'")
    assert split_assignment(" workers = 8 ", "--engine-arg", "workers=8") == ("workers", "8")
    with pytest.raises(ConfigError, match=r"^--engine-arg '8': expected NAME=VALUE \(e.g. workers=8\)$"):
        split_assignment("8", "--engine-arg", "workers=8")


def test_one_record_serves_formats_engines_and_trackers():
    assert rmbench.Option is rmbench.plugins.Option is rmbench.FormatOption is rmbench.plugins.FormatOption
    assert all(isinstance(o, Option) for o in output_format("latex").options)
    assert all(isinstance(o, Option) for o in RAY_ENGINE.options)
    for name in TRACKERS.names():
        sink = TRACKERS.get(name)
        assert sink.options and all(isinstance(o, Option) for o in sink.options), name
    legacy = rmbench.FormatOption("ci", ("brackets", "pm"), "CI style")  # a plugin's format, as written before
    assert legacy == Option("ci", ("brackets", "pm"), "CI style") and legacy.default == "brackets"


def test_a_tracker_reads_its_options_through_the_record():
    for name in TRACKERS.names():
        cls = TRACKERS.get(name)
        words = {o.name: o.choices[-1] if o.choices else f"{o.name}-value" for o in cls.options}
        given, bare = cls(words), cls()
        assert {k: given.setting(k) for k in words} == words, name
        assert all(bare.setting(k) is None for k in words), name  # unset: the library's environment decides


# --- engines ------------------------------------------------------------------------------------

def test_the_ray_engine_declares_its_options_and_they_are_checked_before_ray_loads():
    assert [o.name for o in RAY_ENGINE.options] == ["workers", "ray_address", "worker_cpus", "worker_gpus"]
    assert engine_args("ray") == {"workers": 2, "ray_address": None, "worker_cpus": 1.0, "worker_gpus": 0.0}
    settings = ExecutionSettings(engine="ray", engine_args={"workers": "8", "worker_gpus": "1"})
    assert settings.engine_args == (("workers", 8), ("worker_gpus", 1.0))  # read, in the engine's order
    assert settings.engine_options() == {"workers": 8, "ray_address": None, "worker_cpus": 1.0, "worker_gpus": 1.0}
    assert settings.backend_options().args == settings.engine_options()
    cases = [({"wokers": 3}, r"^--engine ray has no option 'wokers'; did you mean 'workers'"),
             ({"workers": 0}, r"^--engine ray: option workers=0: must be >= 1 "),
             ({"worker_cpus": "0"}, r"^--engine ray: option worker_cpus='0': must be > 0 "),
             ({"worker_gpus": "one"}, r"^--engine ray: option worker_gpus='one': expected a finite number ")]
    for given, message in cases:
        with pytest.raises(ConfigError, match=message) as caught:
            ExecutionSettings(engine="ray", engine_args=given)
        assert str(caught.value).endswith(RAY_OPTIONS) and "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"^--engine local has no option 'workers' \(it takes none\)$"):
        ExecutionSettings(engine="local", engine_args={"workers": 2})


def test_the_ray_build_gets_its_options(monkeypatch):
    import rmbench.scoring.ray_backend as ray_backend

    built: list[dict] = []
    monkeypatch.setattr(ray_backend, "RayBackend", lambda **kwargs: built.append(kwargs) or kwargs)
    make_backend("ray", BackendOptions(args={"workers": "3", "ray_address": "auto"}))
    make_backend("ray")
    assert built == [dict(address="auto", concurrency=3, num_cpus=1.0, num_gpus=0.0),
                     dict(address=None, concurrency=2, num_cpus=1.0, num_gpus=0.0)]
    with pytest.raises(ConfigError, match="--engine ray: option workers=-2: must be >= 1"):
        make_backend("ray", BackendOptions(args={"workers": -2}))


def test_the_record_holds_the_engines_options_beside_what_its_backend_says():
    class Described:
        def describe(self):
            return {"name": "ray", "workers": 2, "address": "local"}

    assert recorded_backend(Described(), {"workers": 2, "worker_gpus": 0.0}) == {
        "name": "ray", "workers": 2, "address": "local", "worker_gpus": 0.0}


def test_the_old_fields_and_flags_still_work_with_a_note():
    with pytest.warns(DeprecationWarning) as caught:
        old = EvalConfig(engine="ray", workers=4, worker_gpus=1)
    assert [str(w.message) for w in caught] == [
        "ExecutionSettings(workers=...) is deprecated: give engine_args={'workers': 4} (--engine-arg workers=4)",
        "ExecutionSettings(worker_gpus=...) is deprecated: give engine_args={'worker_gpus': 1} "
        "(--engine-arg worker_gpus=1)"]
    assert {w.filename for w in caught} == {__file__}  # the note points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = EvalConfig(engine="ray", engine_args={"workers": 4, "worker_gpus": 1})
    assert old == new and old.execution.workers is None  # one spelling once read
    with pytest.raises(ConfigError, match="option workers is given twice"), pytest.warns(DeprecationWarning):
        ExecutionSettings(engine="ray", engine_args={"workers": 2}, workers=3)


class _Counted:
    is_main, scores_here, device = True, True, None

    def __init__(self, options: BackendOptions) -> None:
        self.options, self.memory = options, MemoryRetries()

    def run(self, model, factory, batches):
        for j, batch in enumerate(batches):
            yield j, rmbench.score_batch(model, batch, self.memory)

    def agree(self, limits):
        return limits

    def describe(self):
        return {"name": "counted"}


@pytest.fixture
def counted_engine():
    built: list[_Counted] = []
    options = (Option("workers", help="pretend workers", kind=int, default=1, at_least=1),
               Option("label", help="a word"))
    rmbench.register_engine("counted", Engine(build=lambda o: built.append(_Counted(o)) or built[-1],
                                              options=options))
    yield built
    ENGINES._entries.pop("counted")


def test_the_cli_sets_engine_options_and_records_them(counted_engine, tmp_path):
    out = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--engine", "counted", "--engine-arg", "workers=3",
                                 "--engine-arg", "label=a=b", "--bootstrap", "0", "--no-cache", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert counted_engine[0].options.args == {"workers": 3, "label": "a=b"}
    backend = json.loads((out / "results.json").read_text())["execution"]["backend"]
    assert backend == {"name": "counted", "workers": 3, "label": "a=b"}
    assert "deprecated" not in result.output


def test_an_old_flag_is_its_engine_arg_with_a_deprecation_line(counted_engine, tmp_path):
    result = runner.invoke(app, ["eval", "--model", "length", "--engine", "counted", "--workers", "5",
                                 "--bootstrap", "0", "--no-cache", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "warning: --workers is deprecated: use --engine-arg workers=5" in result.output
    assert counted_engine[0].options.args == {"workers": 5, "label": None}


def test_a_bad_engine_arg_on_the_cli_is_one_error_line_before_any_scoring(tmp_path):
    out = tmp_path / "run"
    for args, message in [(["--engine", "ray", "--engine-arg", "gpus=1"],
                           "error: --engine ray has no option 'gpus'"),
                          (["--engine", "ray", "--engine-arg", "workers"],
                           "error: --engine-arg 'workers': expected NAME=VALUE (e.g. workers=8)"),
                          (["--engine", "local", "--engine-arg", "workers=2"],
                           "error: --engine local has no option 'workers' (it takes none)")]:
        result = runner.invoke(app, ["eval", "--model", "length", "--out", str(out), *args])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        errors = [line for line in result.output.splitlines() if line.startswith("error")]
        assert len(errors) == 1 and errors[0].startswith(message), result.output
        assert not out.exists()
    old = runner.invoke(app, ["eval", "--model", "length", "--out", str(out), "--engine", "ray", "--workers", "0"])
    assert old.exit_code == 2 and not out.exists()
    assert old.output.splitlines() == ["warning: --workers is deprecated: use --engine-arg workers=0",
                                       f"error: --engine ray: option workers=0: must be >= 1 {RAY_OPTIONS}"]


def test_the_help_lists_the_built_in_engines_options():
    result = runner.invoke(app, ["eval", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.output.split())
    assert "--engine-arg" in text and "workers=INT (actors, each loading the model once; default 2)" in text
