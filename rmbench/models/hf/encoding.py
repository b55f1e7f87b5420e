"""A batch of rendered texts as tensors, and what the adapters need to know about each row."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Encoding:
    """Texts tokenised for one forward pass (right-padded unless the adapter pads left).

    ``position_ids`` count real tokens only, so left and right padding give the same numbers.
    ``positions``: per row, the indices of the response's tokens (when the adapter reads them).
    ``shared``: per row, how many leading tokens rows of the same prompt may share (the prompt
    KV cache, :mod:`rmbench.models.prefix`), or None when the pass must not share any.
    ``pixels``: a model that reads images (:mod:`rmbench.models.hf.vision`): the processor's
    other inputs (``pixel_values`` and the like), passed to the forward pass as they are; None for text.
    """

    input_ids: Any
    attention_mask: Any
    position_ids: Any
    positions: tuple[tuple[int, ...], ...] | None = None
    shared: tuple[int, ...] | None = None
    pixels: Mapping[str, Any] | None = None

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def unshared(self) -> Encoding:
        return dataclasses.replace(self, shared=None)

    def lengths(self) -> list[int]:
        """Real tokens per row."""
        return [int(n) for n in self.attention_mask.sum(1).tolist()]
