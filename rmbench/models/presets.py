"""Named, ready-to-use models (``rmbench models list`` shows them beside the YAML entries), in one
:class:`~rmbench.registry.Registry` as every other kind of registered thing."""

from __future__ import annotations

from rmbench.core.specs import ModelSpec
from rmbench.registry import Registry

SMOL = "smollm2-135m-instruct"

PRESETS: Registry[ModelSpec] = Registry("model preset", kind=ModelSpec, key=lambda spec: spec.name)
"""Each preset's :class:`ModelSpec` by its name, with its description and origin."""

for _spec, _description in (
    (ModelSpec.make("smollm2-135m", "implicit", {"model": SMOL}),
     "SmolLM2-135M-Instruct as a reference-free implicit RM: sum of log pi(y|x) (the default)"),
    (ModelSpec.make("smollm2-135m-avg", "implicit", {"model": SMOL, "normalize": "mean"}),
     "SmolLM2-135M-Instruct, reference-free implicit RM, mean log-prob per response token"),
    (ModelSpec.make("smollm2-135m-gen", "generative", {"model": SMOL}),
     "SmolLM2-135M-Instruct as a generative verifier: P('Yes')"),
    (ModelSpec.make("smollm2-135m-discrete", "discretize", {"inner": "smollm2-135m-avg", "T": 4, "p": 0.02}),
     "smollm2-135m-avg discretised with MC dropout (T=4, p=0.02)"),
):
    PRESETS.register(_spec.name, _spec, description=_description)


def presets() -> dict[str, ModelSpec]:
    """Every preset's spec by name, in registration order (the named models every resolution includes)."""
    return dict(PRESETS.items())
