"""Prompt KV-cache reuse: the k responses to one prompt share the prompt's tokens, so a causal
backbone needs to run them once.

For a batch whose row i may share its first ``q_i`` tokens with other rows:

1. rows whose first ``q_i`` token ids are identical form one unit (compared token by token, so
   reuse is exact: a template or a truncation that changes the prefix simply makes another unit);
2. the backbone runs once over the units' prefixes (right-padded), keeping the key/value cache;
3. the cache is copied out to the rows (``reorder_cache`` with repeated indices), and the backbone
   runs over each row's remaining tokens with that cache, attention mask ``[prefix mask, rest
   mask]`` (padded prefix positions are masked) and position ids that continue the prefix's;
4. the hidden states are laid back into the full (rows x length) layout. Prefix positions are
   left at zero: callers choose ``q_i`` below the first position any head reads (the implicit RM
   reads from the token before the response, so it shares one token less than the prompt).

Only for causal (decoder) backbones, where a token's state cannot depend on later tokens.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any


def forward_takes(module: object, argument: str) -> bool:
    """Whether ``module.forward`` takes ``argument`` (transformers renames cache arguments between
    releases); read once per class, not on every batch."""
    # a class is hashable, but mypy does not match class objects to the Hashable protocol
    return argument in _forward_parameters(type(module))  # type: ignore[arg-type]


@functools.cache
def _forward_parameters(cls: type[Any]) -> frozenset[str]:
    return frozenset(inspect.signature(cls.forward).parameters)


def prefix_units(input_ids, shared: Sequence[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """(unit index of each row, (first row, prefix length) of each unit); rows share a unit
    when their first ``shared[i]`` token ids are identical."""
    keys: dict[tuple, int] = {}
    unit_of: list[int] = []
    units: list[tuple[int, int]] = []
    for i, q in enumerate(shared):
        key = tuple(input_ids[i, :int(q)].tolist())
        if key not in keys:
            keys[key] = len(units)
            units.append((i, int(q)))
        unit_of.append(keys[key])
    return unit_of, units


def shared_prefix_hidden(backbone, input_ids, attention_mask, shared: Sequence[int], device):
    """Last hidden states (rows x length x hidden) computed with shared prefixes, or None when
    no two rows share one (or a row shares nothing), so the caller runs the plain pass."""
    import torch
    from transformers import DynamicCache

    n, width = input_ids.shape
    if n < 2 or min(int(q) for q in shared) < 1:
        return None
    unit_of, units = prefix_units(input_ids, shared)
    if len(units) == n:
        return None
    lengths = attention_mask.sum(1).tolist()
    q_max = max(q for _, q in units)
    p_ids = torch.zeros((len(units), q_max), dtype=input_ids.dtype)
    p_mask = torch.zeros((len(units), q_max), dtype=attention_mask.dtype)
    for u, (row, q) in enumerate(units):
        p_ids[u, :q] = input_ids[row, :q]
        p_mask[u, :q] = 1
    rest = [int(lengths[i]) - int(shared[i]) for i in range(n)]
    s_max = max(rest)
    s_ids = torch.zeros((n, s_max), dtype=input_ids.dtype)
    s_mask = torch.zeros((n, s_max), dtype=attention_mask.dtype)
    for i in range(n):
        q = int(shared[i])
        s_ids[i, :rest[i]] = input_ids[i, q:q + rest[i]]
        s_mask[i, :rest[i]] = 1
    positions = torch.tensor([int(q) for q in shared]).unsqueeze(1) + (s_mask.cumsum(-1) - 1).clamp(min=0)
    index = torch.tensor(unit_of)
    cache = DynamicCache(config=backbone.config)
    # transformers >= 5.2x names the argument ``cache``; earlier versions ``past_key_values``.
    kw = "cache" if forward_takes(backbone, "cache") else "past_key_values"
    with torch.inference_mode():
        backbone(input_ids=p_ids.to(device), attention_mask=p_mask.to(device),
                 position_ids=(p_mask.cumsum(-1) - 1).clamp(min=0).to(device), use_cache=True, **{kw: cache})
        # int64, so a LongTensor; torch's stubs type .to() as Tensor
        cache.reorder_cache(index.to(device))  # type: ignore[arg-type]
        out = backbone(input_ids=s_ids.to(device), attention_mask=torch.cat([p_mask[index], s_mask], 1).to(device),
                       position_ids=positions.to(device), use_cache=True, **{kw: cache}).last_hidden_state
        hidden = out.new_zeros((n, width, out.shape[-1]))
        for i in range(n):
            q = int(shared[i])
            hidden[i, q:q + rest[i]] = out[i, :rest[i]]
    return hidden

