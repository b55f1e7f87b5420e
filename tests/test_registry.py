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
