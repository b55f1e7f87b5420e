"""Where task rows come from: a local JSON Lines, CSV, parquet or Arrow file, a file on the web
(``URL#sha256=HEX``, downloaded once and verified: :mod:`rmbench.tasks.downloads`), or a Hugging
Face hub dataset.

All yield ``(location, line, row)`` so that loaders report errors the same way: for a parquet
or Arrow file or a hub dataset the "line" is the 1-based row number. A file is read by its
suffix: ``.csv`` (``.tsv``: tab-separated) with a header row, ``.parquet``, ``.arrow`` (what
``datasets``' ``save_to_disk`` writes), a ``.json`` file that holds one JSON array of
objects (RM-Bench's files) as that array, anything else JSON Lines. A web file's rows are
named in messages by its verified copy in the cache.
In a CSV file every cell is text: list fields hold JSON (``["a", "b"]``, ``[1, 0]``).

Under :func:`rmbench.tasks.rows.skipping_bad_rows` (``--skip-bad-rows``) rows that cannot be
read, and rows a loader rejected on an earlier pass, are left out and recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from rmbench.errors import DataError
from rmbench.tasks.downloads import fetch, parse_remote
from rmbench.tasks.formats import is_json_array_file, iter_arrow, iter_csv, iter_json_array, iter_jsonl, iter_parquet
from rmbench.tasks.rows import check_row_values, row_excluded


def _read_file(local: Path) -> Iterator[tuple[int, dict]]:
    """The rows of a local file, read by its suffix."""
    suffix = local.suffix.lower()
    reader = (iter_csv(local) if suffix == ".csv" else iter_csv(local, "\t") if suffix == ".tsv"
              else iter_parquet(local) if suffix in (".parquet", ".pq") else iter_arrow(local) if suffix == ".arrow"
              else iter_json_array(local) if suffix == ".json" and is_json_array_file(local) else iter_jsonl(local))
    return reader


def iter_rows(path: str | None = None, dataset: str | None = None, revision: str | None = None,
              split: str = "test", config: str | None = None,
              data_files: str | None = None) -> Iterator[tuple[str, int, dict]]:
    """Every row of a task's data, as ``(location, line, row)``: ``location`` and ``line`` are what
    a DataError names (:class:`~rmbench.tasks.rows.RowReader` takes them), ``row`` a dict.

    ``path``: a local file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``, ``.arrow``; a
    CSV row is a :class:`~rmbench.tasks.rows.TextRow`) or a web file (fetched once into the
    download cache); else ``dataset`` on the Hugging Face hub at ``revision``, ``split``,
    ``config`` and ``data_files`` (``datasets`` is imported only then; an unreachable hub with no
    cached copy is one DataError saying to pass a local copy). Rows excluded under
    ``--skip-bad-rows`` are left out."""
    if path is not None:
        remote = parse_remote(path)
        local = fetch(remote) if remote is not None else Path(path)
        location = str(local)  # a web file's errors name its verified copy, which the user can open
        for line, row in _read_file(local):
            if not row_excluded(location, line):
                yield location, line, row
        return
    if dataset is None:
        raise DataError("the task has no data source: give a local file (--data TASK=PATH) or a hub dataset")
    # the config is part of the location: rows of two configs never share a (location, line)
    location = f"hf://datasets/{dataset}@{revision or 'main'}{'/' + config if config else ''}[{split}]"
    from rmbench import hub

    why = hub.unreachable()
    try:
        import datasets  # heavy: imported only when a hub dataset is asked for
        if why is not None:
            datasets.config.HF_HUB_OFFLINE = True  # the local datasets cache only, without retries
        ds = datasets.load_dataset(dataset, config, split=split, revision=revision, data_files=data_files)
    except Exception as exc:  # offline, unknown id, bad revision: say so and how to work around it
        detail = " ".join(str(exc).split())[:300].rstrip(". ")
        reason = (f"the hub is unreachable ({why}) and the datasets cache has no copy" if why is not None
                  else f"{type(exc).__name__}: {detail}")
        raise DataError(f"could not load the dataset from the hub: {reason}; "
                        f"without hub access pass a local copy with --data TASK=PATH", path=location) from None
    for i, row in enumerate(ds, start=1):
        row = dict(row)
        if not row_excluded(location, i) and check_row_values(row, location, i):
            yield location, i, row


def data_status(args: dict) -> str:
    """Where a task's data comes from and whether it is here, for ``rmbench tasks list``: local
    files (present or missing), web files (how many are in the download cache) or a hub dataset
    (whether the hub cache holds it). Reads no data."""
    from rmbench import hub
    from rmbench.tasks.downloads import is_cached

    paths = [v for v in [args.get("path"), *(args.get("paths") or {}).values()] if isinstance(v, str)]
    parts = []
    parsed = [(p, parse_remote(p)) for p in paths]
    remotes = [r for _, r in parsed if r is not None]
    if remotes:
        cached = sum(is_cached(r) for r in remotes)
        parts.append(f"web, {len(remotes)} file{'s' * (len(remotes) != 1)}: "
                     + ("cached" if cached == len(remotes) else "not cached" if not cached
                        else f"{cached} of {len(remotes)} cached"))
    local = [p for p, r in parsed if r is None]
    if local:
        missing = sum(not Path(p).is_file() for p in local)
        parts.append("local file" + "s" * (len(local) != 1) + (f", {missing} missing" if missing else ""))
    if isinstance(args.get("dataset"), str):
        cached = hub.cached_commit(args["dataset"], args.get("revision"), repo_type="datasets") is not None
        parts.append(f"hub {args['dataset']}: " + ("cached" if cached else "not cached"))
    elif isinstance(args.get("dataset"), dict):  # one hub dataset per part (PPE's correctness sets)
        ids = [d for d in args["dataset"].values() if isinstance(d, str)]
        cached = sum(hub.cached_commit(d, args.get("revision"), repo_type="datasets") is not None for d in ids)
        parts.append(f"hub, {len(ids)} datasets: " + ("cached" if cached == len(ids) else "not cached" if not cached
                                                      else f"{cached} of {len(ids)} cached"))
    return "; ".join(parts) or "generated"
