"""File formats to rows: JSON Lines, a JSON array of rows, CSV/TSV, parquet and arrow files, each yielding
``(line or row number, row)`` with errors that name the file and the line."""

from __future__ import annotations

import codecs
import csv
import json
import re
from collections.abc import Iterator
from pathlib import Path

from rmbench.errors import DataError
from rmbench.files import json_error_text
from rmbench.tasks.rows import TextRow, _json_type, bad_row, check_row_values

_BINARY_MAGIC = {b"\x1f\x8b": "gzip-compressed", b"PAR1": "a parquet file", b"PK\x03\x04": "a zip archive",
                 b"\xff\xfe": "UTF-16 text", b"\xfe\xff": "UTF-16 text", b"BZh": "bzip2-compressed",
                 b"\xfd7zXZ": "xz-compressed", b"\x28\xb5\x2f\xfd": "zstd-compressed"}


def check_text_file(path: Path, what: str) -> None:
    """Whole-file problems, raised even when skipping bad rows: not a file, not text at all."""
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    with path.open("rb") as f:
        head = f.read(8192)
    for magic, kind in _BINARY_MAGIC.items():
        if head.startswith(magic):
            raise DataError(f"not {what}: it is {kind}; {what} must be plain UTF-8 text", path=str(path))
    if b"\x00" in head:
        raise DataError(f"not {what}: it holds NUL bytes (UTF-16 or binary?); save it as UTF-8 text",
                        path=str(path))


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number, object) for each non-blank line of a JSON Lines file.

    A row that is not UTF-8, not JSON, not an object or holds NaN is a :class:`DataError` naming
    the file and line (skipped and recorded under :func:`skipping_bad_rows`); a missing, empty,
    binary or wholly non-UTF-8 file always fails.
    """
    path = Path(path)
    check_text_file(path, "a JSON Lines file")
    location = str(path)
    rows = undecodable = 0
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]  # Windows editors write one; it is not data
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                undecodable += 1
                bad_row(DataError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}); "
                                  f"save the file as UTF-8", path=location, line=lineno))
                continue
            if not line.strip():
                continue
            rows += 1
            try:
                # without its newline, a line cut mid-string reads as unterminated, not "a control character"
                obj = json.loads(line.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                hint = ("; rmbench reads JSON Lines: one object per line, not a JSON array"
                        if line.lstrip().startswith("[") else "")
                bad_row(DataError(f"not valid JSON ({json_error_text(exc)}){hint}", path=location, line=lineno))
                continue
            except RecursionError:
                bad_row(DataError("not valid JSON (nested too deeply)", path=location, line=lineno))
                continue
            if not isinstance(obj, dict):
                hint = "; rmbench reads JSON Lines: one object per line" if isinstance(obj, list) else ""
                bad_row(DataError(f"expected a JSON object, got {_json_type(obj)}{hint}", path=location, line=lineno))
                continue
            if check_row_values(obj, location, lineno):
                yield lineno, obj
    if rows == 0:
        raise DataError("not UTF-8 text: no line of it decodes as UTF-8 (save it as UTF-8)" if undecodable
                        else "the file is empty (no rows)", path=location)




def is_json_array_file(path: str | Path) -> bool:
    """Whether a file's first non-blank character (after a UTF-8 BOM) is ``[``: a JSON array of rows."""
    try:
        with Path(path).open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8):]
    return head.lstrip().startswith(b"[")


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, pos: int) -> int:
    """The position of the first character at or after ``pos`` that is not JSON white space."""
    match = _JSON_SPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string too
    return match.end()


def iter_json_array(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (line number where the element starts, object) for each element of a file that
    holds one JSON array of objects (``[{...}, {...}]``, as RM-Bench publishes its data).

    An element that is not an object or holds NaN is a :class:`DataError` naming the file and the
    line it starts on (skipped and recorded under :func:`skipping_bad_rows`). Text that is not
    JSON ends the array, so it fails with its line even when skipping; so do a missing, empty,
    binary or non-UTF-8 file.
    """
    path = Path(path)
    check_text_file(path, "a JSON file")
    location = str(path)
    raw = path.read_bytes()
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}); save the file "
                        f"as UTF-8", path=location) from None
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    line, counted = 1, 0

    def line_at(at: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, at)
        counted = at
        return line

    if not text.startswith("[", pos):
        raise DataError("not a JSON array (expected '[' first)", path=location, line=line_at(pos))
    pos = _skip_space(text, pos + 1)
    rows = 0
    while not text.startswith("]", pos):
        at = line_at(pos)
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise DataError(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                            path=location, line=at) from None
        except RecursionError:
            raise DataError("not valid JSON (nested too deeply)", path=location, line=at) from None
        rows += 1
        if not isinstance(obj, dict):
            bad_row(DataError(f"expected a JSON object, got {_json_type(obj)}", path=location, line=at))
        elif check_row_values(obj, location, at):
            yield at, obj
        pos = _skip_space(text, end)
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
            if text.startswith("]", pos):
                raise DataError("not valid JSON (a comma before ']')", path=location, line=line_at(pos))
        elif not text.startswith("]", pos):
            raise DataError("not valid JSON (expected ',' or ']' after an element)", path=location,
                            line=line_at(pos))
    if text[pos + 1:].strip():
        raise DataError("not valid JSON (text after the array's closing ']')", path=location,
                        line=line_at(_skip_space(text, pos + 1)))
    if rows == 0:
        raise DataError("the file is empty (no rows)", path=location)


def iter_csv(path: str | Path, delimiter: str = ",") -> Iterator[tuple[int, TextRow]]:
    """Yield (line number of the record's first line, row) for each record of a CSV file with a
    header. Empty cells are absent fields. Errors as in :func:`iter_jsonl`."""
    path = Path(path)
    check_text_file(path, "a CSV file")
    location = str(path)
    # A cell may hold a long response: lift the csv module's 128 KiB default cell limit.
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
    with path.open("r", encoding="utf-8", errors="surrogateescape", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter)
        header: list[str] | None = None
        rows = undecodable = 0
        end = 0
        while True:
            start = end + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                end = reader.line_num
                if header is None:
                    raise DataError(f"cannot read the CSV header ({exc})", path=location, line=start) from None
                bad_row(DataError(f"not valid CSV ({exc})", path=location, line=start))
                continue
            end = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if start == 1 and cells[0].startswith("\ufeff"):
                cells[0] = cells[0][1:]
            bad_text = next((i for i, c in enumerate(cells) if _has_surrogates(c)), None)
            if header is None:
                if bad_text is not None:
                    raise DataError("the CSV header is not valid UTF-8; save the file as UTF-8", path=location,
                                    line=start)
                header = [c.strip() for c in cells]
                missing = [i + 1 for i, c in enumerate(header) if not c]
                if missing:
                    raise DataError(f"the CSV header has an empty column name (column {missing[0]})",
                                    path=location, line=start)
                dupes = sorted({c for c in header if header.count(c) > 1})
                if dupes:
                    raise DataError(f"the CSV header names column {dupes[0]!r} twice", path=location, line=start)
                continue
            rows += 1
            if bad_text is not None:
                undecodable += 1
                bad_row(DataError("not valid UTF-8; save the file as UTF-8", path=location, line=start,
                                  field=header[bad_text] if bad_text < len(header) else None))
                continue
            if len(cells) != len(header):
                bad_row(DataError(f"has {len(cells)} cells, but the header has {len(header)} columns "
                                  f"(an unquoted comma or an unclosed quote?)", path=location, line=start))
                continue
            yield start, TextRow((k, v) for k, v in zip(header, cells) if v != "")
    if header is None or rows == 0:
        raise DataError("the file is empty (no rows)" if header is None else
                        "not UTF-8 text: no record of it decodes as UTF-8" if rows and rows == undecodable else
                        "the file has a header but no rows", path=location)


_SURROGATE = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8


def _has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def iter_parquet(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (row number, row) for each row of a parquet file; the row number is 1-based and is
    reported as the "line" of errors."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    location = str(path)
    try:
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        n_rows = pf.metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: one clear message
        raise DataError(f"not a readable parquet file ({type(exc).__name__}: {exc})", path=location) from None
    if n_rows == 0:
        raise DataError("the file is empty (no rows)", path=location)
    number = 0
    try:
        for batch in pf.iter_batches(batch_size=512):
            for row in batch.to_pylist():
                number += 1
                if check_row_values(row, location, number):
                    yield number, row
    except (OSError, ValueError) as exc:  # pyarrow's errors for a corrupt column chunk
        if type(exc).__module__.startswith("pyarrow") or "parquet" in str(exc).lower():
            raise DataError(f"cannot read rows after row {number} ({type(exc).__name__}: {exc})",
                            path=location) from None
        raise



def iter_arrow(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield (row number, row) for each row of an Arrow IPC file: the stream format that
    ``datasets``' ``save_to_disk`` writes (``data-00000-of-00001.arrow``), or the file format.
    The row number is 1-based and is reported as the "line" of errors."""
    path = Path(path)
    if not path.is_file():
        raise DataError("no such file", path=str(path))
    location = str(path)
    try:
        import pyarrow as pa

        try:
            table = pa.ipc.open_stream(pa.memory_map(str(path))).read_all()
        except pa.ArrowInvalid:
            table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
    except Exception as exc:  # noqa: BLE001 - a truncated or foreign file: one clear message
        raise DataError(f"not a readable Arrow file ({type(exc).__name__}: {exc})", path=location) from None
    if table.num_rows == 0:
        raise DataError("the file is empty (no rows)", path=location)
    number = 0
    for batch in table.to_batches(max_chunksize=512):
        for row in batch.to_pylist():
            number += 1
            if check_row_values(row, location, number):
                yield number, row
