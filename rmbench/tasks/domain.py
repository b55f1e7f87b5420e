"""Domain shift (arXiv 2507.07981): the same RM on several domains, each beside the in-domain one.

``paths`` maps a domain name to a preference file (``prompt``, ``chosen``, ``rejected``, as in
the paper's RewardBench math/code subsets and RewardMATH pairwise sets). Groups of the
in-domain set have no shift; the others carry ``shift = "domain:NAME"``, so the results show a
slice per domain beside the in-domain (``none``) slice. Every group's ``subset`` is its domain.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import Task
from rmbench.tasks.jsonl import PreferenceTask


class DomainShiftTask(Task):
    description = "one RM on several domains (chat, math, code), each beside the in-domain one"

    def __init__(self, paths: Mapping[str, str] | None = None, in_domain: str = "chat", path: str | None = None,
                 domain: str = "math") -> None:
        if path is not None:  # one file (--data): its domain beside the in-domain set, if that is kept
            paths = {**({in_domain: paths[in_domain]} if paths and in_domain in paths else {}), domain: path}
            if in_domain not in paths:
                in_domain = domain
        if not paths:
            raise ValueError("paths must map at least one domain name to a file")
        if in_domain not in paths:
            raise ValueError(f"in_domain {in_domain!r} is not one of the domains {sorted(paths)}")
        self.domains, self.in_domain = dict(paths), in_domain

    def groups(self) -> Iterator[ComparisonGroup]:
        for name, path in self.domains.items():
            shift = None if name == self.in_domain else f"domain:{name}"
            for g in PreferenceTask(path=path).groups():
                yield ComparisonGroup(id=f"{name}:{g.id}", prompt=g.prompt, responses=g.responses,
                                      utilities=g.utilities, subset=name, shift=shift)
