import json

import pytest

from rmbench.catalog import load_catalog
from rmbench.core.metric_registry import TIES_READING
from rmbench.core.types import data_fingerprint
from rmbench.errors import ConfigError
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.storage.folder import load_run
from rmbench.results.storage.record import comparability_key
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.loading import load_groups


def test_comparability_key_is_pinned():
    """Golden value: if this changes, bump KEY_VERSION (old leaderboards become incomparable)."""
    key = comparability_key("ties", 1, "0" * 64, 1, [0.1, 0.0], "sigma")
    assert key == "0ad923eeba03059954af2b51f5ac836c8e5bf4825c6d8a09df0c266e3eda5a9a"
    assert key == comparability_key("ties", 1, "0" * 64, 1, [0.0, 0.1], "sigma")  # order of eps is irrelevant
    assert key != comparability_key("ties_sample", 2, "0" * 64, 1, [0.0, 0.1], "sigma")
    assert key != comparability_key("ties", 1, "0" * 64, 1, [0.0, 0.1], "raw")


def test_score_arguments_are_apart_from_the_data_and_keep_the_keys():
    """A task's score arguments are recorded beside its data fingerprint; its keys are taken over
    both folded as earlier files folded them into their data fingerprint (by hand: sha256 of
    ``{"data": ..., "score_args": ...}``), so a task without any keeps the pinned key above, and a
    note names an argument that differs by its values, not as other data."""
    import hashlib

    from rmbench.core.canonical import canonical_json
    from rmbench.results.storage.record import TaskKeyParts

    data = "0" * 64
    plain = TaskKeyParts("ties", 1, data, 1, (0.1, 0.0), "sigma")
    assert plain.comparability_key == "0ad923eeba03059954af2b51f5ac836c8e5bf4825c6d8a09df0c266e3eda5a9a"
    at = {t: TaskKeyParts("processbench", 1, data, 1, (0.0,), "sigma", {"threshold": t}) for t in (0.5, 0.3)}
    folded = hashlib.sha256(canonical_json({"data": data, "score_args": {"threshold": 0.5}}).encode()).hexdigest()
    assert at[0.5].fingerprint == folded
    assert at[0.5].comparability_key == comparability_key("processbench", 1, folded, 1, [0.0], "sigma")
    assert at[0.5].comparability_key != at[0.3].comparability_key
    assert at[0.5].differences(at[0.3]) == ["threshold 0.5 vs 0.3"]
    other = TaskKeyParts("processbench", 1, "1" * 64, 1, (0.0,), "sigma", {"threshold": 0.3})
    assert at[0.5].differences(other) == ["data fingerprint 000000000000 vs 111111111111", "threshold 0.5 vs 0.3"]
    assert at[0.5].differences(at[0.5]) == []


def test_builtin_ties_data_is_pinned():
    """Golden value: editing tasks/data/ties_builtin.jsonl must come with a task version bump."""
    spec = load_catalog().task_spec("ties_sample")
    _, groups = load_groups(spec)
    assert spec.version == 1
    assert data_fingerprint(groups) == "0bee14202bc0ab1aba4ac0e882f8eb88c27e448acf8643447d96f892bf9e9cc1"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("runs")
    out = {}
    for model in ("oracle", "length", "constant"):
        evaluate(EvalConfig(model=model, n_bootstrap=50), out_dir=base / model)
        out[model] = base / model
    evaluate(EvalConfig(model="length", eps=(0.2,), n_bootstrap=50), out_dir=base / "length-eps")
    evaluate(EvalConfig(model="length", limit=5, n_bootstrap=50), out_dir=base / "length-limit")
    out["length-eps"], out["length-limit"] = base / "length-eps", base / "length-limit"
    return out


def test_rows_are_models_and_columns_split_d_and_spec(runs):
    lb = build_leaderboard([load_run(runs[m]) for m in ("length", "oracle", "constant")])
    assert [r[0][0] for r in lb.main.rows] == ["oracle", "constant", "length"]  # best accuracy first (0.5 > 0.21)
    assert [c.header for c in lb.main.columns] == ["ties_sample acc", "ties_sample D@0.1σ", "ties_sample Spec@0.1σ",
                                                   "ties_sample ds_auc",
                                                   "ties_sample ties_score"]
    md = render(lb, "md")
    assert "| oracle" in md and "1.000 [1.000, 1.000]" in md and "95% bootstrap CI" in md
    # the cells are the records, found through the run's own query
    oracle = load_run(runs["oracle"]).record
    spec_col = [c.header for c in lb.main.columns].index("ties_sample Spec@0.1σ")
    assert lb.main.rows[0][1][spec_col] == oracle.metric("ties_sample", "specificity", eps=0.1).estimate


def test_a_ties_score_above_one_says_why(runs):
    from rmbench.core.metrics import ties_score

    # Correct answers 0.1 apart, 10 above the incorrect one: the 0.01 x tanh(margin term) adds ~0.01.
    wide = ties_score([("tied:1", [10.0, 10.1], [0.0]), ("ref:1", [10.0], [0.0])])
    assert 1.0 < wide <= 1.01
    lb = build_leaderboard([load_run(runs["oracle"])])
    assert TIES_READING in lb.notes and "[-0.01, 1.01]" in render(lb, "md")


def test_a_title_ending_in_s_takes_a_bare_apostrophe(runs):
    from rmbench.results.publishing.leaderboard import possessive

    assert possessive("Topic pairs") == "Topic pairs'" and possessive("RewardBench") == "RewardBench's"
    import dataclasses

    from rmbench.core.metric_registry import OfficialColumn, OfficialLayout

    record = load_run(runs["oracle"]).record
    topic = OfficialLayout("Topic pairs", "ties_score", (OfficialColumn("Ties", None), OfficialColumn("Again", None)))
    record = dataclasses.replace(record, tasks=tuple(dataclasses.replace(t, official=topic) for t in record.tasks))
    md = render(build_leaderboard([record]), "md")
    assert "Topic pairs' own scores" in md and "pairs's" not in md


def test_runs_with_other_eps_lists_share_the_cells_they_have(runs, tmp_path):
    evaluate(EvalConfig(model="length", eps=(0.0, 0.05, 0.1, 0.5), n_bootstrap=50), out_dir=tmp_path / "len")
    lb = build_leaderboard([load_run(runs["oracle"]), load_run(tmp_path / "len")])
    assert lb.eps["ties_sample"] == (0.1, "sigma") and lb.notes == (TIES_READING,)  # only the Ties score's range
    length = load_run(tmp_path / "len").record
    row = dict((r[0][0], r[1]) for r in lb.main.rows)["length"]
    assert row[1] == length.metric("ties_sample", "discrimination", eps=0.1).estimate
    # no eps in common: the first run's eps, and a note says which run lacks it and what it has
    lb = build_leaderboard([load_run(runs["oracle"]), load_run(runs["length-eps"])])
    assert lb.eps["ties_sample"] == (0.1, "sigma")
    assert any("no D/Spec at eps=0.1 (its eps: 0.2)" in n for n in lb.notes)
    row = dict((r[0][0], r[1]) for r in lb.main.rows)["length"]
    assert row[1] is None and row[0] is not None  # D@0.1 missing, accuracy shared


def test_runs_on_other_data_get_columns_of_their_own_with_a_note(runs):
    lb = build_leaderboard([load_run(runs["oracle"]), load_run(runs["length-limit"])])
    headers = [c.header for c in lb.main.columns]
    # headed by what differs (--limit 5); the column group's key stays ties_sample#2
    assert "ties_sample acc" in headers and "ties_sample (limit 5) acc" in headers
    assert lb.names == {"ties_sample": "ties_sample", "ties_sample#2": "ties_sample (limit 5)"}
    assert {c.task for c in lb.main.columns} == {"ties_sample", "ties_sample#2"} and "ties_sample#2" in lb.eps
    # the fingerprints follow the names: the limited run's first, as it is named first (issue 54)
    limited = load_run(runs["length-limit"]).record.task("ties_sample").data_fingerprint[:12]
    assert limited != "0bee14202bc0"
    assert (f"ties_sample (limit 5) of length-limit cannot share cells with ties_sample of oracle: data fingerprint "
            f"{limited} vs 0bee14202bc0; shown apart") in lb.notes, lb.notes
    rows = dict((r[0][0], r[1]) for r in lb.main.rows)
    acc, acc2 = headers.index("ties_sample acc"), headers.index("ties_sample (limit 5) acc")
    assert rows["oracle"][acc] is not None and rows["oracle"][acc2] is None
    assert rows["length"][acc] is None and rows["length"][acc2] is not None


def test_two_runs_of_one_model_are_rows_named_by_folder(runs):
    lb = build_leaderboard([load_run(runs["length"]), load_run(runs["length-eps"])])
    assert sorted(r[0][0] for r in lb.main.rows) == ["length (length)", "length (length-eps)"]
    with pytest.raises(ConfigError, match="both in folders named 'length'"):
        build_leaderboard([load_run(runs["length"]), load_run(runs["length"])])


def test_formats(runs):
    lb = build_leaderboard([load_run(runs[m]) for m in ("oracle", "length")])
    csv = render(lb, "csv")
    assert csv.splitlines()[0].startswith("model,ties_sample acc,ties_sample acc ci_low,ties_sample acc ci_high")
    data = json.loads(render(lb, "json"))
    cell = [r for r in data["tables"][0]["rows"] if r["model"] == "oracle" and r["metric"] == "discrimination"][0]
    assert cell["value"] == 1.0 and cell["eps"] == 0.1 and len(data["task_keys"]["ties_sample"]) == 64
    with pytest.raises(ConfigError, match="eps=0.7"):
        build_leaderboard([load_run(runs["oracle"])], eps=0.7)
    assert build_leaderboard([load_run(runs["oracle"])], eps=0.0).eps["ties_sample"] == (0.0, "sigma")


def test_html_is_self_contained_escaped_and_sortable(runs, tmp_path):
    doc = json.loads((runs["length"] / "results.json").read_text())
    doc["model"]["name"] = "<script>alert('x')</script>"
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "results.json").write_text(json.dumps(doc))
    page = render(build_leaderboard([load_run(tmp_path / "evil"), load_run(runs["oracle"])]), "html")
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "http" not in page and "<link" not in page  # nothing fetched from elsewhere
    assert "addEventListener('click'" in page and 'data-v="1.0"' in page


def test_html_has_the_markdown_notes_under_the_main_table_and_left_aligned_keys(runs):
    import html

    from rmbench.results.publishing.leaderboard_render import legend_lines

    lb = build_leaderboard([load_run(runs["oracle"]), load_run(runs["length-eps"])])
    assert lb.notes  # length-eps has no D/Spec at eps=0.1
    md, page = render(lb, "md"), render(lb, "html")
    main_end = page.index("</table>")
    for note in (*legend_lines(lb), *lb.notes):  # what the Markdown says, escaped, right after the main table
        assert note in md and html.escape(note) in page, note
        assert page.index(html.escape(note)) > main_end
        assert "<h2>" not in page[main_end:page.index(html.escape(note))]
    assert '<th class="key">model</th>' in page and '<td class="key" data-v="oracle">oracle</td>' in page
    assert "th.key,td.key{text-align:left}" in page and "first-child" not in page
    values = page[page.index("<th", page.index("<thead>")):page.index("</thead>")]
    assert values.count('class="key"') == len(lb.main.key_headers)  # metric headers stay right-aligned


def test_bad_run_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 99}))
    with pytest.raises(ConfigError, match="field 'schema_version': 99 is not supported"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text(json.dumps({"schema_version": 2}))
    with pytest.raises(ConfigError, match="field 'model': missing"):
        load_run(tmp_path)


def test_html_page_embeds_the_d_spec_curves(runs, tmp_path):
    pytest.importorskip("matplotlib")
    import base64
    import re

    from typer.testing import CliRunner

    from rmbench.cli.app import app

    page = tmp_path / "board.html"
    result = CliRunner().invoke(app, ["leaderboard", "build", str(runs["oracle"]), str(runs["length"]), "--format",
                                      "html", "--out", str(page)])
    assert result.exit_code == 0, result.output
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page.read_text())
    assert len(images) == 1  # one task, one curve
    svg = base64.b64decode(images[0]).decode("utf-8")
    assert svg.startswith("<svg") and "</svg>" in svg


def test_a_model_served_from_an_absolute_path_is_labelled_by_its_folder_name():
    from rmbench.results.publishing.leaderboard import model_label

    assert model_label("judge:/srv/models/SmolLM2-135M-Instruct") == "judge:SmolLM2-135M-Instruct"
    assert model_label("judge:/srv/models/SmolLM2-135M-Instruct/") == "judge:SmolLM2-135M-Instruct"
    assert model_label("/home/me/rm") == "rm" and model_label("seqcls:~/rms/big") == "seqcls:big"
    for kept in ("judge:Qwen/Qwen3-8B", "judge:runs/SmolLM2-135M-Instruct", "smollm2-135m", "python:my_rm.py:score"):
        assert model_label(kept) == kept
