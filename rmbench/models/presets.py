"""Named, ready-to-use models (``rmbench models list`` shows them beside the YAML entries)."""

from __future__ import annotations

from rmbench.core.specs import ModelSpec

SMOL = "smollm2-135m-instruct"

PRESETS: dict[str, ModelSpec] = {
    "smollm2-135m": ModelSpec.make("smollm2-135m", "implicit", {"model": SMOL}),
    "smollm2-135m-avg": ModelSpec.make("smollm2-135m-avg", "implicit", {"model": SMOL, "normalize": "mean"}),
    "smollm2-135m-gen": ModelSpec.make("smollm2-135m-gen", "generative", {"model": SMOL}),
    "smollm2-135m-discrete": ModelSpec.make("smollm2-135m-discrete", "discretize",
                                       {"inner": "smollm2-135m-avg", "T": 4, "p": 0.02}),
}

DESCRIPTIONS = {
    "smollm2-135m": "SmolLM2-135M-Instruct as a reference-free implicit RM: sum of log pi(y|x) (the default)",
    "smollm2-135m-avg": "SmolLM2-135M-Instruct, reference-free implicit RM, mean log-prob per response token",
    "smollm2-135m-gen": "SmolLM2-135M-Instruct as a generative verifier: P('Yes')",
    "smollm2-135m-discrete": "smollm2-135m-avg discretised with MC dropout (T=4, p=0.02)",
}
