"""What every transformers-based adapter shares, one concern per module:

* :mod:`~rmbench.models.hf.loading`: dtype and device, where weights come from, safe loading;
* :mod:`~rmbench.models.hf.identity`: weights identity from files (hashes, hub commits);
* :mod:`~rmbench.models.hf.rendering`: chat/plain rendering and the response's tokens;
* :mod:`~rmbench.models.hf.encoding`: the typed :class:`Encoding` of a batch;
* :mod:`~rmbench.models.hf.front`: the tokenizer front-end (shared with the vLLM adapters);
* :mod:`~rmbench.models.hf.dropout`: MC dropout inside a backbone;
* :mod:`~rmbench.models.hf.base`: the thin adapter bases.

Part of the models layer: imports rmbench.models, rmbench.core and the shared modules only;
its modules import one another without a circle (identity reads the hub cache through
rmbench.hub, so loading never imports identity).
"""

from rmbench.models.hf.base import HFRewardModel, HFTokenizedModel
from rmbench.models.hf.encoding import Encoding
from rmbench.models.hf.loading import ModelSource, load_weights, resolve_source
from rmbench.models.hf.rendering import Formatter, response_boundary, response_token_positions, shareable_prefix

__all__ = ["Encoding", "Formatter", "HFRewardModel", "HFTokenizedModel", "ModelSource", "load_weights",
           "resolve_source", "response_boundary", "response_token_positions", "shareable_prefix"]
