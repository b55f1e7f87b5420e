"""Model identity: from kind, canonical arguments and weights content; never the display name.

The cache is keyed by it, so a renamed entry keeps its scores, a model built in code shares
them with the same model from the command line, and a re-run whose scores are all cached never
loads weights.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from rmbench.core.specs import ModelSpec
from rmbench.models import Runtime, Truncation, build_model, parse_model_spec
from rmbench.models.baselines import ConstantRM, LengthRM
from rmbench.scoring.runner import EvalConfig, evaluate

GOLDEN = Path(__file__).parents[1] / "golden" / "model_identity.json"
FP32 = Runtime(dtype="float32", device="cpu")


def _placeholders(identity):
    """The identity with content hashes (which depend on the tiny model's bytes) replaced."""
    if isinstance(identity, dict):
        return {k: ("<weights>" if k == "weights" else _placeholders(v)) for k, v in identity.items()}
    return identity


def _golden_identities(tiny) -> dict:
    from rmbench.models.implicit import ImplicitRM

    return {
        "length": LengthRM().identity(),
        "constant 2": build_model(ModelSpec.make("c", "constant", {"value": 2})).identity(),
        "implicit": _placeholders(ImplicitRM(str(tiny["causal"]), runtime=FP32).identity()),
        "implicit with ref, max_length": _placeholders(
            ImplicitRM(str(tiny["causal"]), ref=str(tiny["causal_ref"]), beta=0.5, runtime=FP32,
                       truncation=Truncation(64, "right")).identity()),
        "discretize": _placeholders(build_model(ModelSpec.make("d", "discretize", {
            "inner": {"name": "i", "kind": "implicit", "args": {"model": str(tiny["causal"]), "normalize": "mean"}},
            "T": 3}), FP32).identity()),
    }


def test_identities_equal_the_golden_file(tiny):
    """A change here re-scores every user's cache: it must be deliberate (update the golden file)."""
    assert _golden_identities(tiny) == json.loads(GOLDEN.read_text())


def test_the_display_name_is_not_part_of_the_identity():
    a, b = build_model(ModelSpec.make("len-a", "length")), build_model(ModelSpec.make("len-b", "length"))
    assert a.fingerprint() == b.fingerprint() == LengthRM().fingerprint()
    assert ConstantRM(1.0).fingerprint() != ConstantRM(2.0).fingerprint()
    assert LengthRM("words").fingerprint() == LengthRM(unit="words").fingerprint() != LengthRM().fingerprint()


def test_a_model_built_in_code_is_the_model_from_the_cli(tiny, tmp_path):
    from rmbench.models.implicit import ImplicitRM

    in_code = ImplicitRM(str(tiny["causal"]), runtime=FP32)
    from_cli = build_model(parse_model_spec(f"implicit:{tiny['causal']}"), FP32)
    assert in_code.fingerprint() == from_cli.fingerprint()
    # The weights count by content: a copy elsewhere is the same model, other weights are not.
    copy = tmp_path / "elsewhere"
    shutil.copytree(tiny["causal"], copy)
    assert ImplicitRM(str(copy), runtime=FP32).fingerprint() == in_code.fingerprint()
    assert ImplicitRM(str(tiny["causal_ref"]), runtime=FP32).fingerprint() != in_code.fingerprint()
    # What changes the numbers changes the identity; the runtime's device does not.
    assert ImplicitRM(str(tiny["causal"]), runtime=Runtime(dtype="bfloat16")).fingerprint() != in_code.fingerprint()
    assert ImplicitRM(str(tiny["causal"]), runtime=FP32, max_length=32).fingerprint() != in_code.fingerprint()
    assert (ImplicitRM(str(tiny["causal"]), runtime=FP32, truncation=Truncation(32)).fingerprint()
            == ImplicitRM(str(tiny["causal"]), runtime=FP32, max_length=32).fingerprint())
    assert ImplicitRM(str(tiny["causal"]), runtime=Runtime(dtype="float32", max_batch=3)).fingerprint() \
        == in_code.fingerprint()


def _entry(folder: Path, name: str, model: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(f"type: model\nname: {name}\nkind: implicit\nargs:\n  model: {model}\n")
    return folder


def test_renaming_a_model_entry_keeps_its_cached_scores(tiny, tmp_path):
    cache = tmp_path / "cache"
    common = dict(tasks=("ties_sample",), limit=4, n_bootstrap=20, runtime=FP32, cache_dir=str(cache))
    first = evaluate(EvalConfig(model="my-rm", include=(str(_entry(tmp_path / "a", "my-rm", tiny["causal"])),),
                                **common))
    renamed = evaluate(EvalConfig(model="renamed-rm", include=(str(_entry(tmp_path / "b", "renamed-rm",
                                                                          tiny["causal"])),), **common))
    assert first.execution.stats.computed > 0 and first.execution.stats.cached == 0
    assert renamed.execution.stats.computed == 0
    assert renamed.execution.stats.cached == first.execution.stats.computed
    assert renamed.model.fingerprint == first.model.fingerprint and renamed.model.name == "renamed-rm"
    assert renamed.value("ties_sample", "pairwise_accuracy") == first.value("ties_sample", "pairwise_accuracy")


def test_a_cached_rerun_never_loads_weights_or_tokenizer(tiny, tmp_path, monkeypatch):
    from rmbench.models.hf.base import HFRewardModel
    from rmbench.models.hf.front import TokenizerFront

    common = dict(model=f"discretize:implicit:{tiny['causal']}", tasks=("ties_sample",), limit=3, n_bootstrap=20,
                  runtime=FP32, cache_dir=str(tmp_path / "cache"))
    first = evaluate(EvalConfig(eps=(0.0,), **common))

    def refuse(*_args, **_kwargs):
        raise AssertionError("a cached re-run loaded weights or a tokenizer")

    monkeypatch.setattr(HFRewardModel, "model", property(refuse))
    monkeypatch.setattr(TokenizerFront, "tokenizer", property(refuse))
    again = evaluate(EvalConfig(eps=(0.0, 0.3), **common))
    assert again.execution.stats.computed == 0
    assert again.value("ties_sample", "pairwise_accuracy") == first.value("ties_sample", "pairwise_accuracy")
    assert again.execution.model == first.execution.model  # described alike: dtype, weights, device asked for


@pytest.mark.parametrize("module", ["scoring/runner.py", "scoring/engine.py"])
def test_the_runner_and_engine_never_probe_a_model_for_capabilities(module):
    """Capabilities are declared (rmbench.models.base: TokenizedModel, StochasticModel,
    CompositeModel, GroupContextModel) and tested with isinstance, never found with getattr."""
    tree = ast.parse((Path(__file__).parents[2] / "rmbench" / module).read_text())
    probes = [node.lineno for node in ast.walk(tree)
              if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("getattr", "hasattr")]
    assert probes == [], f"{module} calls getattr/hasattr on lines {probes}"


def test_build_model_hands_runtime_and_truncation_to_the_adapter(tiny):
    """RewardModel.__new__ takes (*args, **kwargs) to record the constructor's arguments; the
    registry must still see __init__'s parameters and pass ``runtime`` and ``truncation``."""
    spec = ModelSpec.make("d", "discretize", {"inner": f"implicit:{tiny['causal']}"})
    model = build_model(spec, Runtime(dtype="float16", device="cpu"), Truncation(40, "right"))
    assert model.inner.dtype == "float16" and model.inner.truncation == Truncation(40, "right")
