"""Specs (rmbench.core.specs): frozen, hashable arguments, distinct task and model spec types, and
fingerprints byte-identical to those of the canonical-JSON string specs they replace."""

import dataclasses
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rmbench.core.specs import FrozenArgs, ModelSpec, Spec, TaskSpec
from rmbench.core.types import ComparisonGroup, group_slices, split_by_group

ARGS = {"target": "m:f", "opts": {"b": 1, "a": [1, 2], "é": None}, "x": 1.5}
# Recorded with the specs whose args were a canonical JSON string (before FrozenArgs).
OLD_ARGS_JSON = '{"opts":{"a":[1,2],"b":1,"é":null},"target":"m:f","x":1.5}'
OLD_FINGERPRINT = "1d054befaae9957538be4b5c2ec519447de9ac302b78bb2dd61a9ce3cafa80d1"
OLD_TASK_FINGERPRINT = "db20004cd40a66b6c7d31240eb575e423d24033dd573122dfe8ca6d2e955de0c"


def test_fingerprints_are_those_of_the_canonical_json_specs():
    spec = ModelSpec.make("my", "python", ARGS)
    assert spec.args.canonical == OLD_ARGS_JSON and spec.fingerprint() == OLD_FINGERPRINT
    assert TaskSpec.make("ties", "ties", {"path": "/d/ties.jsonl"}, version=3).fingerprint() == OLD_TASK_FINGERPRINT
    assert spec.to_json() == {"name": "my", "kind": "python", "args": ARGS}
    assert ModelSpec.make("my", "python", spec.args).fingerprint() == OLD_FINGERPRINT  # frozen args in: the same
    assert ModelSpec.make("my", "python", {**spec.args}).fingerprint() == OLD_FINGERPRINT


def test_args_are_a_frozen_hashable_mapping_nested_values_too():
    args = ModelSpec.make("my", "python", ARGS).args
    assert isinstance(args, FrozenArgs) and args["x"] == 1.5 and sorted(args) == ["opts", "target", "x"]
    assert isinstance(args["opts"], FrozenArgs) and args["opts"]["a"] == (1, 2)
    with pytest.raises(TypeError):
        args["x"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        args.pop("x")  # type: ignore[attr-defined]
    assert hash(args) == hash(FrozenArgs(ARGS)) and args == FrozenArgs(ARGS) and args == ARGS
    assert args != {**ARGS, "x": 2} and {args: 1}[FrozenArgs(ARGS)] == 1
    plain = args.to_dict()  # a fresh copy, lists as lists
    plain["opts"]["a"].append(3)
    assert plain["opts"]["a"] == [1, 2, 3] and args["opts"]["a"] == (1, 2)
    assert FrozenArgs({1: (1, 2)}) == {"1": [1, 2]}  # as JSON has them: string keys, arrays
    assert pickle.loads(pickle.dumps(args)) == args and FrozenArgs() == {} and not FrozenArgs()
    with pytest.raises(ValueError):
        FrozenArgs({"x": float("nan")})  # no spec holds what its JSON cannot


def test_task_and_model_specs_are_distinct_types():
    task, model = TaskSpec.make("x", "length"), ModelSpec.make("x", "length")
    assert task != model and len({task, model}) == 2 and task.fingerprint() == model.fingerprint()
    assert not isinstance(task, ModelSpec) and not isinstance(model, TaskSpec) and isinstance(task, Spec)
    assert task == TaskSpec("x", "length", {}) and hash(task) == hash(TaskSpec.make("x", "length"))
    with pytest.raises(TypeError, match="TaskSpec or a ModelSpec"):
        Spec.make("x", "length")
    with pytest.raises(TypeError, match="args must be a mapping"):
        TaskSpec("x", "length", "{}")  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.name = "y"  # type: ignore[misc]


@pytest.mark.slow
def test_mypy_keeps_a_model_spec_from_a_function_that_takes_a_task_spec(tmp_path):
    pytest.importorskip("mypy")
    snippet = tmp_path / "snippet.py"
    snippet.write_text(textwrap.dedent("""
        from rmbench.core.specs import ModelSpec, TaskSpec

        def takes_task(spec: TaskSpec) -> str:
            return spec.name

        takes_task(TaskSpec.make("t", "ties"))
        takes_task(ModelSpec.make("m", "length"))
    """))
    # From the repository's root, with its [tool.mypy] options: the cache `mypy` leaves there (.ci/run runs it
    # first) serves rmbench's modules, and only the snippet is checked anew (about 3 s of CPU, not 55).
    out = subprocess.run([sys.executable, "-m", "mypy", str(snippet)], cwd=Path(__file__).resolve().parents[2],
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 1 and ':8: error: Argument 1 to "takes_task" has incompatible type "ModelSpec"; ' \
        'expected "TaskSpec"' in out.stdout, out.stdout


def _groups(*sizes):
    return [ComparisonGroup(f"g{i}", "q", [f"r{j}" for j in range(n)], [j % 2 for j in range(n)])
            for i, n in enumerate(sizes)]


def test_group_slices_and_split_by_group_by_hand():
    groups = _groups(2, 3, 2)
    assert group_slices(groups) == [slice(0, 2), slice(2, 5), slice(5, 7)]
    rewards = np.arange(7.0)
    parts = split_by_group(groups, rewards)
    assert [p.tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0, 4.0], [5.0, 6.0]]
    assert parts[1].base is rewards  # views, not copies
    assert group_slices([]) == [] and split_by_group([], np.array([])) == []
    with pytest.raises(ValueError, match="6 values for the 7 responses of 3 groups"):
        split_by_group(groups, rewards[:6])
    with pytest.raises(ValueError, match="1 values for the 0 responses of 0 groups"):
        split_by_group([], [1.0])
