"""Reading a published file without holding it: JSON Lines line by line, a JSON document one
value at a time (an array element by element, an object member by member), each value with
its byte span in the file, so that a later pass reads back only the values it wants.

* :class:`Source`: the file open for one pass; every byte read goes through its sha256, and
  its size and modification time are kept (:meth:`Source.stamp`) so that :func:`read_spans`
  refuses a file changed since.
* :class:`JsonReader`: a pull parser over a :class:`Source`, for the outer levels of a
  document only: :meth:`~JsonReader.elements` and :meth:`~JsonReader.members` step through a
  container, :meth:`~JsonReader.value` decodes one value whole (``json.JSONDecoder.raw_decode``
  over a window of the text, refilled as needed) and returns its span. A value nested deeper
  than Python's parser goes is one :class:`DataError` (:data:`TOO_DEEP`), and a syntax error
  is ``not JSON: MSG: line L column C (char P)``, positions in the whole document as
  ``json.loads`` gives them.

What is held at once: one line (JSON Lines), or the window (:data:`CHUNK`, grown to the size of
the value being read) and one value.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from rmbench.errors import DataError

CHUNK = 1 << 20
"""Bytes read at a time into the window."""
TOO_DEEP = "JSON nested deeper than Python's parser goes (no published format nests more than a few levels)"
_MARGIN = 8  # a value ending this close to the window's end may be cut (a number, -Infinity): read on
_NOT_SPACE = re.compile(r"[^ \t\n\r]")
_DECODER = json.JSONDecoder()

Stamp = tuple[int, int]
"""A file's size and modification time (ns): what :func:`read_spans` checks is unchanged."""


def cannot_read(exc: OSError, location: str) -> DataError:
    """The one line for a published file that cannot be read."""
    return DataError(f"cannot read the published file: {exc.strerror or exc}", path=location)


class Source:
    """A published file open for one pass from its start: every byte read is hashed (:meth:`sha256`)."""

    def __init__(self, path: Path | str, location: str) -> None:
        self.location = location
        try:
            self._f: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close() / the with block
            st = os.fstat(self._f.fileno())
        except OSError as exc:
            raise cannot_read(exc, location) from None
        self.stamp: Stamp = (st.st_size, st.st_mtime_ns)
        self._hash = hashlib.sha256()
        self.offset = 0
        """Bytes read so far: the byte offset of what :meth:`read` or :meth:`readline` returns next."""

    def read(self, n: int) -> bytes:
        try:
            data = self._f.read(n)
        except OSError as exc:
            raise cannot_read(exc, self.location) from None
        self._hash.update(data)
        self.offset += len(data)
        return data

    def readline(self) -> bytes:
        try:
            data = self._f.readline()
        except OSError as exc:
            raise cannot_read(exc, self.location) from None
        self._hash.update(data)
        self.offset += len(data)
        return data

    def sha256(self) -> str:
        """The hash of the whole file (the rest is read, not held, if the pass stopped early)."""
        while self.read(CHUNK):
            pass
        return self._hash.hexdigest()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def lines(source: Source) -> Iterator[tuple[int, int, bytes]]:
    """(line number from 1, byte offset, the line's bytes) of each line of ``source``, one at a time."""
    line_no = 0
    while True:
        start = source.offset
        raw = source.readline()
        if not raw:
            return
        line_no += 1
        yield line_no, start, raw


def decode_line(raw: bytes, location: str, line: int) -> str:
    """A line's text without its end (``\\n``, ``\\r\\n``); one :class:`DataError` naming the line when
    it is not UTF-8."""
    try:
        return raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8: {exc.reason} at byte {exc.start} of the line", path=location,
                        line=line) from None


def parse_line(text: str, location: str, line: int) -> Any:
    """One JSON Lines line decoded; one :class:`DataError` naming the line when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"not JSON: {exc.msg}", path=location, line=line) from None
    except RecursionError:
        raise DataError(TOO_DEEP, path=location, line=line) from None


class JsonReader:
    """One JSON document of a :class:`Source`, read a value at a time (module doc). The caller
    steps with :meth:`peek`, :meth:`elements`, :meth:`members`, :meth:`value` and :meth:`skip`,
    and ends with :meth:`end`."""

    def __init__(self, source: Source) -> None:
        self._src, self.location = source, source.location
        self._dec = codecs.getincrementaldecoder("utf-8")()
        self._buf, self._pos, self._eof, self._started = "", 0, False, False
        self._byte = 0  # the byte offset of _buf[_pos]
        self._char, self._line, self._col = 0, 1, 0  # of _buf[0]: char offset, line, chars since its line began

    # --- the window -----------------------------------------------------------------------------

    def _fill(self, want: int = 0) -> bool:
        """Drop what was consumed and read at least ``want`` more bytes; False at the file's end."""
        if self._eof:
            return False
        if self._pos:
            done = self._buf[:self._pos]
            newlines = done.count("\n")
            self._line += newlines
            self._col = len(done) - done.rfind("\n") - 1 if newlines else self._col + len(done)
            self._char += len(done)
            self._buf, self._pos = self._buf[self._pos:], 0
        before = self._src.offset
        data = self._src.read(max(want, CHUNK))
        try:
            text = self._dec.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            at = before - (len(exc.object) - len(data)) + exc.start
            raise DataError(f"not JSON: 'utf-8' codec can't decode byte 0x{exc.object[exc.start]:02x} in position "
                            f"{at}: {exc.reason}", path=self.location) from None
        if not self._started and text:
            self._started = True
            if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as json.loads(bytes) allows
                text, self._byte = text[1:], 3
        if not data:
            self._eof = True
        self._buf += text
        return bool(data)

    def _advance(self, to: int) -> None:
        done = self._buf[self._pos:to]
        self._byte += len(done) if done.isascii() else len(done.encode("utf-8", "surrogatepass"))
        self._pos = to

    def _error(self, msg: str, pos: int) -> DataError:
        """``not JSON``, at position ``pos`` of the window given in the whole document."""
        newline = self._buf.rfind("\n", 0, pos)
        line = self._line + self._buf.count("\n", 0, pos)
        column = pos - newline if newline >= 0 else self._col + pos + 1
        return DataError(f"not JSON: {msg}: line {line} column {column} (char {self._char + pos})",
                         path=self.location)

    # --- stepping -------------------------------------------------------------------------------

    def peek(self) -> str:
        """The next character that is not white space ("" at the end), not consumed."""
        while True:
            found = _NOT_SPACE.search(self._buf, self._pos)
            if found:
                self._advance(found.start())
                return self._buf[self._pos]
            self._advance(len(self._buf))
            if not self._fill():
                return ""

    def _take(self, char: str) -> None:
        self.peek()
        assert self._buf[self._pos] == char
        self._advance(self._pos + 1)

    def value(self) -> tuple[Any, int, int]:
        """The next value, decoded whole, and its byte span in the file (start, end)."""
        if not self.peek():
            raise self._error("Expecting value", self._pos)
        while True:
            try:
                obj, end = _DECODER.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                cut = exc.pos >= len(self._buf) - _MARGIN or exc.msg.startswith("Unterminated string")
                if cut and not self._eof:  # the value may go on past the window: read on, decode again
                    self._fill(2 * (len(self._buf) - self._pos))
                    continue
                raise self._error(exc.msg, exc.pos) from None
            except RecursionError:
                raise DataError(TOO_DEEP, path=self.location) from None
            if end > len(self._buf) - _MARGIN and not self._eof:
                self._fill(2 * (len(self._buf) - self._pos))
                continue  # a number at the window's end may go on
            start = self._byte
            self._advance(end)
            return obj, start, self._byte

    def elements(self) -> Iterator[int]:
        """At an array: yields each element's index with the reader at it; the caller takes the
        element (:meth:`value`, :meth:`skip`) before the next."""
        self._take("[")
        if self.peek() == "]":
            self._advance(self._pos + 1)
            return
        i = 0
        while True:
            yield i
            i += 1
            c = self.peek()
            if c == "]":
                self._advance(self._pos + 1)
                return
            if c != ",":
                raise self._error("Expecting ',' delimiter", self._pos)
            self._advance(self._pos + 1)

    def members(self) -> Iterator[str]:
        """At an object: yields each member's name with the reader at its value; the caller
        takes the value (:meth:`value`, :meth:`elements`, :meth:`skip`) before the next."""
        self._take("{")
        c = self.peek()
        if c == "}":
            self._advance(self._pos + 1)
            return
        while True:
            if c != '"':
                raise self._error("Expecting property name enclosed in double quotes", self._pos)
            key = self.value()[0]
            if self.peek() != ":":
                raise self._error("Expecting ':' delimiter", self._pos)
            self._advance(self._pos + 1)
            yield key
            c = self.peek()
            if c == "}":
                self._advance(self._pos + 1)
                return
            if c != ",":
                raise self._error("Expecting ',' delimiter", self._pos)
            self._advance(self._pos + 1)
            c = self.peek()

    def skip(self) -> None:
        """Read past the next value, holding at most one of its elements or members at a time."""
        c = self.peek()
        if c == "[":
            for _ in self.elements():
                self.value()
        elif c == "{":
            for _ in self.members():
                self.value()
        else:
            self.value()

    def end(self) -> None:
        """The document is over: anything but white space after it is an error, as in ``json.loads``."""
        if self.peek():
            raise self._error("Extra data", self._pos)


def read_spans(path: Path | str, location: str, stamp: Stamp, spans: Iterable[tuple[int, int]]) -> list[Any]:
    """The JSON values at ``spans`` (byte ranges) of the file, in the order given, read in file
    order; one :class:`DataError` when the file is not as it was when the spans were taken."""
    order = sorted(range(len(spans := list(spans))), key=lambda k: spans[k][0])
    out: list[Any] = [None] * len(spans)
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_size, st.st_mtime_ns) != stamp:
                raise DataError("changed while it was read (its size or modification time differ); run again",
                                path=location)
            for k in order:
                start, end = spans[k]
                f.seek(start)
                out[k] = json.loads(f.read(end - start))
    except OSError as exc:
        raise cannot_read(exc, location) from None
    return out


__all__ = ["CHUNK", "TOO_DEEP", "JsonReader", "Source", "Stamp", "cannot_read", "decode_line", "lines", "parse_line",
           "read_spans"]
