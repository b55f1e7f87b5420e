"""Where task rows come from: a local JSON Lines, CSV or parquet file, or a Hugging Face hub dataset.

All yield ``(location, line, row)`` so that loaders report errors the same way: for a parquet
file or a hub dataset the "line" is the 1-based row number. A local file is read by its suffix:
``.csv`` (``.tsv``: tab-separated) with a header row, ``.parquet``, anything else JSON Lines.
In a CSV file every cell is text: list fields hold JSON (``["a", "b"]``, ``[1, 0]``).

Under :func:`rmbench.tasks.base.skipping_bad_rows` (``--skip-bad-rows``) rows that cannot be
read, and rows a loader rejected on an earlier pass, are left out and recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from rmbench.errors import DataError
from rmbench.tasks.base import check_row_values, iter_csv, iter_jsonl, iter_parquet, row_excluded


def iter_rows(path: str | None = None, dataset: str | None = None, revision: str | None = None,
              split: str = "test", config: str | None = None,
              data_files: str | None = None) -> Iterator[tuple[str, int, dict]]:
    if path is not None:
        location = str(Path(path))
        suffix = Path(path).suffix.lower()
        reader = (iter_csv(path) if suffix == ".csv" else iter_csv(path, "\t") if suffix == ".tsv"
                  else iter_parquet(path) if suffix in (".parquet", ".pq") else iter_jsonl(path))
        for line, row in reader:
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
