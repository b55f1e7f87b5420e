"""``rmbench new-task NAME``: a working task plugin skeleton (YAML entry + loader + data + test)."""

from __future__ import annotations

import importlib.util
import keyword
import re
import shlex
from pathlib import Path

from rmbench.errors import ConfigError

YAML = """\
name: {name}
kind: {name}_task.py:{cls}   # a Task class in a file next to this entry (or a registered kind)
version: 1                   # bump whenever the data or its meaning changes
description: {name} preference pairs (edit me)
args:
  path: {name}.jsonl         # relative to this file
"""

LOADER = '''\
"""The {name} task: preference pairs from a JSON Lines file (edit to fit your data)."""

from rmbench import ComparisonGroup, RowReader, Task, iter_rows


class {cls}(Task):
    description = "{name} preference pairs"
    version = 1

    def __init__(self, path=None, dataset=None, revision=None, split="test"):
        self.source = dict(path=path, dataset=dataset, revision=revision, split=split)

    def groups(self):
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line)  # its errors name file, line and field
            yield ComparisonGroup(
                id=r.string("id", str(line)),
                prompt=r.prompt("prompt"),
                responses=(r.string("chosen"), r.string("rejected")),
                utilities=(1, 0),  # higher is better; equal utilities make specificity pairs
                subset=r.string("subset", None),
            )
'''

DATA = """\
{{"id": "1", "prompt": "What is 2 + 2?", "chosen": "2 + 2 = 4.", "rejected": "2 + 2 = 5."}}
{{"id": "2", "prompt": "Name the largest planet in the solar system.", "chosen": "Jupiter.", "rejected": "Mars."}}
{{"id": "3", "prompt": "Is water wet?", "chosen": "Water makes other things wet.", "rejected": "I cannot say."}}
"""

TEST = '''\
"""Tests of the {name} task; run them with the Python that has rmbench: python -m pytest {folder}"""

import json
from pathlib import Path

import pytest

from rmbench import DataError, EvalConfig, evaluate, load_catalog, load_groups

HERE = Path(__file__).parent


def test_loads_and_the_oracle_is_perfect():
    catalog = load_catalog([HERE])
    _, groups = load_groups(catalog.task_spec("{name}"))
    assert len(groups) == 3 and groups[0].utilities == (1, 0)
    run = evaluate(EvalConfig(model="oracle", tasks=("{name}",), include=(str(HERE),), n_bootstrap=20))
    assert run.metric("{name}", "pairwise_accuracy").value == 1.0
    assert run.metric("{name}", "specificity", eps=0.1) is not None


def test_bad_rows_name_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({{"prompt": "q", "chosen": "a"}}) + "\\n")
    with pytest.raises(DataError, match="line 1, field 'rejected'"):
        evaluate(EvalConfig(model="oracle", tasks=("{name}",), include=(str(HERE),), data=(("{name}", str(bad)),)))
'''


def new_task(name: str, parent: str | Path = ".") -> Path:
    """Write the skeleton into ``parent/name/`` and return that folder."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or keyword.iskeyword(name):
        raise ConfigError(f"task name {name!r}: use lower-case letters, digits and underscores, starting with a letter")
    folder = Path(parent) / name
    if folder.exists():
        raise ConfigError(f"{folder} already exists; choose another name or folder")
    cls = "".join(part.capitalize() for part in name.split("_")) + "Task"
    folder.mkdir(parents=True)
    (folder / f"{name}.yaml").write_text(YAML.format(name=name, cls=cls))
    (folder / f"{name}_task.py").write_text(LOADER.format(name=name, cls=cls))
    (folder / f"{name}.jsonl").write_text(DATA.format())
    (folder / f"test_{name}.py").write_text(TEST.format(name=name, folder=folder))
    return folder


def next_steps(name: str, folder: Path, python: str) -> str:
    """The commands that evaluate and test the new task, run by ``python`` (the interpreter that
    has rmbench, e.g. ``sys.executable``: plain ``python`` may be another one, without rmbench or
    pytest), quoted for a POSIX shell."""
    py, where = shlex.quote(python), shlex.quote(str(folder))
    lines = [f"Try:  {py} -m rmbench eval --include {where} --tasks {name} --model length",
             f"Test: {py} -m pytest {where}"]
    if importlib.util.find_spec("pytest") is None:
        lines[-1] += f"  (first: {py} -m pip install pytest)"
    return "\n".join(lines)
