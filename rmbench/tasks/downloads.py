"""Data that is only on the web: a file declared by its URL and its sha256, downloaded once into
the user cache, verified, then read like a local file.

A web source is written ``https://HOST/PATH#sha256=HEX`` (pip's form of a pinned URL) wherever
a task takes a path: a task entry's ``path`` / ``paths``, or ``--data TASK=URL#sha256=HEX``.
The checksum is required: it is what makes the data the published data, and the cache is keyed
by it (``$XDG_CACHE_HOME/rmbench/downloads/HEX/NAME``). A download that is cut short or whose
checksum differs is an error and is never cached; the partial file is removed. A file published
in a git repository may instead be pinned by the id git gives its bytes,
``URL#git-blob-sha1=HEX`` (sha1 of ``"blob <size>\\0"`` + bytes, what a commit's tree records;
cached under ``downloads/git-blob-sha1-HEX/NAME``).

A task that pins many files keeps their checksums in a data manifest shipped with the package,
not in its code: :func:`load_pins` reads one (``{"base": URL, "files": {KEY: "sha256=HEX" |
"git-blob-sha1=HEX"}}``, each file at ``base`` + the URL-quoted ``KEY`` + ``suffix``) into
``KEY -> URL#ALGORITHM=HEX`` sources, checked entry by entry. A task entry names its manifest
with ``pins: NAME`` (:func:`pin_manifest`: a manifest shipped in ``rmbench/tasks/data/``, or a
path), so the checksums are written once, in the manifest.

``RMBENCH_MIRROR=PREFIX`` serves air-gapped machines the way ``HF_ENDPOINT`` serves the hub: a
source ``https://HOST/PATH`` is fetched from ``PREFIX/HOST/PATH`` instead (the checksum still
decides whether the file is the right one). PREFIX is a URL prefix or a local folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rmbench.errors import DataError
from rmbench.paths import user_cache_dir

MIRROR_ENV = "RMBENCH_MIRROR"
TIMEOUT_S = 30.0
"""Seconds to wait for a server's answer (per read, not for the whole transfer)."""
SHA256, GIT_BLOB = "sha256", "git-blob-sha1"
_CHECKSUM = re.compile(r"(sha256)=([0-9a-f]{64})|(git-blob-sha1)=([0-9a-f]{40})")
_PIN_FORMS = "sha256=<64 hex digits> or git-blob-sha1=<40 hex digits>"


@dataclass(frozen=True)
class RemoteFile:
    """A published file: where it lives and the checksum of its bytes (``sha256`` holds the hex
    digest; ``algorithm`` says which: ``"sha256"`` or ``"git-blob-sha1"``)."""

    url: str
    sha256: str
    algorithm: str = SHA256

    @property
    def name(self) -> str:
        """The file name the URL ends in (its suffix decides how it is read)."""
        return Path(urllib.parse.urlparse(self.url).path).name or "download"

    def text(self) -> str:
        return f"{self.url}#{self.algorithm}={self.sha256}"

    def digest_of(self, path: Path) -> str:
        """The checksum of ``path``'s bytes by this file's algorithm."""
        if self.algorithm == GIT_BLOB:
            return git_blob_id(path)
        h = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return h.hexdigest()


def git_blob_id(path: Path) -> str:
    """The id git gives a file's bytes: sha1 of ``b"blob <size>\\0"`` followed by them."""
    h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def is_web_source(text: str) -> bool:
    return isinstance(text, str) and text.startswith(("https://", "http://"))


def parse_remote(text: str) -> RemoteFile | None:
    """``URL#sha256=HEX`` (or ``URL#git-blob-sha1=HEX``) -> a RemoteFile; None for anything that
    is not a URL; a URL without a valid checksum is a :class:`~rmbench.errors.DataError`."""
    if not is_web_source(text):
        return None
    url, _, fragment = text.partition("#")
    match = _CHECKSUM.fullmatch(fragment.strip().lower())
    if match is None:
        raise DataError("a web source needs the sha256 of its file: write URL#sha256=<64 hex digits> "
                        "(sha256sum FILE prints it) or URL#git-blob-sha1=<40 hex digits>", path=url)
    if match.group(1):
        return RemoteFile(url, match.group(2))
    return RemoteFile(url, match.group(4), GIT_BLOB)


PIN_MANIFESTS = Path(__file__).parent / "data"
"""The pin manifests shipped with the package (``rmbench/tasks/data/*.json``)."""


def pin_manifest(name: str | Path) -> Path:
    """The manifest a task entry's ``pins: NAME`` names: a bare file name is one of the package's
    (:data:`PIN_MANIFESTS`), anything else a path."""
    path = Path(name).expanduser()
    return PIN_MANIFESTS / path if path.name == str(name) else path


def load_pins(manifest: Path) -> dict[str, str]:
    """A pin manifest (JSON: ``{"base": URL, "suffix": ".json", "files": {KEY: "sha256=HEX"}}``,
    ``git-blob-sha1=HEX`` also taken) -> ``KEY -> base + quote(KEY) + suffix + "#" + checksum``,
    the sources a task's ``paths`` holds. A malformed manifest or entry (a checksum of the wrong
    form or length) is one :class:`~rmbench.errors.DataError` naming the manifest and the key."""
    where = str(manifest)
    try:
        data = json.loads(Path(manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read the pin manifest: {exc}", path=where) from None
    if not (isinstance(data, dict) and is_web_source(data.get("base", "")) and isinstance(data.get("files"), dict)):
        raise DataError('a pin manifest is {"base": "https://...", "files": {KEY: "sha256=HEX"}}', path=where)
    base, suffix = data["base"], str(data.get("suffix", ""))
    pins = {}
    for key, checksum in data["files"].items():
        if not isinstance(checksum, str) or _CHECKSUM.fullmatch(checksum.strip().lower()) is None:
            raise DataError(f"files[{key!r}]: checksum {checksum!r} is not {_PIN_FORMS}", path=where)
        pins[key] = f"{base}{urllib.parse.quote(key)}{suffix}#{checksum.strip().lower()}"
    return pins


def source_url(url: str) -> str:
    """Where ``url`` is fetched from: itself, or ``$RMBENCH_MIRROR/HOST/PATH`` when a mirror is set.
    The mirror is a URL prefix (``https://``, ``http://``, ``file://``) or a local folder that
    holds ``HOST/PATH`` (read as ``file://``); a folder that does not exist is one clear error."""
    prefix = os.environ.get(MIRROR_ENV, "").strip()
    if not prefix:
        return url
    if "://" not in prefix:  # a path: a folder laid out as HOST/PATH
        folder = Path(prefix).expanduser()
        if not folder.is_dir():
            raise DataError(f"{MIRROR_ENV}={prefix} is neither a URL prefix (https://..., file://...) nor an existing "
                            f"folder; set it to a mirror's URL prefix or to a folder that holds HOST/PATH (for this "
                            f"file: {folder / urllib.parse.unquote(mirror_tail(url))})", path=url)
        # The folder holds the files under their names: a URL's %20 is a space there (as_uri quotes it again).
        return (folder.resolve() / urllib.parse.unquote(mirror_tail(url))).as_uri()
    return prefix.rstrip("/") + "/" + mirror_tail(url)


def mirror_tail(url: str) -> str:
    """``HOST/PATH`` of ``url``: where a mirror serves it under its prefix."""
    parts = urllib.parse.urlparse(url)
    return parts.netloc + parts.path + (f"?{parts.query}" if parts.query else "")


def cached_path(remote: RemoteFile) -> Path:
    """Where the verified copy of ``remote`` lives (content-addressed: one copy per checksum)."""
    folder = remote.sha256 if remote.algorithm == SHA256 else f"{remote.algorithm}-{remote.sha256}"
    return user_cache_dir() / "downloads" / folder / remote.name


def is_cached(remote: RemoteFile) -> bool:
    return cached_path(remote).is_file()


def _how_to_get(url: str) -> str:
    mirror = os.environ.get(MIRROR_ENV)
    where = f"the mirror {MIRROR_ENV}={mirror}" if mirror else f"the web (or set {MIRROR_ENV}=PREFIX to a mirror " \
                                                                 f"that serves PREFIX/HOST/PATH)"
    return f"make {where} reachable, or download {url} yourself and pass it with --data TASK=PATH"


def fetch(remote: RemoteFile) -> Path:
    """The local, verified copy of ``remote``: from the cache, or downloaded now (with a progress
    bar on a terminal, one line otherwise), checked against its length and checksum, and only
    then moved into the cache."""
    dest = cached_path(remote)
    if dest.is_file():
        return dest
    source = source_url(remote.url)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the download cache {dest.parent}: {exc.strerror or exc}",
                        path=remote.url) from None
    part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    try:
        digest, size = _download(source, part, remote.name)
        if remote.algorithm != SHA256:
            digest = remote.digest_of(part)
        if digest != remote.sha256:
            raise DataError(f"the downloaded file (from {source}, {size} bytes) has {remote.algorithm} {digest}, "
                            f"not the declared {remote.sha256}; it was not kept. The source changed or the mirror "
                            f"serves another file", path=remote.url)
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


def _download(source: str, part: Path, name: str) -> tuple[str, int]:
    """Stream ``source`` into ``part``; (sha256, bytes). Errors are one-line DataErrors."""
    import http.client  # the network modules load only when a file is not cached yet
    import urllib.error
    import urllib.request

    h, size, total = hashlib.sha256(), 0, None
    try:
        with urllib.request.urlopen(source, timeout=TIMEOUT_S) as response:
            total = response.headers.get("Content-Length")
            total = int(total) if total and total.isdigit() else None
            with part.open("wb") as out, _progress(name, source, total) as advance:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    h.update(chunk)
                    size += len(chunk)
                    advance(len(chunk))
    except http.client.IncompleteRead:
        raise DataError(f"the download from {source} was cut short after {size} bytes"
                        + (f" of {total}" if total else "") + "; nothing was kept, run again", path=source) from None
    except urllib.error.HTTPError as exc:
        raise DataError(f"could not download {source}: HTTP {exc.code} {exc.reason}; {_how_to_get(source)}",
                        path=source) from None
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(f"could not download {source}: {reason}; {_how_to_get(source)}", path=source) from None
    except OSError as exc:  # writing the part file: a full disk, a read-only cache
        raise DataError(f"could not write the download to {part.parent}: {exc.strerror or exc}", path=source) from None
    if total is not None and size != total:
        raise DataError(f"the download from {source} was cut short: {size} of {total} bytes; nothing was kept, "
                        f"run again", path=source)
    return h.hexdigest(), size


@contextmanager
def _progress(name: str, source: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A transfer bar on a terminal (bytes, rate, time left); otherwise a line before, one every
    ``RMBENCH_PROGRESS_EVERY`` seconds (:mod:`rmbench.core.progress`) and one after."""
    if not sys.stderr.isatty():
        yield from _plain_progress(name, source, total)
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    with Progress(TextColumn(f"downloading {name}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("download", total=total)
        yield lambda n: bar.advance(task, n)


def _plain_progress(name: str, source: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """Plain lines on a pipe or in a log; a line is due when bytes arrive (a stalled download
    times out after ``TIMEOUT_S``)."""
    import time

    from rmbench.core.progress import progress_every, progress_line

    every, start = progress_every(), time.monotonic()
    state = {"done": 0, "last": start}
    what = f"downloading {name}"

    def say(finished: bool = False) -> None:
        print(progress_line(what, state["done"] / 1e6, total / 1e6 if total else None, "MB", time.monotonic() - start,
                            finished=finished), file=sys.stderr, flush=True)

    def advance(n: int) -> None:
        state["done"] += n
        now = time.monotonic()
        if now - state["last"] >= every:
            state["last"] = now
            say()

    print(f"{what} from {source}" + (f" ({total:,} bytes)" if total else ""), file=sys.stderr, flush=True)
    yield advance
    say(finished=True)
