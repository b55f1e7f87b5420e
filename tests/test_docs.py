"""The documentation site (docs/, mkdocs.yml): its generated references are current, the
results.json schema it ships validates every results.json rmbench writes, the CLI reference lists
every option ``--help`` shows, and ``mkdocs build --strict`` passes where MkDocs is installed."""

from __future__ import annotations

import importlib.resources
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))
import references  # noqa: E402  (docs/gen/references.py)

REFRESH = "python docs/gen/references.py"


def test_the_generated_references_are_current():
    for rel, text in references.generate().items():
        shipped = REPO / rel
        assert shipped.is_file() and shipped.read_text(encoding="utf-8") == text, (
            f"{rel} is stale: run `{REFRESH}` and commit what it rewrites")


def _schema() -> dict:
    return json.loads((importlib.resources.files("rmbench.results.storage") / "results.schema.json").read_text())


def _validate(doc: dict, where: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"{where}: " + "; ".join(f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5])


def test_the_schema_is_valid_and_shipped_in_the_package():
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(_schema())
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^"rmbench\.results\.storage" = \[.*"\*\.json"', pyproject, re.M)


def test_the_schema_validates_every_golden_run_and_the_v1_file(tmp_path):
    from golden_runs import cases, run_case

    (tmp_path / "data").mkdir()
    checked = 0
    for name, case in cases(tmp_path / "data").items():
        run_case(case, tmp_path / name)
        for results in (tmp_path / name).rglob("results.json"):
            _validate(json.loads(results.read_text()), f"{name}: {results.parent.name}")
            checked += 1
    assert checked >= 12, checked  # two models on each of the six cases
    _validate(json.loads((REPO / "tests" / "golden" / "v1_run" / "results.json").read_text()), "v1_run")


def test_the_schema_refuses_a_broken_results_json(tmp_path):
    from golden_runs import cases, run_case

    (tmp_path / "data").mkdir()
    run_case(cases(tmp_path / "data")["main_job"], tmp_path / "run")
    doc = json.loads(next((tmp_path / "run").rglob("results.json")).read_text())
    doc["tasks"][0]["metrics"][0]["value"] = "high"
    with pytest.raises(AssertionError, match="value"):
        _validate(doc, "broken")


def test_the_cli_reference_lists_every_option_of_eval_help():
    from typer.testing import CliRunner

    import rmbench.cli.app  # noqa: F401
    from rmbench.cli.common import app

    help_text = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output
    options = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", help_text)) - {"--help"}
    assert len(options) >= 25, options
    page = (REPO / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    section = page[page.index("## `rmbench eval`"):]
    section = section[:section.find("\n## ", 1)]
    missing = sorted(o for o in options if f"{o} " not in section and f"{o}`" not in section)
    assert not missing, f"docs/reference/cli.md lacks {missing}: run `{REFRESH}`"


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    mkdocs = shutil.which("mkdocs") or str(Path(sys.executable).parent / "mkdocs")
    if not Path(mkdocs).exists():
        pytest.skip("MkDocs is not installed (pip install -e '.[docs]')")
    result = subprocess.run([mkdocs, "build", "--strict", "-d", str(tmp_path / "site")], cwd=REPO,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_every_test_the_fault_model_names_exists():
    """docs/fault_model.md is written by hand; its last column names the test that injects each
    fault, and each such test must exist (a renamed test would leave the page pointing nowhere)."""
    page = (REPO / "docs" / "fault_model.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(test_\w+)`", page))
    files = set(re.findall(r"`(tests/test_\w+\.py)", page))
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").glob("*.py"))
    assert names, "no test named in docs/fault_model.md"
    missing = sorted(n for n in names if not re.search(rf"def {n}\b", source))
    assert not missing, f"docs/fault_model.md names tests that do not exist: {missing}"
    assert all((REPO / f).is_file() for f in files), files
