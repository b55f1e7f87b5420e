"""``rmbench tasks show TASK``: a task's row schema, an example row (its file's first row where
the data is local, else one built from the schema), its official layout, headline metrics, score
arguments and data source; the CLI prints what :func:`rmbench.tasks.describe.task_info` gathers."""

import json

import pytest
from typer.testing import CliRunner

from rmbench.catalog import load_catalog
from rmbench.cli.app import app
from rmbench.tasks import TASK_KINDS
from rmbench.tasks.describe import render_task_info, schema_example, task_info
from rmbench.tasks.schemas import RB2, schemas_of

runner = CliRunner()


def _info(name):
    catalog = load_catalog()
    return task_info(catalog.task_spec(name), catalog.descriptions.get(("task", name), ""),
                     catalog.headlines.get(name))


def test_an_embedded_task_shows_its_schema_and_its_files_first_row():
    info = _info("ties_sample")
    assert info.schemas == (RB2,)
    first = json.loads(open(load_catalog().tasks["ties_sample"].args_dict["path"], encoding="utf-8").readline())
    assert info.example is not None and info.example.source is not None and info.example.source.endswith("line 1")
    assert info.example.row["id"] == first["id"] and info.example.row["chosen"] == first["chosen"][:3]
    assert RB2.fits(dict(info.example.row))
    assert info.official is not None and info.official.metric == "ties_score"
    assert any("local file" in line and "(present)" in line for line in info.data)
    assert any(line.startswith("--data ties_sample=FILE") for line in info.data)


def test_a_hub_task_shows_an_example_built_from_its_schema_its_layout_and_score_args():
    info = _info("prmbench")
    assert info.example is not None and info.example.source is None
    assert info.score_args == (("threshold", 0.5),)
    assert info.official is not None and info.official.title == "PRMBench"
    assert any("hub dataset hitsmy/PRMBench_Preview" in line for line in info.data)
    text = "\n".join(render_task_info(info))
    for want in ("Row schema: PRMBench rows", "modified_process", "built from the schema",
                 "Official layout: PRMBench", "NR. = prmbench_score[redundency]", "Headline metrics: prmbench_score",
                 "threshold=0.5", "--data prmbench=FILE"):
        assert want in text, want


@pytest.mark.parametrize("kind", TASK_KINDS.names())
def test_every_built_in_schema_s_example_fits_it(kind):
    load_catalog().task_spec(kind)  # registered
    for schema in schemas_of(kind):
        assert schema.fits(schema_example(schema)), schema.name


def test_a_long_text_in_a_real_row_is_cut_and_says_its_length(tmp_path):
    from rmbench.core.specs import TaskSpec

    f = tmp_path / "pairs.jsonl"
    f.write_text(json.dumps({"prompt": "q", "chosen": "x" * 1000, "rejected": "b"}) + "\n")
    info = task_info(TaskSpec.make("mine", "preference", {"path": str(f)}))
    assert info.example is not None and info.example.row["chosen"].endswith("(1,000 characters)")
    assert len(info.example.row["chosen"]) < 200


def test_the_cli_prints_it_and_an_unknown_task_is_one_line_with_a_suggestion():
    shown = runner.invoke(app, ["tasks", "show", "ties_sample"])
    assert shown.exit_code == 0, shown.output
    assert "Row schema: RewardBench 2 rows" in shown.output and "Example row (the first row of" in shown.output
    unknown = runner.invoke(app, ["tasks", "show", "tie"])
    assert unknown.exit_code != 0
    assert "unknown task 'tie'; did you mean 'ties'" in unknown.output and "Traceback" not in unknown.output
