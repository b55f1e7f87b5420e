"""Data that is only on the web: a file declared by its URL and its sha256, downloaded once into
the user cache, verified, then read like a local file.

A web source is written ``https://HOST/PATH#sha256=HEX`` (pip's form of a pinned URL) wherever
a task takes a path: a task entry's ``path`` / ``paths``, or ``--data TASK=URL#sha256=HEX``.
The checksum is required: it is what makes the data the published data, and the cache is keyed
by it (``$XDG_CACHE_HOME/rmbench/downloads/HEX/NAME``). A download that is cut short or whose
sha256 differs is an error and is never cached; the partial file is removed.

``RMBENCH_MIRROR=PREFIX`` serves air-gapped machines the way ``HF_ENDPOINT`` serves the hub: a
source ``https://HOST/PATH`` is fetched from ``PREFIX/HOST/PATH`` instead (the checksum still
decides whether the file is the right one). PREFIX is a URL prefix or a local folder.
"""

from __future__ import annotations

import hashlib
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
_CHECKSUM = re.compile(r"sha256=([0-9a-f]{64})")


@dataclass(frozen=True)
class RemoteFile:
    """A published file: where it lives and the sha256 of its bytes."""

    url: str
    sha256: str

    @property
    def name(self) -> str:
        """The file name the URL ends in (its suffix decides how it is read)."""
        return Path(urllib.parse.urlparse(self.url).path).name or "download"

    def text(self) -> str:
        return f"{self.url}#sha256={self.sha256}"


def is_web_source(text: str) -> bool:
    return isinstance(text, str) and text.startswith(("https://", "http://"))


def parse_remote(text: str) -> RemoteFile | None:
    """``URL#sha256=HEX`` -> a RemoteFile; None for anything that is not a URL; a URL without a
    valid checksum is a :class:`DataError`."""
    if not is_web_source(text):
        return None
    url, _, fragment = text.partition("#")
    match = _CHECKSUM.fullmatch(fragment.strip().lower())
    if match is None:
        raise DataError("a web source needs the sha256 of its file: write URL#sha256=<64 hex digits> "
                        "(sha256sum FILE prints it)", path=url)
    return RemoteFile(url, match.group(1))


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
    return user_cache_dir() / "downloads" / remote.sha256 / remote.name


def is_cached(remote: RemoteFile) -> bool:
    return cached_path(remote).is_file()


def _how_to_get(url: str) -> str:
    mirror = os.environ.get(MIRROR_ENV)
    where = f"the mirror {MIRROR_ENV}={mirror}" if mirror else f"the web (or set {MIRROR_ENV}=PREFIX to a mirror " \
                                                                 f"that serves PREFIX/HOST/PATH)"
    return f"make {where} reachable, or download {url} yourself and pass it with --data TASK=PATH"


def fetch(remote: RemoteFile) -> Path:
    """The local, verified copy of ``remote``: from the cache, or downloaded now (with a progress
    bar on a terminal, one line otherwise), checked against its length and sha256, and only
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
        if digest != remote.sha256:
            raise DataError(f"the downloaded file (from {source}, {size} bytes) has sha256 {digest}, not the "
                            f"declared {remote.sha256}; it was not kept. The source changed or the mirror serves "
                            f"another file", path=remote.url)
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
