"""Judge protocols as registered data: the built-ins keep their cache keys, a plugin protocol comes
in through the ``rmbench.judge_protocols`` entry points and runs end to end, a template file
declares its grade and scale in a front-matter block, and the adapter names no protocol.

The end-to-end runs are against a real HTTP server on 127.0.0.1 (tests/support/judge_server.py).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import re
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rmbench.cli import app  # noqa: E402
from rmbench.core.canonical import canonical_json, sha256_hex  # noqa: E402
from rmbench.errors import ConfigError  # noqa: E402
from rmbench.models.base import ScoreRequest  # noqa: E402
from rmbench.models.judge import judge_protocol as JP  # noqa: E402
from rmbench.models.judge.protocol import Protocol  # noqa: E402
from rmbench.models.judge.wire import ChatReply  # noqa: E402
from rmbench.registry import RegistryError  # noqa: E402
from tests.models.judge.test_judge import judgments, run  # noqa: E402
from tests.support.judge_server import ScriptedServer  # noqa: E402

JUDGE = Path(__file__).parents[3] / "rmbench" / "models" / "judge"

# --- the built-ins keep their keys ---------------------------------------------------------------

# Computed with the code before the registry (main at b66c384): per (mode, prompt, fidelity, seed),
# the first 16 hex digits of sha256(canonical identity) -- in the model fingerprint, the score
# cache's key -- and of the joined sha256s of every request body sent (with arena_hard's
# follow-up) -- the call cache's key. A cache written before the registry is still hit.
PINNED = {
    ("rating", None, None, None): ("c95f9bafc3c658b4", "77495dcac667ac5f"),
    ("rating", "rewardbench2", "strict", None): ("8832a0e37a824f01", "77495dcac667ac5f"),
    ("rating", None, None, 3): ("ad61b23182554f71", "d03fbe7ddd3638a1"),
    ("fourway", None, None, None): ("e331c234edfd3641", "afdd8b383d227940"),
    ("fourway", None, "strict", 5): ("7fb027158c5151f8", "ea71a5ba88569625"),
    ("pairwise", "arena_hard", None, None): ("a7fa2c4686b8737d", "4a987cb04a5104cc"),
    ("pairwise", "vanilla", None, None): ("3a7b5ad8fdb5137a", "8c17c2e62e552a27"),
    ("pairwise", "vanilla", "strict", 2): ("27e0708cad6745fc", "0949f8eede19e206"),
}
REQUESTS = {"rating": [ScoreRequest("What is 2+2?", "4", "g1", 0),
                       ScoreRequest("Name a colour.", "red", "g2", 1, subset="Ties")],
            "pairwise": [ScoreRequest("What is 2+2?", "4", "g1", 0, context=("5",))],
            "fourway": [ScoreRequest("Pick", "a", "g4", 0, context=("b", "c", "d"), subset="Math")]}
NO_LABEL = ChatReply("no label here", None, "stop", 0, 0, 0.0, 0, None)


@pytest.mark.parametrize("case", list(PINNED))
def test_the_built_in_protocols_keep_their_cache_keys(case):
    mode, prompt, fidelity, seed = case
    p = Protocol.make(mode, prompt, None, 0.0, 2 if seed == 3 else 1, seed, "rating", None, fidelity)
    bodies = []
    for req in REQUESTS[mode]:
        for call in p.calls(req)[0]:
            bodies.append(sha256_hex(canonical_json(call.body("m"))))
            if (more := p.continuation(call, NO_LABEL)) is not None:
                bodies.append(sha256_hex(canonical_json(more.body("m"))))
    got = (sha256_hex(canonical_json(p.identity()))[:16], hashlib.sha256(" ".join(bodies).encode()).hexdigest()[:16])
    assert got == PINNED[case]


def test_the_adapter_and_protocol_name_no_protocol():
    """No protocol-name branches: the names live in the registrations only."""
    names = {"rewardbench2", "rewardbench2_ties", "arena_hard", "vanilla"}
    for module in ("adapter.py", "protocol.py"):
        tree = ast.parse((JUDGE / module).read_text(encoding="utf-8"))
        strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not names & strings, (module, names & strings)


# --- the registry ------------------------------------------------------------------------------

def test_the_built_ins_are_registered_and_listed():
    keys = ["critic/processbench", "fourway/rewardbench2", "pairwise/arena_hard", "pairwise/mm_rewardbench",
            "pairwise/vanilla", "pairwise/vl_rewardbench", "rating/rewardbench2", "rating/rewardbench2_ties",
            "steps/rlhflow"]
    assert [key for key, _, origin in JP.listing() if origin == "built-in"] == keys
    assert JP.protocol_names("pairwise") == ["arena_hard", "mm_rewardbench", "vanilla", "vl_rewardbench"]
    ties = JP.judge_protocol("rating", "rewardbench2_ties")
    assert ties.official == JP.judge_protocol("rating", "rewardbench2").official and ties.scale == (1, 10)
    assert "need not consider depth" in ties.messages("q", ("a",), None)[0][1]  # the Ties prompt on every row
    result = CliRunner().invoke(app, ["models", "list"], env={"COLUMNS": "250"})
    assert result.exit_code == 0 and all(key in result.output for key in keys), result.output
    with pytest.raises(ConfigError, match=r"neither a named pairwise protocol \(arena_hard, mm_rewardbench, vanilla, "
                                          r"vl_rewardbench\).*arena_hard"):
        JP.judge_protocol("pairwise", "arena_hrd")
    with pytest.raises(RegistryError, match="duplicate judge protocol name 'pairwise/vanilla'"):
        JP.register_judge_protocol("pairwise/vanilla", JP.judge_protocol("pairwise", "vanilla"))
    with pytest.warns(DeprecationWarning), pytest.raises(RegistryError, match="duplicate judge protocol name"):
        JP.register_judge_protocol(JP.judge_protocol("pairwise", "vanilla"))  # the older one-argument form
    vanilla = JP.judge_protocol("pairwise", "vanilla")
    for change, message in [({"mode": "ranking"}, "mode must be one of"),
                            ({"scale": (1, 10)}, "in mode rating only"),
                            ({"mode": "rating", "scale": (5, 1)}, "lowest < highest")]:
        with pytest.raises(ValueError, match=message):
            dataclasses.replace(vanilla, **change)


def how_to_plugin() -> str:
    """The Prometheus-style protocol docs/how-to/add-model.md shows: it includes the module of the plugin
    package (tests/plugin_pkg, which tests/plugins/test_plugins.py installs), so the how-to's code is what runs."""
    shown = "tests/plugin_pkg/rmbench_plugin_example/judge.py"
    page = (Path(__file__).parents[3] / "docs" / "how-to" / "add-model.md").read_text(encoding="utf-8")
    assert f'```python\n--8<-- "{shown}"\n```' in page, "the how-to's protocol example is gone"
    return (Path(__file__).parents[3] / shown).read_text(encoding="utf-8") + "\nNOT_A_PROTOCOL = 'prometheus'\n"


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The how-to's Prometheus-style protocol as an installed package gives it: an entry point."""
    from rmbench import registry

    (tmp_path / "prometheus_plugin.py").write_text(how_to_plugin())
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh = registry.Registry("judge protocol", entry_point_group=JP.ENTRY_POINT_GROUP, kind=JP.PROTOCOLS.kind,
                              key=JP.PROTOCOLS.key)
    for key, description, origin in JP.listing():
        fresh.register(key, JP.PROTOCOLS.get(key), description=description, origin=origin)
    monkeypatch.setattr(JP, "PROTOCOLS", fresh)
    points = [EntryPoint("rating/prometheus", "prometheus_plugin:PROMETHEUS", JP.ENTRY_POINT_GROUP),
              EntryPoint("rating/broken", "prometheus_plugin:NOT_A_PROTOCOL", JP.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: points if group == JP.ENTRY_POINT_GROUP else [])
    monkeypatch.setenv(registry.PLUGINS_VARIABLE, "all")  # the suite runs with none (tests/conftest.py)
    yield tmp_path
    sys.modules.pop("prometheus_plugin", None)


def prometheus_reply(body: dict) -> str:
    """Grades 1..7 from the answer's length: 6 and 7 lie outside the protocol's 1-5 scale."""
    answer = body["messages"][-1]["content"].split("###Response: ")[1].split("\n###Score Rubrics")[0]
    return f"Feedback: the response is adequate. [RESULT] {len(answer) % 7 + 1}"


def test_a_plugin_protocol_through_the_entry_points_runs_end_to_end(plugin, tmp_path):
    listed = {key: description for key, description, _ in JP.listing()}
    assert listed["rating/prometheus"] == "plugin (prometheus_plugin:PROMETHEUS)"
    assert "prometheus_plugin" not in sys.modules  # listed, not imported
    with pytest.raises(ConfigError, match="'rating/broken' from entry point .* is not a JudgeProtocol"):
        with ScriptedServer() as server:  # a broken plugin: one line, before any call
            run(server, tmp_path, ("ties_sample",), limit=1, prompt="broken")
    with pytest.raises(ConfigError, match="no official client to follow"):
        Protocol.make("rating", "prometheus", None, 0.0, 1, None, "rating", None, "official")
    with pytest.raises(ConfigError, match="does not read a rating's top_logprobs"):
        Protocol.make("rating", "prometheus", None, 0.0, 1, None, "expected", None)
    with ScriptedServer(reply=prometheus_reply) as server:
        record, folder = run(server, tmp_path, ("ties_sample",), limit=3, prompt="prometheus")
        sent = server.chat_requests()
    assert sent and all(b["max_tokens"] == 512 and b["messages"][0]["role"] == "system" for b in sent)
    rows = judgments(folder)
    grades = [int(re.search(r"\[RESULT\] (\d)", r["text"]).group(1)) for r in rows]
    assert {g for g in grades if g > 5} and {g for g in grades if g <= 5}  # both kinds occur
    assert [r["parsed"] for r in rows] == [float(g) if g <= 5 else None for g in grades]
    replies = record.tasks[0].judge_replies
    assert replies.fidelity == "strict" and replies.no_verdict == sum(g > 5 for g in grades)
    assert replies.left_out == replies.responses_no_verdict > 0  # unparsed=skip: left out, as any no-verdict
    ident = Protocol.make("rating", "prometheus", None, 0.0, 1, None, "rating", None).identity()
    rubric = sys.modules["prometheus_plugin"].RUBRIC
    assert ident["prompt"] == "prometheus" and ident["prompt_sha256"] == hashlib.sha256(rubric.encode()).hexdigest()


def test_a_plugin_protocol_s_package_and_code_are_in_the_judge_s_call_fingerprint(tmp_path, monkeypatch):
    """Issue 52: the judge's calls are keyed by its protocol's distribution and, installed from a local
    folder, the protocol module's sha256 (an edit to it replays no old call); a built-in protocol's
    key is what it was."""
    from rmbench import registry
    from rmbench.core.specs import ModelSpec
    from rmbench.models import build_model, parse_model_spec

    built_ins = [(key, JP.PROTOCOLS.get(key), origin) for key, _, origin in JP.listing()]  # before it is installed
    module = tmp_path / "prometheus_plugin.py"
    module.write_text(how_to_plugin())
    info = tmp_path / "prometheus_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: prometheus-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{JP.ENTRY_POINT_GROUP}]\nrating/prometheus = prometheus_plugin:PROMETHEUS\n")
    (info / "direct_url.json").write_text('{"url": "file:///src/prometheus-plugin", "dir_info": {"editable": true}}')
    monkeypatch.syspath_prepend(str(tmp_path))
    # this distribution only: an installed tests/plugin_pkg (as .ci/run installs it) registers rating/prometheus too
    monkeypatch.setenv(registry.PLUGINS_VARIABLE, "prometheus-plugin")

    def judge(prompt: str | None, server: ScriptedServer):
        fresh = registry.Registry("judge protocol", entry_point_group=JP.ENTRY_POINT_GROUP, kind=JP.PROTOCOLS.kind,
                                  key=JP.PROTOCOLS.key)  # reads the file again
        for key, protocol, origin in built_ins:
            fresh.register(key, protocol, origin=origin)
        monkeypatch.setattr(JP, "PROTOCOLS", fresh)
        base = parse_model_spec("judge:judge-model")
        args = {**base.args_dict, "base_url": server.base_url, "mode": "rating",
                **({"prompt": prompt} if prompt else {})}
        return build_model(ModelSpec.make(base.name, base.kind, args))

    try:
        with ScriptedServer() as server:
            first = judge("prometheus", server)
            plugin = first.protocol.plugin
            assert plugin is not None and (plugin.name, plugin.version, plugin.module) == (
                "prometheus-plugin", "1.0", "prometheus_plugin")
            assert plugin.sha256 == hashlib.sha256(module.read_bytes()).hexdigest()
            assert first.plugins() == (plugin,) and first.protocol.identity()["plugin"] == plugin.to_json()
            module.write_text(module.read_text() + "\n# an edit\n")
            edited = judge("prometheus", server)
            assert edited.protocol.plugin.sha256 != plugin.sha256
            assert edited.call_fingerprint() != first.call_fingerprint()
            built_in = judge(None, server)  # the mode's default protocol, built in
            assert built_in.protocol.plugin is None and built_in.plugins() == ()
            assert "protocol_plugin" not in canonical_json(built_in.identity())
    finally:
        sys.modules.pop("prometheus_plugin", None)


# --- template files ----------------------------------------------------------------------------

FIVE = "---\ngrade: '\\[\\[(\\d+)\\]\\]'\nscale: 1-5\n---\nRate 1 to 5 as [[N]].\n{question}\n{answer}\n"


def _template(tmp_path: Path, text: str, name: str = "t.txt") -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def test_a_template_without_front_matter_is_refused_with_the_block_to_add(tmp_path):
    bare = _template(tmp_path, "Rate 1 to 10.\n{question}\n{answer}\n")
    with pytest.raises(ConfigError) as refused:
        Protocol.make("rating", bare, None, 0.0, 1, None, "rating", None)
    message = str(refused.value)
    assert "\n" not in message and "add this block as its first lines: ---\\ngrade: '(\\d+)\\s*$'\\nscale: " \
        "1-10\\n---\\n" in message, message
    with pytest.raises(ConfigError, match=r"---\\ngrade: '\\\[\\\[\(\[AB<>=\]\+\)\\\]\\\]'\\n---"):
        Protocol.make("pairwise", _template(tmp_path, "{question} {answer_a} {answer_b}", "p.txt"), None, 0.0, 1,
                      None, "rating", None)
    for header, message in [("grade: '(\\d+)'\n", "needs scale: MIN-MAX"),
                            ("grade: '\\d+'\nscale: 1-5\n", "exactly one group"),
                            ("grade: '(\\d+'\nscale: 1-5\n", "not a regular expression"),
                            ("grade: '(\\d+)'\nscale: 5-1\n", "needs scale: MIN-MAX"),
                            ("grades: '(\\d+)'\nscale: 1-5\n", "unknown front-matter key 'grades'; did you mean"),
                            ("grade: \"\\d\"\n", "line 2: the front matter is not YAML")]:
        with pytest.raises(ConfigError, match=message):
            Protocol.make("rating", _template(tmp_path, f"---\n{header}---\n{{question}} {{answer}}"), None, 0.0,
                          1, None, "rating", None)


def test_a_template_reads_its_declared_grade_and_a_grade_outside_the_scale_is_no_verdict(tmp_path):
    p = Protocol.make("rating", _template(tmp_path, FIVE), None, 0.0, 1, None, "rating", None)
    assert p.fidelity == "strict" and p.unparsed == "skip" and p.max_tokens == 1024

    def reply(text: str, finish: str = "stop") -> list[list[ChatReply]]:
        return [[ChatReply(text, None, finish, 0, 0, 0.0, 0, None)]]

    req = ScoreRequest("q", "a")
    assert p.calls(req)[0][0].messages == (("user", "Rate 1 to 5 as [[N]].\nq\na\n"),)  # the block is not sent
    assert p.value(req, reply("Good. [[4]]")) == (4.0, [4.0])
    assert p.value(req, reply("[[2]] at first, then [[5]]")) == (5.0, [5.0])  # the last grade
    assert p.value(req, reply("Excellent. [[7]]")) == (None, [None])  # outside 1-5: no verdict
    assert p.value(req, reply("[[0]]")) == (None, [None])
    assert p.value(req, reply("Rating: 4")) == (None, [None])  # not the declared pattern
    assert p.value(req, reply("[[3]]", "length")) == (None, [None])  # strict: cut off
    assert p.identity()["prompt"] == {"template": FIVE} and p.text_sha256 == sha256_hex(FIVE)
    with pytest.raises(ConfigError, match="does not read a rating's top_logprobs"):
        Protocol.make("rating", _template(tmp_path, FIVE), None, 0.0, 1, None, "expected", None)


def test_pairwise_and_fourway_templates_read_their_declared_labels(tmp_path):
    pair = _template(tmp_path, "---\ngrade: 'Winner: (\\w)'\n---\n{question}\n{answer_a}\n{answer_b}\n", "p.txt")
    p = Protocol.make("pairwise", pair, None, 0.0, 1, None, "rating", None)
    assert p.continuation(p.calls(ScoreRequest("q", "x", context=("y",)))[0][0],
                          ChatReply("no verdict", None, "stop", 0, 0, 0.0, 0, None)) is None  # never asked again
    assert [p.spec.parse(t) for t in ("Winner: A", "Winner: B", "Winner: A. Winner: B", "none")] == \
        ["A>B", "B>A", None, None]
    with pytest.raises(ConfigError, match="scale is for mode rating"):
        Protocol.make("pairwise", _template(tmp_path, "---\ngrade: '(A|B)'\nscale: 1-2\n---\n{question} "
                                                      "{answer_a} {answer_b}", "q.txt"), None, 0.0, 1, None,
                      "rating", None)
    four = _template(tmp_path, "---\ngrade: 'Best: (\\w)'\n---\n{question} {answer_a} {answer_b} {answer_c} "
                               "{answer_d}", "f.txt")
    f = Protocol.make("fourway", four, None, 0.0, 1, None, "rating", None)
    assert [f.spec.parse(t) for t in ("Best: C", "Best: E", "")] == ["C", None, None]
    req = ScoreRequest("q", "a", "g", 0, context=("b", "c", "d"))
    texts = f.fourway_texts(req)
    slot = "ABCD"[texts.index("a")]
    reply = [[ChatReply(f"Best: {slot}", None, "stop", 0, 0, 0.0, 0, None)]]
    assert f.value(req, reply) == (1.0, [slot])
    assert f.value(req, [[ChatReply("Best: E", None, "stop", 0, 0, 0.0, 0, None)]]) == (None, [None])


def test_the_template_and_the_refusal_shown_in_judges_md_are_true(tmp_path, monkeypatch):
    page = (Path(__file__).parents[3] / "docs" / "judges.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", page, re.S)
    template = next(b for b in blocks if b.startswith("---\ngrade:"))
    p = Protocol.make("rating", _template(tmp_path, template), None, 0.0, 1, None, "rating", None)
    assert p.spec.scale == (1, 5)
    assert [p._grade(t) for t in ("Clear. [RESULT] 4", "[RESULT] 6", "4")] == [4.0, None, None]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rate.txt").write_text("Rate.\n{question}\n{answer}\n")
    with pytest.raises(ConfigError) as refused:
        Protocol.make("rating", "rate.txt", None, 0.0, 1, None, "rating", None)
    shown = next(b for b in blocks if b.startswith("error: judge prompt rate.txt"))
    assert shown.strip() == f"error: {refused.value}"
