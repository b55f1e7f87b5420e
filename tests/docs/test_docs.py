"""The documentation site (docs/, mkdocs.yml): its generated references are current, the
results.json schema it ships validates every results.json rmbench writes, the CLI reference lists
every option ``--help`` shows, and ``mkdocs build --strict`` passes where MkDocs is installed."""

from __future__ import annotations

import html
import importlib.resources
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
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
    from tests.support.golden_runs import cases, run_case

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
    from tests.support.golden_runs import cases, run_case

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
def test_the_site_builds_strict(site):
    assert (site / "index.html").is_file()


_LITERAL_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const|type):(?:<code>|`)")


@pytest.mark.slow
def test_no_page_of_the_built_site_shows_a_sphinx_role_literally(site):
    """Docstrings cross-reference with Sphinx roles; on the site they are links (docs/gen/sphinx_roles.py)
    or plain code, never ``:class:`X``` as written."""
    shown = {str(page.relative_to(site)): len(_LITERAL_ROLE.findall(page.read_text(encoding="utf-8")))
             for page in site.rglob("*.html")}
    assert {page: n for page, n in shown.items() if n} == {}
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    # :class:`Counted` in MetricDef's docstring resolves, in its module's scope, to the documented Counted
    assert 'href="#rmbench.core.metric_def.Counted"><code>Counted</code></a>' in api


def test_a_sphinx_role_becomes_a_cross_reference_or_plain_code():
    sys.path.insert(0, str(REPO / "docs" / "gen"))
    import sphinx_roles

    targets = {"pkg.mod.Counted": "pkg.api.Counted", "pkg.mod.Counted.of": "pkg.api.Counted.of"}
    resolve = {"Counted": "pkg.mod.Counted"}.__getitem__
    text = ("see :class:`Counted`, :meth:`~pkg.mod.Counted.of`, :func:`pkg.other.f`, :mod:`pkg.mod`, "
            ":data:`the limit <pkg.mod.LIMIT>` and :py:class:`Missing`")
    assert sphinx_roles.rewrite(text, resolve, targets) == (
        "see [`Counted`][pkg.api.Counted], [`of()`][pkg.api.Counted.of], `pkg.other.f()`, `pkg.mod`, "
        "`the limit` and `Missing`")


class _Sections(HTMLParser):
    """A built page's h2 sections: {heading text: {"text": the section's text, "rows": [[cell text,
    ...], ...]}}; text is the page's text as a browser shows it (tags dropped, entities read)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, dict] = {}
        self._heading: list[str] | None = None
        self._current: dict | None = None
        self._cell: list[str] | None = None
        self._skip = 0  # inside a heading's permalink

    def handle_starttag(self, tag, attrs):
        if tag == "h2":
            self._heading = []
        elif tag == "a" and ("class", "headerlink") in attrs:
            self._skip += 1
        elif tag == "tr" and self._current is not None:
            self._current["rows"].append([])
        elif tag in ("td", "th") and self._current is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "h2" and self._heading is not None:
            self._current = {"text": [], "rows": []}
            self.sections[_norm("".join(self._heading))] = self._current
            self._heading = None
        elif tag == "a" and self._skip:
            self._skip -= 1
        elif tag in ("td", "th") and self._cell is not None:
            self._current["rows"][-1].append(_norm("".join(self._cell)))
            self._cell = None

    def handle_data(self, data):
        if self._skip:
            return
        if self._heading is not None:
            self._heading.append(data)
            return
        if self._cell is not None:
            self._cell.append(data)
        if self._current is not None:
            self._current["text"].append(data)


def _norm(text: str) -> str:
    return " ".join(text.split())


def _as_help_shows(text: str, markup_mode: str | None) -> str:
    """A help string as ``--help`` prints it: typer's rich markup mode reads it as rich markup
    (``\\[x]`` shows ``[x]``); without one (rmbench's plain help) it is printed as written."""
    if markup_mode == "rich":
        from rich.text import Text

        return Text.from_markup(text).plain
    return text


@pytest.mark.slow
def test_the_built_cli_reference_shows_every_option_as_help_does(site):
    """Every option of every command reads on the built page as ``--help`` prints it: its usage
    (``--data TASK=[PART=]PATH``) and its help (``runs/<name>__<tasks>``) with every placeholder and
    bracket intact, no Markdown escape or HTML tag eating one."""
    import typer.main
    from typer.testing import CliRunner

    import rmbench.cli.app  # noqa: F401
    from rmbench.cli.common import app

    parser = _Sections()
    parser.feed((site / "reference" / "cli" / "index.html").read_text(encoding="utf-8"))
    sections = parser.sections

    def commands(group, path):
        for name, cmd in group.commands.items():
            if not getattr(cmd, "hidden", False):
                yield [*path, name], cmd
                if hasattr(cmd, "commands"):
                    yield from commands(cmd, [*path, name])

    checked = 0
    for path, cmd in commands(typer.main.get_command(app), []):
        title = " ".join(["rmbench", *path])
        assert title in sections, f"the built CLI reference has no section {title!r}: run `{REFRESH}`"
        section = sections[title]
        shown = _norm("".join(section["text"]))
        help_output = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}).output
        squeezed_help = re.sub(r"\s+", "", help_output)
        if cmd.help:
            assert _norm(cmd.help.replace("\b", "")) in shown, (title, cmd.help)
        if hasattr(cmd, "commands"):
            continue
        rows = {row[0]: row[1] for row in section["rows"] if len(row) == 2}
        ctx = cmd.context_class(cmd, info_name=path[-1])
        mode = getattr(cmd, "rich_markup_mode", None)
        for param in cmd.params:
            record = None if getattr(param, "hidden", False) else param.get_help_record(ctx)
            if record is None:
                continue
            usage, _ = record
            where = f"{title} {usage}"
            assert usage in rows, f"{where}: not on the built page, whose rows read {sorted(rows)}"
            text = rows[usage]
            if param.help:
                assert _norm(_as_help_shows(param.help, mode)) in text, f"{where}: the page reads {text!r}"
            # what the page shows is what --help prints (wrapped there: compared without whitespace)
            assert re.sub(r"\s+", "", usage + text) in squeezed_help, f"{where}: the page reads {text!r}"
            checked += 1
    assert checked >= 60, checked


def test_every_test_the_fault_model_names_exists():
    """docs/fault_model.md is written by hand; its last column names the test that injects each
    fault, and each such test must exist (a renamed test would leave the page pointing nowhere)."""
    page = (REPO / "docs" / "fault_model.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`(test_\w+)`", page))
    files = set(re.findall(r"`(tests/(?:\w+/)*test_\w+\.py)", page))
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "tests").rglob("test_*.py"))
    assert names, "no test named in docs/fault_model.md"
    missing = sorted(n for n in names if not re.search(rf"def {n}\b", source))
    assert not missing, f"docs/fault_model.md names tests that do not exist: {missing}"
    assert files and all((REPO / f).is_file() for f in files), files


WIDTH_PROBE = ("<script>window.addEventListener('load',function(){var o=document.createElement('pre');"
               "o.id='probe';var m=0,w='';document.querySelectorAll('.md-content pre>code,.md-content table')"
               ".forEach(function(e){var x=e.scrollWidth-e.clientWidth;if(x>m){m=x;w=e.textContent.slice(0,60)}});"
               "o.textContent=JSON.stringify({page:document.documentElement.scrollWidth,inner:window.innerWidth,"
               "over:m,what:w});document.body.appendChild(o);});</script>")
"""Appended to a built page: how far its widest code block or table sticks out of its box."""


@pytest.mark.slow
def test_every_page_fits_a_1400_px_window(site, tmp_path):
    """No page scrolls sideways and no code block or table scrolls inside the page (long command
    lines wrap where they must), read in a headless browser at 1400 x 900."""
    from tests.support.browser import find_browser

    browser = find_browser()
    pages = sorted(p for p in site.rglob("index.html") if "search" not in p.parts and p.parent != site / "404")
    assert len(pages) >= 25
    worst = []
    for page in pages:
        probe = page.with_name("width_probe.html")
        text = page.read_text(encoding="utf-8").replace("</body>", WIDTH_PROBE + "</body>")
        probe.write_text(text, encoding="utf-8")
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900",
                               "--virtual-time-budget=2000", "--dump-dom", probe.as_uri()],
                              capture_output=True, text=True, timeout=120,
                              env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
        found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, flags=re.S)
        assert found, (page, done.stderr[-1500:])
        m = json.loads(html.unescape(found.group(1)))
        if m["page"] > m["inner"] or m["over"] > 2:
            worst.append((str(page.relative_to(site)), m))
    assert not worst, worst


def test_each_page_says_where_the_code_it_includes_lives():
    """A snippet include (``--8<-- "tests/plugin_pkg/..."``) shows nothing on GitHub: the line before
    its code block names the file, so the page reads there too."""
    missing = []
    for page in sorted((REPO / "docs").rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = re.match(r'\s*--8<-- "((?:tests|examples)/[^":]+)', line)
            if m and not (i >= 3 and f"`{m.group(1)}`" in lines[i - 3]):
                missing.append(f"{page.relative_to(REPO)}:{i + 1} {m.group(1)}")
    assert not missing
