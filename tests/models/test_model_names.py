"""One resolver for model names: presets, --include entries, kinds, KIND:TARGET, trained folders,
import targets, and the models a model names (discretize's ``inner``) all resolve alike."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rmbench.catalog import load_catalog
from rmbench.core.specs import ModelSpec
from rmbench.errors import ConfigError, did_you_mean
from rmbench.models import MODEL_KINDS, parse_model_spec
from rmbench.models.names import ModelNames, UnknownModel, model_refs, resolve_model
from rmbench.models.presets import PRESETS
from rmbench.models.trained import MODEL_ENTRY

REPO = Path(__file__).resolve().parents[2]


def write_entries(folder: Path, entries: dict[str, dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, body in entries.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump({"type": "model", "name": name, **body}))
    return folder


@pytest.fixture
def catalog(tmp_path):
    (tmp_path / "my_rm.py").write_text("def score(pairs):\n    return [float(len(r)) for _, r in pairs]\n")
    write_entries(tmp_path / "inc", {
        "my-avg": {"kind": "length"},
        "my-py": {"kind": "python", "args": {"target": "../my_rm.py:score"}},
        "my-disc": {"kind": "discretize", "args": {"inner": "my-avg", "T": 3}},
        "my-disc2": {"kind": "discretize", "args": {"inner": "my-disc"}},
        "my-loop": {"kind": "discretize", "args": {"inner": "my-loop"}},
        "ping": {"kind": "discretize", "args": {"inner": "pong"}},
        "pong": {"kind": "discretize", "args": {"inner": "discretize:ping"}},
        "my-typo": {"kind": "discretize", "args": {"inner": "my-agv"}},
        "my-mapped": {"kind": "discretize", "args": {"inner": {"kind": "discretize", "args": {"inner": "my-py"}}}},
    })
    return load_catalog([tmp_path / "inc"])


def test_did_you_mean_is_one_helper():
    assert did_you_mean("orcale", ["oracle", "length", "constant"]) == "; did you mean 'oracle'?"
    assert did_you_mean("lenght", {"length", "lengths"}) == "; did you mean 'length', 'lengths'?"
    assert did_you_mean("zzz", ["oracle"]) == ""
    assert did_you_mean("argz", ["args", "name"], n=1) == "; did you mean 'args'?"


def test_no_hint_is_built_by_hand_anywhere():
    """Every did-you-mean in rmbench/ goes through rmbench.errors.did_you_mean."""
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "rmbench").rglob("*.py")
                 if p.name != "errors.py" and "get_close_matches" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_every_top_level_form():
    names = ModelNames()
    assert names.lookup("length") == ModelSpec.make("length", "length")
    assert resolve_model("python:my_rm.py:score") == ModelSpec.make("python:my_rm.py:score", "python",
                                                                {"target": "my_rm.py:score"})
    assert resolve_model("implicit:some/model").args_dict == {"model": "some/model"}  # target_arg = "model"
    assert resolve_model("smollm2-135m-avg").args_dict == PRESETS.get("smollm2-135m-avg").args_dict  # presets always
    assert resolve_model("  length ") == ModelSpec.make("length", "length")
    spec = resolve_model("rmbench.models.baselines:LengthRM")  # an import target as the kind
    assert spec.kind == "rmbench.models.baselines:LengthRM" and spec.args_dict == {}
    assert "inner" in model_refs("discretize") and model_refs("length") == ()


def test_include_entries_and_presets_resolve_the_same_way(catalog):
    assert parse_model_spec("my-avg", catalog.models) == catalog.models["my-avg"]
    py = parse_model_spec("my-py", catalog.models)
    assert py.args_dict["target"].endswith("my_rm.py:score") and Path(py.args_dict["target"].rsplit(":",
                                                                                                    1)[0]).is_absolute()


def test_kind_target_inner_names_an_include_entry(catalog):
    """The verified bug: --model discretize:my-avg with my-avg from --include."""
    spec = parse_model_spec("discretize:my-avg", catalog.models)
    assert spec.name == "discretize:my-avg" and spec.kind == "discretize"
    assert spec.args_dict["inner"] == {"name": "my-avg", "kind": "length", "args": {}}
    assert resolve_model("discretize:my-avg", catalog.models) == spec


def test_yaml_entry_inner_names_another_include_entry(catalog):
    spec = resolve_model("my-disc", catalog.models)
    assert spec.args_dict == {"inner": {"name": "my-avg", "kind": "length", "args": {}}, "T": 3}
    deep = resolve_model("my-disc2", catalog.models)  # references of references resolve too
    assert deep.args_dict["inner"] == {"name": "my-disc", "kind": "discretize", "args": spec.args_dict}
    mapped = resolve_model("my-mapped", catalog.models)  # a mapping's string references resolve
    assert mapped.args_dict["inner"]["args"]["inner"]["name"] == "my-py"
    assert resolve_model(deep, catalog.models) == deep  # resolving again changes nothing
    # presets name presets: the discrete preset's inner is the avg preset
    disc = resolve_model("smollm2-135m-discrete")
    assert disc.args_dict["inner"] == {"name": "smollm2-135m-avg", "kind": "implicit",
                                       "args": PRESETS.get("smollm2-135m-avg").args_dict}


def test_kind_target_nests(catalog):
    spec = resolve_model("discretize:discretize:my-avg", catalog.models)
    inner = spec.args_dict["inner"]
    assert inner["name"] == "discretize:my-avg" and inner["args"]["inner"]["name"] == "my-avg"
    assert resolve_model("discretize:python:f.py:g").args_dict["inner"]["args"] == {"target": "f.py:g"}


def test_cycles_are_a_clear_error_naming_the_chain(catalog):
    with pytest.raises(ConfigError, match=r"cycle: my-loop -> my-loop"):
        resolve_model("my-loop", catalog.models)
    with pytest.raises(ConfigError, match=r"cycle: ping -> pong -> discretize:ping -> ping"):
        parse_model_spec("ping", catalog.models)  # cycles fail even where unknown names wait
    with pytest.raises(ConfigError, match=r"cycle: discretize:my-loop -> my-loop -> my-loop"):
        resolve_model("discretize:my-loop", catalog.models)


def test_a_typo_in_the_inner_name_suggests_the_include_entry(catalog):
    with pytest.raises(UnknownModel) as info:
        resolve_model("discretize:my-agv", catalog.models)
    message = str(info.value)
    assert message.startswith("model 'discretize:my-agv', argument 'inner': unknown model 'my-agv'; "
                              "did you mean 'my-avg'")
    assert "known: " in message and "my-disc" in message and "smollm2-135m" in message and "oracle" in message
    with pytest.raises(UnknownModel, match=r"model 'my-typo', argument 'inner': unknown model 'my-agv'; "
                                           r"did you mean 'my-avg'"):
        resolve_model("my-typo", catalog.models)


def test_unknown_names_read_alike_at_every_level(catalog):
    with pytest.raises(UnknownModel) as top:
        resolve_model("my-agv", catalog.models)
    with pytest.raises(UnknownModel) as nested:
        resolve_model("discretize:my-agv", catalog.models)
    assert str(nested.value).endswith(str(top.value))
    with pytest.raises(UnknownModel, match=r"unknown model 'orcale'; did you mean 'oracle'\?"):
        resolve_model("orcale")
    with pytest.raises(UnknownModel, match=r"unknown model 'implict:x'; did you mean 'implicit'"):
        resolve_model("implict:x")
    with pytest.raises(UnknownModel, match=r"unknown model kind 'lenght'; did you mean 'length'"):
        resolve_model({"kind": "lenght"})
    with pytest.raises(ConfigError, match=r"unknown key 'arg'; did you mean 'args'"):
        resolve_model({"kind": "length", "arg": {}})
    with pytest.raises(ConfigError, match="argument 'inner': a model is a name"):
        resolve_model(ModelSpec.make("d", "discretize", {"inner": 3}))
    with pytest.raises(ConfigError, match="empty model name"):
        resolve_model("")


def test_parse_model_spec_leaves_an_unknown_inner_for_overrides_then_fails_when_built(catalog):
    """The runner merges --model-arg after parse_model_spec: discretize:x with inner overridden works,
    and an inner nobody replaced fails when built, with the same message and hint."""
    from rmbench.models import build_model

    spec = parse_model_spec("my-typo", catalog.models)
    overridden = ModelSpec.make(spec.name, spec.kind, {**spec.args, "inner": "length"})
    with pytest.raises(ConfigError, match="dropout") as info:  # got as far as building length
        build_model(overridden)
    assert not isinstance(info.value, UnknownModel) and "'length'" in str(info.value)
    with pytest.raises(UnknownModel, match=r"model 'my-typo', argument 'inner': unknown model 'my-agv'; "
                                           r"did you mean 'my-avg'"):
        build_model(spec)
    with pytest.raises(UnknownModel) as info:  # strict resolution of the parsed spec: the same message
        resolve_model(spec, catalog.models)
    assert str(info.value).count("argument 'inner'") == 1
    assert resolve_model("discretize:x", catalog.models, overrides={"inner": "my-avg"}).args_dict["inner"]["name"] \
        == "my-avg"


def _trained_folder(root: Path, name: str, entry: dict) -> Path:
    folder = root / name
    (folder / "model").mkdir(parents=True)
    (folder / MODEL_ENTRY).write_text(yaml.safe_dump(entry))
    return folder


def test_a_trained_folder_resolves_alone_and_as_inner(tmp_path, catalog):
    folder = _trained_folder(tmp_path, "im", {"type": "model", "name": "im", "kind": "implicit",
                                              "args": {"model": "model", "ref": "smollm2-135m-instruct"}})
    alone = parse_model_spec(str(folder))
    assert alone.name == str(folder) and alone.args_dict == {"model": str((folder / "model").resolve()),
                                                      "ref": "smollm2-135m-instruct"}  # ref names weights: kept
    assert resolve_model(f"discretize:{folder}").args_dict["inner"] == {"name": str(folder), "kind": "implicit",
                                                                        "args": alone.args_dict}
    write_entries(tmp_path / "inc2", {"disc-trained": {"kind": "discretize", "args": {"inner": str(folder)}}})
    named = load_catalog([tmp_path / "inc2"]).models
    assert resolve_model("disc-trained", named).args_dict["inner"]["args"] == alone.args_dict
    # a trained folder that itself names a model: its inner resolves over the same names
    nested = _trained_folder(tmp_path, "d", {"kind": "discretize", "args": {"inner": "my-avg"}})
    assert resolve_model(str(nested), catalog.models).args_dict["inner"]["name"] == "my-avg"


def test_the_implicit_ref_is_not_a_model_reference():
    spec = resolve_model(ModelSpec.make("im", "implicit", {"model": "a", "ref": "length"}))
    assert spec.args_dict["ref"] == "length"


def test_models_list_shows_include_entries(catalog, tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    result = CliRunner().invoke(app, ["models", "list", "--include", str(tmp_path / "inc")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "my-avg" in result.output and "discretize" in result.output


def test_discretize_of_an_include_entry_end_to_end(tiny, tmp_path):
    """--model discretize:my-tiny with my-tiny a tiny causal LM entry from --include: scored."""
    from rmbench.models import Runtime
    from rmbench.scoring.runner import EvalConfig, evaluate

    inc = write_entries(tmp_path / "inc", {"my-tiny": {"kind": "implicit", "description": "a tiny causal LM",
                                                       "args": {"model": str(tiny["causal"]), "normalize": "mean"}}})
    res = evaluate(EvalConfig(model="discretize:my-tiny", include=(str(inc),), tasks=("ties_sample",), limit=2,
                              n_bootstrap=10, model_args=(("p", 0.2),),
                              runtime=Runtime(dtype="float32", device="cpu"), cache_dir=str(tmp_path / "cache")))
    assert res.model.name == "discretize:my-tiny" and res.model.spec["kind"] == "discretize"
    assert res.model.spec["args"]["inner"] == {"name": "my-tiny", "kind": "implicit",
                                               "args": {"model": str(tiny["causal"]), "normalize": "mean"}}
    accuracy = [m.value for m in res.records() if m.metric == "pairwise_accuracy"]
    assert accuracy and all(0.0 <= v <= 1.0 for v in accuracy)


def test_an_unfinished_training_folder_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trained" / "ex").mkdir(parents=True)
    with pytest.raises(UnknownModel, match=r"'trained/ex': the folder is empty; without rmbench_model.yaml .*"
                                           r"run the same train command again"):
        resolve_model("trained/ex")
    (tmp_path / "trained" / "ex" / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(UnknownModel, match="the folder holds checkpoint.pt; without rmbench_model.yaml"):
        resolve_model("trained/ex")
    with pytest.raises(UnknownModel, match="unknown model 'trained/none'"):  # not a folder: the usual answer
        resolve_model("trained/none")


# --- every kind's arguments are declared: a misspelt key is one line naming the valid ones --------

def _valid_keys(kind: str) -> list[str]:
    """What the message must list: the kind's signature, less the arguments the run fills."""
    from rmbench.models.names import RUN_ARGS, kind_factory
    from rmbench.registry.factories import keyword_parameters

    accepted = keyword_parameters(kind_factory(kind))
    assert accepted is not None, f"kind {kind!r} takes **kwargs: its arguments are not declared"
    return [k for k in accepted if k not in RUN_ARGS]


def _misspelt(key: str) -> str:
    return key[:2] + key[1] + key[2:]  # a letter doubled: concurrency -> cooncurrency


def _refused(spec: ModelSpec) -> list[str]:
    """The message of each way a spec reaches its kind: resolved, and built (no weights, no server)."""
    from rmbench.models import build_model

    messages = []
    for step in (resolve_model, build_model):
        with pytest.raises(ConfigError) as info:
            step(spec)
        messages.append(str(info.value))
    return messages


@pytest.mark.parametrize("kind", [k for k in MODEL_KINDS.names() if MODEL_KINDS.describe(k)[1] == "built-in"])
def test_a_misspelt_argument_of_every_kind_is_one_line_naming_the_valid_keys(kind):
    from rmbench.models.names import target_arg

    valid = _valid_keys(kind)
    args = {target_arg(kind): "no/such/model"} if target_arg(kind) in valid else {}
    if not valid:  # oracle: a kind that takes nothing says so
        for message in _refused(ModelSpec.make(kind, kind, {"foo": 1})):
            assert message == f"model {kind!r}: unknown argument 'foo' for kind {kind!r} (it takes no arguments)"
        return
    key = max(valid, key=len)
    for message in _refused(ModelSpec.make(kind, kind, {**args, _misspelt(key): 1})):
        assert message == (f"model {kind!r}: unknown argument {_misspelt(key)!r} for kind {kind!r}; did you mean "
                           f"{key!r}? (it takes: {', '.join(valid)})"), message
        assert "\n" not in message and "runtime" not in message and "truncation" not in message
    # a key nothing resembles: the same line, no hint
    for message in _refused(ModelSpec.make(kind, kind, {**args, "zzzzzzzz": 1})):
        assert "unknown argument 'zzzzzzzz'" in message and "did you mean" not in message and key in message


def test_the_reported_misspellings_name_the_right_keys():
    """Issue 44's two examples, and several wrong keys at once (all named, the first hint given)."""
    judge = ModelSpec.make("judge:x", "judge", {"model": "x", "concurency": 2})
    assert _refused(judge)[0].startswith("model 'judge:x': unknown argument 'concurency' for kind 'judge'; "
                                         "did you mean 'concurrency'? (it takes: model, base_url, ")
    implicit = ModelSpec.make("implicit:x", "implicit", {"model": "x", "bta": 1})
    assert _refused(implicit)[0].startswith("model 'implicit:x': unknown argument 'bta' for kind 'implicit'; "
                                            "did you mean 'beta'? (it takes: model, ref, beta, ")
    with pytest.raises(ConfigError, match=r"unknown arguments 'qqq', 'tmeout' for kind 'judge'; did you mean "
                                          r"'timeout'\?"):
        resolve_model("judge:x", overrides={"tmeout": 1, "qqq": 2})
    with pytest.raises(ConfigError, match=r"unknown argument 'runtime' for kind 'implicit'"):  # the run's, not a key
        resolve_model("implicit:x", overrides={"runtime": "cpu"})


def test_wrapper_kinds_check_their_own_and_their_inner_models_arguments(catalog):
    with pytest.raises(ConfigError, match=r"^model 'discretize:my-avg': unknown argument 'TT' for kind 'discretize'; "
                                          r"did you mean 'T'\? \(it takes: inner, T, p, variant, "):
        resolve_model("discretize:my-avg", catalog.models, overrides={"TT": 8})
    inner = {"kind": "implicit", "args": {"model": "x", "bta": 1}}
    nested = (r"^model 'discretize:x', argument 'inner': model 'implicit': unknown argument 'bta' for kind "
              r"'implicit'; did you mean 'beta'\?")
    with pytest.raises(ConfigError, match=nested):  # as --model-arg inner={...} reaches it
        resolve_model("discretize:x", overrides={"inner": inner})
    with pytest.raises(ConfigError, match=r"model 'my-bad': unknown argument 'unti' for kind 'length'; "
                                          r"did you mean 'unit'\?"):  # an --include entry's key
        resolve_model("discretize:my-bad", {**catalog.models, "my-bad": ModelSpec.make("my-bad", "length",
                                                                                       {"unti": "words"})})
    from rmbench.models import build_model

    with pytest.raises(ConfigError, match=r"model 'implicit': unknown argument 'bta' for kind 'implicit'"):
        build_model(ModelSpec.make("d", "discretize", {"inner": inner}))  # built without resolving first


PLUGIN_RM = '''
from rmbench import RewardModel


class KeywordRM(RewardModel):
    def __init__(self, keyword="please", weight=1.0):
        self.keyword, self.weight = keyword, weight

    def score(self, batch):
        return [self.weight * r.response.count(self.keyword) for r in batch]


class AnyArgs(RewardModel):
    def __init__(self, **options):
        self.options = options

    def score(self, batch):
        return [0.0] * len(batch)


class Plain:  # not a RewardModel: wrapped; a plain function's keywords are read alike
    def score(self, batch):
        return [0.0] * len(batch)


def make_rm(scale=1.0):
    return Plain()
'''


def test_plugin_kinds_get_the_same_message_from_their_signature(tmp_path):
    import rmbench
    from rmbench.models import build_model

    (tmp_path / "plug_rm.py").write_text(PLUGIN_RM)
    module = f"{tmp_path / 'plug_rm.py'}"
    try:
        rmbench.register_model_kind("names-test-keyword", f"{module}:KeywordRM")
        rmbench.register_model_kind("names-test-factory", f"{module}:make_rm")
        rmbench.register_model_kind("names-test-plain", f"{module}:Plain")
        rmbench.register_model_kind("names-test-any", f"{module}:AnyArgs")
        cases = [("names-test-keyword", {"keywrod": "x"}, "; did you mean 'keyword'? (it takes: keyword, weight)"),
                 ("names-test-factory", {"sclae": 2}, "; did you mean 'scale'? (it takes: scale)"),
                 ("names-test-plain", {"scale": 2}, " (it takes no arguments)"),
                 (f"{module}:KeywordRM", {"wieght": 2}, "; did you mean 'weight'? (it takes: keyword, weight)")]
        for kind, args, tail in cases:
            bad = next(iter(args))
            for message in _refused(ModelSpec.make("p", kind, args)):
                assert message == f"model 'p': unknown argument {bad!r} for kind {kind!r}{tail}"
        # a factory taking **kwargs is not checked: it takes what it is given
        assert build_model(ModelSpec.make("p", "names-test-any", {"anything": 1})).options == {"anything": 1}
        assert build_model(resolve_model("names-test-keyword", overrides={"weight": 2})).weight == 2
    finally:
        for name in ("names-test-keyword", "names-test-factory", "names-test-plain", "names-test-any"):
            MODEL_KINDS._entries.pop(name, None)


def test_models_export_names_the_embedded_models_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    result = CliRunner().invoke(app, ["models", "export", "smollm2", "--out", str(tmp_path / "m")])
    assert result.exit_code != 0 and not (tmp_path / "m").exists()
    assert "no embedded model 'smollm2'" in result.output and "did you mean 'smollm2-135m-instruct'" in result.output
