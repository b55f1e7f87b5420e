"""Identity of transformers weights from their files, without loading them: a sha256 over a
local folder's weight, config and tokenizer files (hashes remembered per file in a shared
index, updated under a lock), or a hub id's resolved commit."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.files import atomic_write_text
from rmbench.models.hf.loading import ModelSource
from rmbench.paths import user_cache_dir

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
IDENTITY_SUFFIXES = WEIGHT_SUFFIXES + (".json", ".model", ".txt", ".jinja")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (a lock file beside the index) where the OS has flock."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            import fcntl
        except ImportError:  # Windows: the atomic write below still never leaves a torn index
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_index(path: Path) -> dict[str, str]:
    try:
        index = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return index if isinstance(index, dict) else {}


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def folder_fingerprint(folder: str | Path) -> str:
    """sha256 over the weight, config and tokenizer files of a folder. Each file's hash is
    remembered by (path, size, mtime) in ``file_hashes.json`` in the user cache, which
    concurrent runs update under a lock (re-read, merged, replaced atomically)."""
    folder = Path(folder)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in IDENTITY_SUFFIXES)
    index_path = user_cache_dir() / "file_hashes.json"
    index = _read_index(index_path)
    digests, new = [], {}
    for p in files:
        st = p.stat()
        key = f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        digest = index.get(key)
        if digest is None:
            digest = new[key] = file_sha256(p)
        digests.append(f"{p.name}:{digest}\n")
    if new:
        try:
            with _locked(index_path.with_name("file_hashes.lock")):
                merged = {**_read_index(index_path), **new}
                atomic_write_text(index_path, json.dumps(merged))
        except OSError:  # a full or read-only cache disk: the index only saves hashing again next time
            pass
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def cached_hub_commit(source: ModelSource) -> str | None:
    """The commit a hub id's revision resolves to in the local hub cache, without loading
    anything (None when the hub cache has never fetched it)."""
    from rmbench import hub

    return hub.cached_commit(source.location, source.revision)


def weights_identity(source: ModelSource, commit: str | None = None) -> str:
    """Local folder: hash of its files. Hub: the resolved commit (``commit``, e.g. a loaded
    config's ``_commit_hash``, or the hub cache's record of the revision)."""
    if source.is_local:
        return "sha256:" + folder_fingerprint(source.location)
    commit = commit or cached_hub_commit(source)
    return f"hub:{source.location}@{commit or source.revision or 'main'}"


def tokenizer_identity(tokenizer) -> str:
    """A hash of how a tokenizer encodes text: its serialised fast tokenizer (vocabulary, merges,
    normalisers, special tokens) and chat template."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    described = {"tokenizer": backend.to_str() if backend is not None else repr(sorted(tokenizer.get_vocab().items())),
                 "chat_template": getattr(tokenizer, "chat_template", None), "class": type(tokenizer).__name__}
    return sha256_hex(canonical_json(described))
