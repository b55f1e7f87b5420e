"""Transformers' own progress bars, turned off while rmbench loads weights."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_loading(downloads: bool = True) -> Iterator[None]:
    """Transformers' own progress bars ("Loading weights", "Writing model shards", "Converting and
    de-quantizing GGUF tensors") off inside the block, so that only rmbench's progress shows, and
    every switch as it was after it. ``downloads``: keep the hub's download bars as they were (a
    download is worth watching); False turns them off too. The GGUF reader draws a plain ``tqdm``
    that no transformers switch reaches, so inside the block its module's ``tqdm`` is a disabled
    one."""
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as transformers_logging

    was_on, hub_was_on = transformers_logging.is_progress_bar_enabled(), not are_progress_bars_disabled()
    transformers_logging.disable_progress_bar()  # turns the hub's bars off too
    if downloads and hub_was_on:
        enable_progress_bars()
    gguf_tqdm = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(gguf_tqdm, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = gguf_tqdm
        if was_on:
            transformers_logging.enable_progress_bar()  # turns the hub's bars on too
        (enable_progress_bars if hub_was_on else disable_progress_bars)()
