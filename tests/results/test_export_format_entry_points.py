"""An installed package adds an export format with one ``rmbench.export_formats`` entry point: it is
registered with its origin (the distribution, as the engine's identity work records it), honours
``RMBENCH_PLUGINS``, and ``rmbench export --format`` writes it."""

from __future__ import annotations

import hashlib
import sys

import pytest
from typer.testing import CliRunner

from rmbench.errors import ConfigError
from rmbench.registry import PluginSource, RegistryError
from rmbench.results.publishing import export_formats as X
from rmbench.scoring.runner import EvalConfig, evaluate

MODULE = """\
from rmbench.results.publishing.export_formats import Export, ExportFile, ExportFormat, safe_parts


def build(folders, options):
    files = tuple(ExportFile(safe_parts(f.record.model.name, "scores.tsv"),
                             "".join(f"{t.name}\\t{m.metric}\\t{m.estimate.value!r}\\n"
                                     for t in f.record.tasks for m in t.metrics if m.subset is None and m.eps in
                                     (None, 0.0) and m.shift is None))
                  for f in folders)
    return Export(files)


TSV = ExportFormat("tsv", "one tab-separated line per task and metric", build)
WRONG = ExportFormat("not-its-name", "an entry point whose format has another name", build)
"""


def _install(site, *, name: str = "tsv", attr: str = "TSV") -> None:
    """A distribution as pip leaves it from a local folder: its module, and a .dist-info with the entry point."""
    (site / "fake_export_plugin.py").write_text(MODULE)
    info = site / "fake_export_plugin-2.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-export-plugin\nVersion: 2.1\n")
    (info / "entry_points.txt").write_text(f"[{X.ENTRY_POINT_GROUP}]\n{name} = fake_export_plugin:{attr}\n")
    (info / "direct_url.json").write_text('{"url": "file:///src/fake-export-plugin", "dir_info": {"editable": true}}')


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The export formats as a process with the fake distribution installed sees them (restored after)."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    # the suite runs with none (tests/conftest.py); this distribution alone, not an installed plugin_pkg
    monkeypatch.setenv("RMBENCH_PLUGINS", "fake-export-plugin")

    def install(**kwargs) -> None:
        _install(site, **kwargs)
        monkeypatch.setattr(X.EXPORT_FORMATS, "_entries", dict(X.EXPORT_FORMATS._entries))
        monkeypatch.setattr(X.EXPORT_FORMATS, "_entry_points_loaded", False)

    yield install
    sys.modules.pop("fake_export_plugin", None)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "len"
    evaluate(EvalConfig(model="length", tasks=("ties_sample",), n_bootstrap=10, use_cache=False), out_dir=out)
    return out


def test_an_entry_point_registers_an_export_format_with_its_origin(installed):
    installed()
    assert "fake_export_plugin" not in sys.modules  # listed, not imported
    assert X.export_format_names() == (*X.BUILTIN_EXPORT_FORMATS, "tsv")  # the built-in ones first
    assert X.EXPORT_FORMATS.origin("tsv") == "entry point 'tsv' of fake-export-plugin"
    assert X.EXPORT_FORMATS.origin("every-eval-ever") == "built-in"
    assert X.EXPORT_FORMATS.source("every-eval-ever") is None
    module = sys.modules.get("fake_export_plugin") or __import__("fake_export_plugin")
    sha = hashlib.sha256(open(module.__file__, "rb").read()).hexdigest()
    assert X.EXPORT_FORMATS.source("tsv") == PluginSource("fake-export-plugin", "2.1", "fake_export_plugin", sha)
    assert X.export_format("tsv").description == "one tab-separated line per task and metric"


def test_rmbench_plugins_leaves_the_distribution_s_format_out(installed, monkeypatch):
    installed()
    monkeypatch.setenv("RMBENCH_PLUGINS", "some-other-plugin")
    assert "tsv" not in X.export_format_names()
    with pytest.raises(ConfigError, match="unknown export format 'tsv'"):
        X.export_format("tsv")


def test_rmbench_export_writes_a_plugin_s_format(installed, run, tmp_path):
    from rmbench.cli import app

    installed()
    result = CliRunner().invoke(app, ["export", str(run), "--format", "tsv", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (written,) = (tmp_path / "out").rglob("scores.tsv")
    lines = written.read_text().splitlines()
    assert lines and all(line.startswith("ties_sample\t") for line in lines)
    assert any(line.split("\t")[1] == "pairwise_accuracy" for line in lines)


def test_an_entry_point_whose_format_has_another_name_is_one_error_naming_its_origin(installed):
    installed(name="tsv", attr="WRONG")
    for _ in range(2):  # asked again, it fails again
        with pytest.raises(ConfigError, match="export format 'tsv' from entry point 'tsv' of fake-export-plugin is "
                                              "not an ExportFormat named 'tsv' .got ExportFormat 'not-its-name'."):
            X.export_format("tsv")


def test_an_entry_point_named_like_a_built_in_format_is_refused(installed):
    installed(name="every-eval-ever")
    with pytest.raises(RegistryError, match="duplicate export format name 'every-eval-ever': defined by built-in "
                                            "and by entry point 'every-eval-ever' of fake-export-plugin"):
        X.export_format_names()


def test_register_export_format_takes_the_one_register_shape():
    fmt = X.ExportFormat("code-tsv", "registered in code", "fake_export_plugin:build")
    X.register_export_format("code-tsv", fmt)
    try:
        assert X.EXPORT_FORMATS.origin("code-tsv") == "register_export_format('code-tsv')"
        assert X.EXPORT_FORMATS.describe("code-tsv") == ("registered in code", "register_export_format('code-tsv')")
        with pytest.raises(RegistryError, match="duplicate export format name 'code-tsv'"):
            X.register_export_format("code-tsv", fmt)
        with pytest.raises(RegistryError, match="is not an ExportFormat named 'other'"):
            X.register_export_format("other", fmt)
    finally:
        X.EXPORT_FORMATS.unregister("code-tsv")
