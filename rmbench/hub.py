"""Whether the Hugging Face hub answers, asked once per process.

Without it, transformers and datasets retry every file of an unreachable hub with back-off
(tens of seconds and a screen of retry lines) before they fail. rmbench asks the hub once, with
a short timeout, and when it does not answer loads hub ids from the local hub cache only
(``local_files_only``), so a cached model still loads and a missing one fails at once with one
line. ``HF_HUB_OFFLINE=1`` skips the probe.
"""

from __future__ import annotations

import functools
import os
import re
import urllib.error
import urllib.request
from pathlib import Path

PROBE_TIMEOUT_S = 3.0
"""Seconds the probe waits for the hub's first answer."""

COMMIT = re.compile(r"^[0-9a-f]{40}$")
"""A full git commit hash, as the hub cache's ``refs/`` files hold them."""


def endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def cache_dir() -> Path:
    """The hub cache folder, found as huggingface_hub finds it (``HF_HUB_CACHE``, else
    ``HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub``), without importing it: a cached
    re-run reads it for a hub id's identity and imports nothing heavy."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
    return Path(home).expanduser() / "hub"


def cached_commit(repo_id: str, revision: str | None = None, repo_type: str = "models") -> str | None:
    """The commit ``revision`` (default ``main``) of the hub repository ``repo_id`` resolves to in
    the local hub cache, read from its ``refs/`` file without importing huggingface_hub; a
    revision that is already a commit is its own answer. None when the cache has never fetched it."""
    revision = revision or "main"
    if COMMIT.match(revision):
        return revision
    ref = cache_dir() / f"{repo_type}--{repo_id.replace('/', '--')}" / "refs" / revision
    try:
        commit = ref.read_text().strip()
    except OSError:
        return None
    return commit if COMMIT.match(commit) else None


@functools.cache
def unreachable() -> str | None:
    """None when the hub answers (any HTTP status counts: it is there); otherwise why not, as a
    phrase. Honours ``HF_HUB_OFFLINE`` and the proxy variables (through urllib)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    url = endpoint()
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=PROBE_TIMEOUT_S).close()
    except urllib.error.HTTPError:
        return None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return f"{url} gave no answer within {PROBE_TIMEOUT_S:g} s"
        return f"{url}: {reason}"
    return None


def offline_kwargs() -> dict:
    """``{"local_files_only": True}`` when the hub does not answer, else ``{}``: the keyword
    arguments for a transformers ``from_pretrained`` of a hub id. When it does not answer, the
    process goes offline too (huggingface_hub's ``HF_HUB_OFFLINE``), so that the lookups
    transformers makes beside the ones it is given ``local_files_only`` for (an adapter's
    config, say) read the cache instead of retrying."""
    if unreachable() is None:
        return {}
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True
    return {"local_files_only": True}
