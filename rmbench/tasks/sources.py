"""Where task rows come from: a local JSON Lines file or a Hugging Face hub dataset.

Both yield ``(location, line, row)`` so that loaders report errors the same way: for a hub
dataset the "line" is the 1-based row number in the split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from rmbench.errors import DataError
from rmbench.tasks.base import iter_jsonl


def iter_rows(path: str | None = None, dataset: str | None = None, revision: str | None = None,
              split: str = "test", config: str | None = None,
              data_files: str | None = None) -> Iterator[tuple[str, int, dict]]:
    if path is not None:
        location = str(Path(path))
        for line, row in iter_jsonl(path):
            yield location, line, row
        return
    if dataset is None:
        raise DataError("the task has no data source: give a local file (--data TASK=PATH) or a hub dataset")
    location = f"hf://datasets/{dataset}@{revision or 'main'}[{split}]"
    try:
        import datasets  # heavy: imported only when a hub dataset is asked for
        ds = datasets.load_dataset(dataset, config, split=split, revision=revision, data_files=data_files)
    except Exception as exc:  # offline, unknown id, bad revision: say so and how to work around it
        raise DataError(f"could not load the dataset from the hub ({type(exc).__name__}: {exc}); "
                        f"without hub access pass a local copy with --data TASK=PATH", path=location) from None
    for i, row in enumerate(ds, start=1):
        yield location, i, dict(row)
