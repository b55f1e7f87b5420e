"""Style rewriters (``rmbench shift --rewriter style:NAME``): each keeps the words, in order, and
changes the surface; end to end through ``write_shifted``, the CLI and ``paired_shift``."""

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.errors import ConfigError
from rmbench.results.storage.folder import load_run
from rmbench.rewrite.shift import make_rewriter, write_shifted
from rmbench.rewrite.style import (
    CLOSING,
    CLOSINGS,
    OPENERS,
    PREAMBLE,
    STYLES,
    apply_style,
    ascii_punctuation,
    bullets_to_prose,
    markdown_to_plain,
    plain,
    plain_to_markdown,
    polite,
    sentences,
    spacious,
    whitespace,
)
from rmbench.tasks.shift import PairedShiftTask


def words(text: str) -> list[str]:
    """The content the styles must keep: runs of letters and digits, case aside."""
    return re.findall(r"[^\W_]+", text.lower())


def is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(w in it for w in small)


def dropped(out: str, text: str) -> list[str]:
    """The words of ``text`` that ``out`` lacks (``out``'s words must be a subsequence of them)."""
    a, b = words(out), words(text)
    assert is_subsequence(a, b), (out, text)
    rest = list(b)
    for w in a:
        rest.remove(w)
    return rest


NUMBERED = re.compile(r"(?m)^(\s*(?:#+\s+|>\s?)*)\d{1,3}[.)]\s")

MARKDOWN = """# Cooking **pasta**

Boil *salted* water, then add the __pasta__ and `stir` (see `**kwargs**`).

## Steps ##

1. Boil water
2) Add _pasta_
- Drain it,
  and serve

> Tip: see [the guide](https://example.com/a_b_c) or <https://x.org/_y_>; snake_case and 2*3*4 stay.

---

```python
# keep me **exactly**
x = 1
```"""

PLAIN = ("Paris is the capital of France. It has been the capital since 987. It is also the largest city.\n\n"
         "Other facts follow here. The city has about two million people, e.g. Many tourists.\n\n"
         "One sentence only.")

SAMPLES = {
    "markdown-to-plain": MARKDOWN,
    "plain-to-markdown": PLAIN,
    "bullets-to-prose": "Ingredients:\n- eggs\n- milk,\n- **flour**\n\n1. Mix them\n2. Bake!",
    "whitespace": "  \n\nToo   many\tspaces.   \n\n\n\nAnd\u00a0blank lines.\t\r\n\n",
    "spacious": "One sentence. Two sentences!\nA new line.\n\nA paragraph.",
    "polite": "The answer is 4.",
    "plain": "Sure! Great question!\n\nThe answer is 4.\n\nI hope this helps! Let me know if you have any questions.",
    "ascii-punctuation": "\u201cQuoted\u201d \u2014 it\u2019s fine\u2026 pages 3\u20135",
}


def test_every_style_has_a_sample_and_a_one_line_summary():
    assert set(SAMPLES) == set(STYLES)
    assert all(s.summary and "\n" not in s.summary and s.version >= 1 for s in STYLES.values())


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_style_changes_the_surface_and_keeps_the_words(name):
    text = SAMPLES[name]
    out = apply_style(STYLES[name], text)
    assert out != text and out.strip()
    if name == "polite":
        assert words(out) == words(PREAMBLE) + words(text) + words(CLOSING)
    elif name == "plain":
        assert words(out) == words("The answer is 4.")
    elif name in ("markdown-to-plain", "bullets-to-prose"):  # list numbers go with their markers
        assert words(out) == words(NUMBERED.sub(r"\1", text))
    else:
        assert words(out) == words(text)


def test_markdown_to_plain_rules():
    out = markdown_to_plain(MARKDOWN)
    assert out.split("\n")[:12] == [
        "Cooking pasta", "", "Boil salted water, then add the pasta and stir (see `**kwargs**`).", "", "Steps", "",
        "Boil water", "Add pasta", "Drain it,", "  and serve", "",
        "Tip: see the guide (https://example.com/a_b_c) or https://x.org/_y_; snake_case and 2*3*4 stay."]
    assert out.endswith("\n\n```python\n# keep me **exactly**\nx = 1\n```")  # the rule line blank, code kept
    assert markdown_to_plain("[https://a.b](https://a.b) and ![](pic.png), a * b, \\*kept\\*") == \
        "https://a.b and pic.png, a * b, \\*kept\\*"
    assert markdown_to_plain("***both*** and ~~struck~~ and | a | b |") == "both and ~~struck~~ and | a | b |"
    assert markdown_to_plain("Plain text, nothing to do.") == "Plain text, nothing to do."


def test_plain_to_markdown_rules():
    assert plain_to_markdown(PLAIN) == (
        "**Paris is the capital of France.**\n\n- It has been the capital since 987.\n- It is also the largest city."
        "\n\n- Other facts follow here.\n- The city has about two million people, e.g. Many tourists.\n\n"
        "One sentence only.")
    assert plain_to_markdown("It is four.") == "**It is four.**"
    assert plain_to_markdown("Steps:\nMix.\nBake.") == "**Steps:**\n\n- Mix.\n- Bake."
    long_first = " ".join(["word"] * 13) + ". Second one."
    assert plain_to_markdown(long_first) == f"- {' '.join(['word'] * 13)}.\n- Second one."
    already = "# Title\n\n- a\n- b"
    assert plain_to_markdown(already) == already
    assert sentences("Dr. Who met J. Smith. Then 3.5 hours passed! Why? \"Quoted.\" (Aside.)") == [
        "Dr. Who met J. Smith.", "Then 3.5 hours passed!", "Why?", "\"Quoted.\"", "(Aside.)"]
    # and back: markdown-to-plain undoes it, word for word
    assert words(markdown_to_plain(plain_to_markdown(PLAIN))) == words(PLAIN)


def test_bullets_to_prose_rules():
    assert bullets_to_prose(SAMPLES["bullets-to-prose"]) == "Ingredients: Eggs. Milk. **flour**.\n\nMix them. Bake!"
    assert bullets_to_prose("Intro line\n- a\n  more\n\n- b?\nAfter.") == "Intro line\nA more. B?\nAfter."
    assert bullets_to_prose("---\n* * *\nno list") == "---\n* * *\nno list"
    assert bullets_to_prose("```\n- code\n```") == "```\n- code\n```"


def test_whitespace_and_spacious_rules():
    assert whitespace(SAMPLES["whitespace"]) == "Too many spaces.\n\nAnd blank lines."
    code = "```\n  keep   this  \n\n\n```"
    assert whitespace(f"    indented  line  \r\n{code}\n") == f"    indented line\n{code}"
    assert spacious(SAMPLES["spacious"]) == "One sentence.  Two sentences!\nA new line.\n\n\nA paragraph."
    assert spacious("Only one.") == "Only one."
    assert whitespace(spacious(PLAIN)) == whitespace(PLAIN)


def test_polite_and_plain_rules():
    assert polite("  The answer is 4. ") == f"{PREAMBLE}\n\nThe answer is 4.\n\n{CLOSING}"
    assert polite(polite("x")) == polite("x")
    assert plain(SAMPLES["plain"]) == "The answer is 4."
    assert plain(polite("The answer is 4.")) == "The answer is 4."
    assert plain("sure!   here is my answer. Yes.") == "Yes."
    assert plain("Good luck!") == "Good luck!"  # nothing would be left: kept
    assert plain("Surely not. Hope this helps you.") == "Surely not. Hope this helps you."  # whole phrases only
    assert all(p.strip() == p for p in OPENERS + CLOSINGS)


def test_ascii_punctuation_rules():
    assert ascii_punctuation(SAMPLES["ascii-punctuation"]) == '"Quoted" -- it\'s fine... pages 3-5'
    assert ascii_punctuation("```\n\u201ccode\u201d\n```") == "```\n\u201ccode\u201d\n```"


def test_no_style_empties_a_text():
    for style in STYLES.values():
        for text in ("---", "Sure!", "# ", "- ", "x"):
            assert apply_style(style, text).strip()


PIECES = ["**", "*", "_", "__", "`", "``", "# ", "## ", "- ", "* ", "+ ", "1. ", "12) ", "> ", "[", "](", ")",
          "https://x.y/a_b", "<", ">", "\n", "\n\n", " ", "  ", "\t", "```\n", "~~~", "\\*", "---\n", ". ", "! ",
          ", ", ":", "\u201c", "\u2014", "\u00a0", "e.g. ", "Sure! ", " I hope this helps!", "\r\n"]
TEXT = st.lists(st.one_of(st.sampled_from(PIECES), st.from_regex(r"[A-Za-z0-9]{1,6}", fullmatch=True)),
                max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_idempotent_styles(text):
    for fn in (markdown_to_plain, whitespace, polite, plain, ascii_punctuation):
        once = fn(text)
        assert fn(once) == once, fn.__name__


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_words_kept_in_order_on_random_markdownish_text(text):
    for name in ("plain-to-markdown", "whitespace", "spacious", "ascii-punctuation"):
        assert words(apply_style(STYLES[name], text)) == words(text), name
    # markdown-to-plain drops only list numbers and a link text equal to its url
    assert all(w.isdigit() or w in words("https://x.y/a_b") for w in dropped(markdown_to_plain(text), text))
    assert all(w.isdigit() for w in dropped(bullets_to_prose(text), text))
    t, p, c = words(text), words(PREAMBLE), words(CLOSING)
    assert words(polite(text)) in (p + t + c, t + c, p + t, t)  # each phrase added unless already there
    kept = words(plain(text))  # a contiguous run of the words: only whole phrases at the ends go
    assert any(t[i:i + len(kept)] == kept for i in range(len(t) - len(kept) + 1))
    assert set(dropped(plain(text), text)) <= set(words(" ".join(OPENERS + CLOSINGS)))
    assert whitespace(spacious(text)) == whitespace(text)


def test_unknown_style_is_a_one_line_config_error():
    with pytest.raises(ConfigError) as info:
        make_rewriter("style:markdown-to-plian")
    message = str(info.value)
    assert "\n" not in message and "did you mean 'markdown-to-plain'" in message
    assert all(name in message for name in STYLES)


PAIRS = [{"prompt": "How do I boil pasta?", "chosen": "## Steps\n\n1. Boil **salted** water\n2. Add `pasta`",
          "rejected": "- Add the pasta to *cold* water"},
         {"prompt": "Capital of France?", "chosen": "Paris.", "rejected": "Lyon."}]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    return path


def test_write_shifted_with_a_style_needs_no_template(tmp_path, pairs_file):
    out = write_shifted(str(pairs_file), tmp_path / "plain.jsonl", rewriter_spec="style:markdown-to-plain")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["chosen"] == "Steps\n\nBoil salted water\nAdd pasta"
    assert rows[0]["rejected"] == "Add the pasta to cold water" and rows[1]["chosen"] == "Paris."
    assert {r["shift"] for r in rows} == {"style:markdown-to-plain"}
    assert rows[0]["id"].endswith(":style:markdown-to-plain")
    meta = json.loads((tmp_path / "plain.jsonl.meta.json").read_text())
    assert meta["rewriter"] == "style:markdown-to-plain"
    assert meta["rewriter_version"] == STYLES["markdown-to-plain"].version == 1
    assert meta["prompt_template"] is None and meta["unchanged_texts"] == 2 and meta["rows"] == 2
    groups = list(PairedShiftTask(path=str(out), shift="paraphrase").groups())
    assert [g.id for g in groups] == ["orig:0", "style:markdown-to-plain:0", "orig:1", "style:markdown-to-plain:1"]
    assert groups[1].source_id == "orig:0" and groups[1].shift == "style:markdown-to-plain"
    named = write_shifted(str(pairs_file), tmp_path / "named.jsonl", "style:polite", shift="style:nice")
    assert json.loads(named.read_text().splitlines()[0])["shift"] == "style:nice"
    with pytest.raises(ConfigError, match="takes no --prompt-template"):
        write_shifted(str(pairs_file), tmp_path / "t.jsonl", "style:polite", template="{text}")
    with pytest.raises(ConfigError, match="is not a shift label"):
        write_shifted(str(pairs_file), tmp_path / "s.jsonl", "style:polite", shift="not a label")
    with pytest.raises(ConfigError, match="unknown style 'nope'"):
        write_shifted(str(pairs_file), tmp_path / "n.jsonl", "style:nope")
    assert not (tmp_path / "n.jsonl").exists()


def test_cli_shift_with_a_style_then_eval(tmp_path, pairs_file):
    runner = CliRunner()
    out = tmp_path / "polite.jsonl"
    result = runner.invoke(app, ["shift", "--data", str(pairs_file), "--rewriter", "style:polite", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "Wrote" in result.output and "unchanged" not in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["chosen"] == f"{PREAMBLE}\n\nParis.\n\n{CLOSING}" and rows[1]["orig_chosen"] == "Paris."
    run_dir = tmp_path / "run"
    result = runner.invoke(app, ["eval", "--model", "length", "--tasks", "paraphrase_shift_sample", "--data",
                                 f"paraphrase_shift_sample={out}", "--bootstrap", "10", "--out", str(run_dir)])
    assert result.exit_code == 0, result.output
    record = load_run(run_dir).record
    assert record.task("paraphrase_shift_sample").shifts == ("none", "style:polite")
    bad = runner.invoke(app, ["shift", "--data", str(pairs_file), "--rewriter", "style:polit", "--out", str(out)])
    assert bad.exit_code != 0 and "did you mean 'polite'" in bad.output and "Traceback" not in bad.output
    again = runner.invoke(app, ["shift", "--data", str(pairs_file), "--rewriter", "style:plain", "--out",
                                str(tmp_path / "p.jsonl")])
    assert again.exit_code == 0 and "4 of 4 texts unchanged" in again.output


@pytest.mark.parametrize("columns", ["200", "80"])
def test_shift_help_names_every_style(columns):
    import typer

    result = CliRunner().invoke(app, ["shift", "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    command = typer.main.get_command(app).commands["shift"]
    assert all(" ".join(p.help.split()) in flat for p in command.params if getattr(p, "help", None))
    listed = flat.split("style:NAME (offline, no prompt template):")[1].split("Options:")[0].split()
    assert listed == list(STYLES)
