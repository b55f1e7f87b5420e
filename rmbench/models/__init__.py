"""Model adapters: the kinds registry, spec parsing, and building an adapter from a spec.

A model is named on the command line as

* a kind with no arguments: ``oracle``, ``constant``, ``length``, or a kind a plugin registered;
* a kind with a target: ``python:path/to/file.py:func``, ``implicit:path/or/hub-id``,
  ``discretize:smollm2-135m-gen`` (``KIND:TARGET``);
* a folder written by ``rmbench train`` (it holds ``rmbench_model.yaml``);
* a preset (``smollm2-135m``, ``smollm2-135m-gen``...: :mod:`rmbench.models.presets`);
* a named entry from a YAML/TOML file (``type: model``) in ``tasks/`` or an ``--include`` folder.

Third-party packages add kinds through the ``rmbench.models`` entry-point group; the entry
point names a factory (class or function) called with the spec's arguments that returns a
:class:`~rmbench.models.base.RewardModel` or any object with a ``score(batch)`` method.

Layer: beside :mod:`rmbench.tasks`, above :mod:`rmbench.core`. May import :mod:`rmbench.core` and
the shared top-level modules only (never tasks, catalog, results, scoring, rewrite, train or cli);
one module per family (``baselines``, ``implicit``, ``seqcls``, ``generative``, ``discretize``,
``lmeval``, ``vllm``, ``published``, ``pairrm``), the transformers machinery in ``hf/``; ``live``: the transformers
adapters around weights in memory (a model under training), built in code, not from a spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rmbench.core.specs import ModelSpec
from rmbench.models.base import RewardModel, Runtime, ScoreRequest, Truncation
from rmbench.registry import Registry
from rmbench.registry.factories import instantiate

MODEL_KINDS: Registry = Registry("model", entry_point_group="rmbench.models")
MODEL_KINDS.register("oracle", "rmbench.models.baselines:OracleRM",
                     description="reward = true utility (upper bound; for tests)")
MODEL_KINDS.register("constant", "rmbench.models.baselines:ConstantRM",
                     description="reward = a constant (no discrimination)")
MODEL_KINDS.register("length", "rmbench.models.baselines:LengthRM",
                     description="reward = response length (the length-bias baseline)")
MODEL_KINDS.register("python", "rmbench.models.python_fn:PythonFunctionRM",
                     description="python:PATH_OR_MODULE:FUNC; FUNC(list of (prompt, response)) -> list of floats")
MODEL_KINDS.register("python-prm", "rmbench.models.python_prm:PythonPRM",
                     description="python-prm:PATH_OR_MODULE:FUNC; FUNC(list of (problem, steps)) -> list of lists of "
                     "step scores (a PRM; aggregate=min|last|prod|mean as a response-level RM)")
MODEL_KINDS.register("prm", "rmbench.models.prm:TransformersPRM",
                     description="transformers process reward model (prm:MODEL; style=trl|qwen|math_shepherd, read "
                     "from the checkpoint where it says; aggregate=min|last|prod|mean as a response-level RM)")
MODEL_KINDS.register("implicit", "rmbench.models.implicit:ImplicitRM",
                     description="implicit RM beta*log(pi/pi_ref) of a causal LM (implicit:MODEL, reference-free); a "
                     "VLM (AutoModelForImageTextToText) reads images when the checkpoint ships an image processor")
MODEL_KINDS.register("seqcls", "rmbench.models.seqcls:SeqClsRM",
                     description="explicit RM: AutoModelForSequenceClassification, 1 output (seqcls:MODEL); reads "
                     "images when the checkpoint ships an image processor (Gemma 3)")
MODEL_KINDS.register("linear", "rmbench.models.seqcls:LinearHeadRM",
                     description="explicit RM: linear head <u, h(x,y)> from a file on any backbone (args model, head); "
                     "a VLM's language model, reading images, when the checkpoint ships an image processor")
MODEL_KINDS.register("pairrm", "rmbench.models.pairrm:PairRM",
                     description="pairwise preference model, LLM-Blender's PairRM and kin (pairrm:MODEL): each pair "
                     "compared in both orders; reward = mean comparison logit over the group "
                     "(format=conversation|plain, score=logit|verdict)")
MODEL_KINDS.register("generative", "rmbench.models.generative:GenerativeRM",
                     description="generative verifier: P('Yes') to 'Is the answer correct?' (generative:MODEL); a VLM "
                     "sees the prompt's images when the checkpoint ships an image processor")
MODEL_KINDS.register("discretize", "rmbench.models.discretize:DiscretizedRM",
                     description="MC-dropout discretisation of another adapter (discretize:MODEL_SPEC); reads images "
                     "when that adapter does")
MODEL_KINDS.register("vllm_implicit", "rmbench.models.vllm:VLLMImplicitRM",
                     description="implicit RM through vLLM prompt_logprobs (GPU; pip install 'rmbench[vllm]')")
MODEL_KINDS.register("vllm_seqcls", "rmbench.models.vllm:VLLMSeqClsRM",
                     description="seqcls RM through vLLM's pooling runner (GPU; pip install 'rmbench[vllm]')")
MODEL_KINDS.register("judge", "rmbench.models.judge.step_judge:Judge",
                     description="LLM judge behind an OpenAI-compatible server (judge:MODEL; mode rating, pairwise or "
                     "fourway; steps or critic: a process reward model)")
MODEL_KINDS.register("lmeval", "rmbench.models.lmeval:LMEvalRM",
                     description="lm-evaluation-harness model as implicit RM via loglikelihood (args lm, model_args)")
MODEL_KINDS.register("published", "rmbench.models.published:PublishedRM",
                     description="another tool's published per-item scores replayed: published:rewardbench2:ORG/MODEL, "
                     "published:judgebench:FILE, published:rmb:FILE")


def parse_model_spec(text: str, named: Mapping[str, ModelSpec] | None = None) -> ModelSpec:
    """Turn a ``--model`` string into a frozen spec (see the module docstring for the forms),
    its nested references (discretize's ``inner``) resolved over ``named`` too.

    Thin call of :class:`rmbench.models.names.ModelNames`. A nested reference that names no
    model does not fail here but when the model is built (so that ``--model-arg``, merged
    after this, can still replace it); :func:`rmbench.models.names.resolve_model` fails at once.
    """
    from rmbench.models.names import ModelNames

    return ModelNames(named).resolve(text, defer_unknown=True)


class _PluginModel(RewardModel):
    """Wraps a plugin object that has ``score`` but does not subclass RewardModel; its identity
    is its spec's kind and arguments (never the spec's name)."""

    def __init__(self, inner, spec: ModelSpec) -> None:
        self.inner = inner
        self.plugin_kind, self.plugin_args = spec.kind, spec.args_dict
        self.max_batch = getattr(inner, "max_batch", None)

    def score(self, batch: Sequence[ScoreRequest]):
        return self.inner.score(batch)

    def identity(self) -> dict:
        return {"kind": self.plugin_kind, "args": self.plugin_args}


def build_model(spec: ModelSpec, runtime: Runtime | None = None, truncation: Truncation | None = None) -> RewardModel:
    """Instantiate the adapter a spec describes; factories that take ``runtime`` or
    ``truncation`` (the run's ``--max-length``/``--truncation`` policy) get them. Errors name the
    model and what was wrong. A kind an installed package registered (an entry point) records its
    :class:`~rmbench.registry.PluginSource` on the adapter (:attr:`RewardModel.plugin`)."""
    model = instantiate(MODEL_KINDS, spec, "model", "score", RewardModel, _PluginModel,
                        {"runtime": runtime or Runtime(), "truncation": truncation})
    if ":" not in spec.kind:  # a registered kind: an entry point's distribution enters its fingerprint
        model.plugin = MODEL_KINDS.source(spec.kind)
    return model


def register_model_kind(name: str, target: object, *, description: str = "") -> None:
    """Register a model kind in this process (public API: ``rmbench.register_model_kind``).

    ``target`` is a RewardModel subclass or factory, or a lazy ``"module:attr"`` (or
    ``"file.py:attr"``) string imported on first use. The name then works wherever a built-in
    kind does (``--model {name}``, entry files' ``kind:``). A name that is already
    registered is a :class:`~rmbench.registry.RegistryError`. An installed package registers
    through the ``rmbench.models`` entry-point group instead, so that every process sees it."""
    MODEL_KINDS.register(name, target, description=description, origin=f"register_model_kind({name!r})")


__all__ = ["MODEL_KINDS", "register_model_kind", "RewardModel", "Runtime", "ScoreRequest",
           "Truncation", "build_model", "parse_model_spec"]
