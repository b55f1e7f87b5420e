"""Generic loaders: rmbench's own group format and plain preference pairs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import Task
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import GROUPS, PREFERENCE
from rmbench.tasks.sources import iter_rows


class GroupsTask(Task):
    """Rows in rmbench's own format: ``id``, ``prompt``, ``responses``, ``utilities`` and the
    optional ``subset``, ``source_id``, ``shift``, ``equivalence_levels``, ``meta``
    (exactly :meth:`ComparisonGroup.to_json`)."""

    description = "comparison groups in rmbench's JSON Lines format"
    row_schemas = (GROUPS,)

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 split: str = "test", config: str | None = None) -> None:
        self.source: dict[str, Any] = dict(path=path, dataset=dataset, revision=revision, split=split, config=config)

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, GROUPS)
            with r.skippable():
                gid = r.string("id")
                if gid in seen:
                    raise r.error("id", f"duplicate group id {gid!r}")
                levels = r.get("equivalence_levels", None)
                if levels is not None:
                    levels = r.integers("equivalence_levels")
                meta = r.mapping("meta", {})
                responses, utilities = r.strings("responses"), r.integers("utilities")
                if len(responses) < 2:
                    raise r.error("responses", f"has {len(responses)} response; a comparison group needs at least 2")
                if len(responses) != len(utilities):
                    raise r.error("utilities", f"{len(utilities)} utilities for {len(responses)} responses")
                group = r.group(id=gid, prompt=r.prompt(), responses=responses, utilities=utilities,
                                subset=r.string("subset", None), source_id=r.string("source_id", None),
                                shift=r.string("shift", None), equivalence_levels=levels, meta=meta)
                seen.add(gid)
                yield group


class PreferenceTask(Task):
    """Plain preference pairs: ``prompt``, ``chosen``, ``rejected`` (optional ``id``, ``subset``).

    ``chosen``/``rejected`` may also be lists of chat messages ending in the assistant's reply
    (the common HF format); the reply is the last message's content.
    """

    description = "preference pairs (prompt, chosen, rejected) from JSON Lines or a hub dataset"
    row_schemas = (PREFERENCE,)

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 split: str = "test", config: str | None = None, subset: str | None = None) -> None:
        self.source: dict[str, Any] = dict(path=path, dataset=dataset, revision=revision, split=split, config=config)
        self.subset = subset

    @staticmethod
    def _reply(r: RowReader, field: str) -> str:
        value = r.get(field)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and value and isinstance(value[-1], dict) and isinstance(value[-1].get("content"),
                                                                                            str):
            return value[-1]["content"]
        raise r.schema_error(field, "expected a string or a list of chat messages")

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in iter_rows(**self.source):
            r = RowReader(row, location, line, PREFERENCE)
            with r.skippable():
                gid = r.string("id", str(line))
                if gid in seen:
                    raise r.error("id", f"duplicate group id {gid!r}")
                group = r.group(id=gid, prompt=r.prompt(),
                                responses=(self._reply(r, "chosen"), self._reply(r, "rejected")),
                                utilities=(1, 0), subset=r.string("subset", self.subset))
                seen.add(gid)
                yield group
