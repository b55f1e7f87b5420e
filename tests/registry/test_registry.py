import pytest

from rmbench.registry import Registry, RegistryError, import_target


def test_lazy_values_resolve_on_get():
    reg = Registry("thing")
    reg.register("sqrt", "math:sqrt", description="square root")
    assert reg.get("sqrt")(9) == 3
    assert reg.describe("sqrt") == ("square root", "built-in")


def test_duplicate_names_fail():
    reg = Registry("thing")
    reg.register("a", 1)
    with pytest.raises(RegistryError, match="duplicate thing name 'a'"):
        reg.register("a", 2, origin="plugin x")


def test_unknown_name_suggests():
    reg = Registry("task")
    reg.register("ties", 1)
    reg.register("token_shift", 2)
    with pytest.raises(RegistryError, match="did you mean 'ties'"):
        reg.get("tied")


def test_broken_lazy_value_fails_loudly_with_its_origin():
    reg = Registry("model")
    reg.register("broken", "no_such_module_xyz:thing", origin="entry point 'broken' of pkg")
    with pytest.raises(RegistryError, match="entry point 'broken' of pkg.*no_such_module_xyz"):
        reg.get("broken")


def test_import_target_from_file(tmp_path):
    f = tmp_path / "my_rm.py"
    f.write_text("def score(pairs):\n    return [1.0 for _ in pairs]\n")
    assert import_target(f"{f}:score")([1, 2]) == [1.0, 1.0]
    with pytest.raises(RegistryError, match="has no attribute 'nope'"):
        import_target(f"{f}:nope")
    with pytest.raises(RegistryError, match="no such file"):
        import_target(f"{tmp_path}/missing.py:score")
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(RegistryError, match="RuntimeError: boom"):
        import_target(f"{bad}:score")


# --- entry points: where each name came from, and RMBENCH_PLUGINS -----------------------------------

GROUP = "rmbench_test.things"


def _install(site, dist: str, module: str, *, local: bool) -> None:
    """A distribution as pip leaves it in site-packages: its module, and a .dist-info with an entry
    point in GROUP (and, installed from a local folder, a direct_url.json naming a file: URL)."""
    (site / f"{module}.py").write_text(f"THING = {module!r}\n")
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{module}_thing = {module}:THING\n")
    if local:
        (info / "direct_url.json").write_text('{"url": "file:///src/' + dist + '", "dir_info": {"editable": true}}')


@pytest.fixture
def two_plugins(tmp_path, monkeypatch):
    import sys

    _install(tmp_path, "fake-plugin-a", "fake_plugin_a", local=True)
    _install(tmp_path, "fake_plugin_b", "fake_plugin_b", local=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("RMBENCH_PLUGINS", raising=False)
    yield tmp_path
    for module in ("fake_plugin_a", "fake_plugin_b"):
        sys.modules.pop(module, None)


@pytest.mark.parametrize(("scope", "loaded"), [
    (None, ["fake_plugin_a_thing", "fake_plugin_b_thing"]), ("all", ["fake_plugin_a_thing", "fake_plugin_b_thing"]),
    ("none", []), ("Fake_Plugin.A", ["fake_plugin_a_thing"]), (" fake-plugin-b , other ", ["fake_plugin_b_thing"])])
def test_rmbench_plugins_decides_which_distributions_entry_points_load(two_plugins, monkeypatch, scope, loaded):
    if scope is not None:
        monkeypatch.setenv("RMBENCH_PLUGINS", scope)
    reg = Registry("thing", entry_point_group=GROUP)
    reg.register("builtin", 1)
    assert reg.names() == sorted(["builtin", *loaded])


def test_an_entry_point_keeps_its_distribution_and_a_local_install_s_module_hash(two_plugins):
    import hashlib

    from rmbench.registry import PluginSource

    reg = Registry("thing", entry_point_group=GROUP)
    reg.register("builtin", "math:sqrt")
    assert reg.source("builtin") is None and reg.source("no_such_name") is None
    code = (two_plugins / "fake_plugin_a.py").read_bytes()
    assert reg.source("fake_plugin_a_thing") == PluginSource("fake-plugin-a", "1.0", "fake_plugin_a",
                                                             hashlib.sha256(code).hexdigest())
    assert reg.get("fake_plugin_a_thing") == "fake_plugin_a"  # source() imported it: the file that runs is hashed
    # installed from an index (no direct_url.json): its version says what it is, no file is hashed
    assert reg.source("fake_plugin_b_thing") == PluginSource("fake_plugin_b", "1.0", "fake_plugin_b", None)


def test_a_plugin_in_a_model_s_parts_enters_its_fingerprint():
    from rmbench.models.base import RewardModel
    from rmbench.registry import PluginSource

    class Plain(RewardModel):
        kind = "plain"

        def score(self, batch):
            return [0.0] * len(batch)

    built_in = Plain().fingerprint()
    with_plugin = Plain()
    with_plugin.plugin = PluginSource("pkg", "1.0", "pkg.model", "a" * 64)
    edited = Plain()
    edited.plugin = PluginSource("pkg", "1.0", "pkg.model", "b" * 64)
    newer = Plain()
    newer.plugin = PluginSource("pkg", "1.1", "pkg.model", None)
    prints = {built_in, with_plugin.fingerprint(), edited.fingerprint(), newer.fingerprint()}
    assert len(prints) == 4
    assert Plain().fingerprint() == built_in  # a built-in kind's fingerprint is what it was


def test_a_plugin_prm_s_source_enters_its_step_cache_key(tmp_path):
    from rmbench.core.specs import ModelSpec
    from rmbench.models import build_model
    from rmbench.registry import PluginSource

    (tmp_path / "prm.py").write_text("def score(items):\n    return [[0.5] * len(s) for _, s in items]\n")

    def prm(source=None):
        model = build_model(ModelSpec(name="p", kind="python-prm", args={"target": f"{tmp_path / 'prm.py'}:score"}))
        model.plugin = source
        return model

    built_in = prm().step_fingerprint()
    edited = {prm(PluginSource("pkg", "1.0", "pkg.prm", h * 64)).step_fingerprint() for h in "ab"}
    assert len(edited | {built_in}) == 3  # an edit to a plugin PRM's module scores its steps again
    assert prm().step_fingerprint() == built_in


def test_a_plugin_task_kind_s_source_enters_its_task_key():
    from rmbench.core.types import ComparisonGroup
    from rmbench.registry import PluginSource
    from rmbench.tasks.base import Task, task_fingerprint

    class Pairs(Task):
        def groups(self):
            return [ComparisonGroup(id="0", prompt="p", responses=("a", "b"), utilities=(1, 0))]

    def key(plugin):
        task = Pairs()
        task.plugin = plugin
        return task_fingerprint(task, task.groups())

    built_in = key(None)
    keys = {built_in, key(PluginSource("pkg", "1.0", "pkg.tasks", "a" * 64)),
            key(PluginSource("pkg", "1.0", "pkg.tasks", "b" * 64)), key(PluginSource("pkg", "1.1", "pkg.tasks"))}
    assert len(keys) == 4
    assert built_in == task_fingerprint(Pairs(), Pairs().groups())  # a built-in kind's key: its data's, as before


# --- a plugin that fails to import is listed as broken ---------------------------------------------

def _broken_plugin(site, group: str, name: str) -> None:
    """A distribution whose entry point ``name`` in ``group`` names a module that raises on import."""
    (site / "fake_broken_plugin.py").write_text("raise ImportError('needs libfoo 2')\n")
    info = site / "fake_broken_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = fake_broken_plugin:Thing\n")


def test_load_error_is_one_line_for_a_broken_entry_point_and_none_otherwise(tmp_path, monkeypatch):
    import sys

    _broken_plugin(tmp_path, GROUP, "broken_thing")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RMBENCH_PLUGINS", "fake-broken-plugin")
    reg = Registry("thing", entry_point_group=GROUP)
    reg.register("builtin", "no_such_module_xyz:thing")  # registered in code: never imported to list it
    assert reg.load_error("builtin") is None
    error = reg.load_error("broken_thing")
    assert error is not None and "\n" not in error and "needs libfoo 2" in error
    sys.modules.pop("fake_broken_plugin", None)


@pytest.mark.parametrize(("command", "group", "module"), [("tasks", "rmbench.tasks", "rmbench.tasks"),
                                                           ("models", "rmbench.models", "rmbench.models")])
def test_tasks_and_models_list_show_a_plugin_that_fails_to_import_as_broken(tmp_path, monkeypatch, command, group,
                                                                            module):
    import importlib
    import sys

    from typer.testing import CliRunner

    from rmbench.cli.app import app

    registry = getattr(importlib.import_module(module), "TASK_KINDS" if command == "tasks" else "MODEL_KINDS")
    registry.names()  # the real entry points are loaded (none: RMBENCH_PLUGINS=none in tests) ...
    _broken_plugin(tmp_path, group, "brokenkind")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RMBENCH_PLUGINS", "fake-broken-plugin")
    monkeypatch.setattr(registry, "_entries", dict(registry._entries))  # ... and the registry restored after
    monkeypatch.setattr(registry, "_entry_points_loaded", False)  # the fake distribution's load now
    result = CliRunner().invoke(app, [command, "list"], env={"COLUMNS": "400"})
    sys.modules.pop("fake_broken_plugin", None)
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "brokenkind" in ln)
    assert "(broken kind)" in line and "BROKEN:" in line and "needs libfoo 2" in line, line
    assert "(broken kind)" not in result.output.replace(line, "")  # the built-in kinds load


# --- a plugin is listed with its own description ------------------------------------------------

@pytest.mark.parametrize(("command", "module", "code"), [
    ("tasks", "rmbench.tasks", "class Thing:\n    description = 'Fake pairs:  the plugin task kind'\n"),
    ("models", "rmbench.models", "class Thing:\n    '''Fake pairs: the plugin model kind.\n\n    Details.'''\n")])
def test_tasks_and_models_list_show_a_plugin_s_own_description(tmp_path, monkeypatch, command, module, code):
    import importlib
    import sys

    from typer.testing import CliRunner

    from rmbench.cli.app import app

    registry = getattr(importlib.import_module(module), "TASK_KINDS" if command == "tasks" else "MODEL_KINDS")
    registry.names()
    (tmp_path / "fake_described_plugin.py").write_text(code)
    info = tmp_path / "fake_described_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-described-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{module}]\nfakekind = fake_described_plugin:Thing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RMBENCH_PLUGINS", "fake-described-plugin")
    monkeypatch.setattr(registry, "_entries", dict(registry._entries))
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    result = CliRunner().invoke(app, [command, "list"], env={"COLUMNS": "400"})
    sys.modules.pop("fake_described_plugin", None)
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "fakekind" in ln)
    assert f"Fake pairs: the plugin {command[:-1]} kind" in line and "plugin (" not in line, line
    assert "fake-described-plugin" in line  # the source column still names the distribution


# --- the one mechanism: checked values, repeated declarations, order, origin ----------------------------

def test_kind_and_key_are_checked_when_registered_and_when_a_lazy_value_loads(tmp_path, monkeypatch):
    reg = Registry("thing", kind=tuple, key=lambda t: t[0])  # a thing: (its name, ...)
    reg.register("a", ("a", 1))
    with pytest.raises(RegistryError, match=r"thing 'b' from built-in is not a tuple named 'b' \(got tuple ''\)"):
        reg.register("b", ("a", 1))
    with pytest.raises(RegistryError, match=r"thing 'c' from here is not a tuple named 'c' \(got int ''\)"):
        reg.register("c", 3, origin="here")
    (tmp_path / "lazy_things.py").write_text("WRONG = ('other', 1)\nRIGHT = ('e', 2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg.register("d", "lazy_things:WRONG", origin="entry point 'd' of pkg")
    for _ in range(2):  # a wrong value stays unloaded: asked again, it fails again
        with pytest.raises(RegistryError, match="thing 'd' from entry point 'd' of pkg is not a tuple named 'd'"):
            reg.get("d")
    reg.register("e", "lazy_things:RIGHT")
    assert reg.get("e") == ("e", 2)


def test_an_equal_declaration_again_is_a_no_op_where_the_registry_allows_it():
    strict, lenient = Registry("thing"), Registry("thing", same_ok=True)
    for reg in (strict, lenient):
        reg.register("a", (1, 2))
    lenient.register("a", (1, 2), origin="again")
    assert lenient.origin("a") == "built-in"  # the first declaration's origin is kept
    with pytest.raises(RegistryError, match="duplicate thing name 'a': defined by built-in and by again"):
        lenient.register("a", (1, 3), origin="again")
    with pytest.raises(RegistryError, match="duplicate thing name 'a'"):
        strict.register("a", (1, 2))


def test_registration_order_origin_find_and_unregister():
    import math

    reg = Registry("thing")
    reg.register("b", 1)
    reg.register("a", 2, origin="register_thing('a')")
    reg.register("c", "math:sqrt")
    assert reg.in_order() == ["b", "a", "c"] and reg.names() == ["a", "b", "c"]
    assert reg.origin("a") == "register_thing('a')" and reg.origin("b") == "built-in"
    assert reg.find("a") == 2 and reg.find("c") is None and reg.find("zzz") is None  # nothing imported
    assert reg.items() == [("b", 1), ("a", 2), ("c", math.sqrt)]
    reg.unregister("a")
    reg.unregister("a")  # absent: nothing
    assert reg.in_order() == ["b", "c"]


def test_named_takes_the_one_register_shape_and_the_older_one_argument_form():
    reg = Registry("thing", kind=tuple, key=lambda t: t[0])
    thing = ("x", 1)
    assert reg.named("x", thing, "register_thing") == ("x", thing)
    with pytest.warns(DeprecationWarning, match=r"register_thing\(value\) is the older form of register_thing\('x', "
                                                r"value\)"):
        assert reg.named(thing, None, "register_thing") == ("x", thing)
    with pytest.raises(RegistryError, match=r"register_thing\(name, value, \*, description=''\): no value given"):
        reg.named("x", None, "register_thing")
    with pytest.raises(RegistryError, match="the name first"):
        reg.named(thing, thing, "register_thing")


def test_an_entry_point_that_clashes_fails_every_time_and_leaves_the_registry_as_it_was(two_plugins):
    reg = Registry("thing", entry_point_group=GROUP)
    reg.register("fake_plugin_b_thing", "built-in value")
    for _ in range(2):
        with pytest.raises(RegistryError, match="duplicate thing name 'fake_plugin_b_thing': defined by built-in and "
                                                "by entry point 'fake_plugin_b_thing' of fake_plugin_b"):
            reg.names()
        assert list(reg._entries) == ["fake_plugin_b_thing"]
