"""Verifying Hamiltonian cycles (the verification-vs-generation control of arXiv 2507.07981).

Each group is a random undirected graph on N vertices with a planted Hamiltonian cycle plus
every other edge independently with probability p. The chosen response is a valid Hamiltonian
cycle (the planted one), the rejected one a random permutation of the vertices that is not a
Hamiltonian cycle of the graph. Everything is generated from ``seed``, so a task instance is
the same everywhere; :func:`is_hamiltonian_cycle` checks any proposed cycle (and is what a
generation test uses to score what a model writes).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence

from rmbench.core.canonical import canonical_json
from rmbench.core.types import ComparisonGroup
from rmbench.tasks.base import Task


def random_graph(n: int, p: float, rng: random.Random) -> tuple[list[tuple[int, int]], list[int]]:
    """(sorted edge list, planted cycle) for a graph on vertices 0..n-1."""
    cycle = list(range(n))
    rng.shuffle(cycle)
    edges = {(min(u, v), max(u, v)) for u, v in zip(cycle, cycle[1:] + cycle[:1])}
    for a in range(n):
        for b in range(a + 1, n):
            if (a, b) not in edges and rng.random() < p:
                edges.add((a, b))
    return sorted(edges), cycle


def is_hamiltonian_cycle(n: int, edges: Sequence[tuple[int, int]], cycle: Sequence[int]) -> bool:
    """True if ``cycle`` visits every vertex exactly once and consecutive vertices (and the last
    and first) are joined by edges."""
    if len(cycle) != n or sorted(cycle) != list(range(n)):
        return False
    edge_set = {tuple(sorted(e)) for e in edges}
    return all(tuple(sorted((cycle[i], cycle[(i + 1) % n]))) in edge_set for i in range(n))


def format_prompt(n: int, edges: Sequence[tuple[int, int]]) -> str:
    listed = ", ".join(f"({a}, {b})" for a, b in edges)
    return (f"An undirected graph has vertices 0 to {n - 1} and edges {listed}. Find a Hamiltonian cycle: "
            f"an order of all vertices, each visited once, in which consecutive vertices and the last and "
            f"first are connected. Answer with the vertices separated by spaces.")


def format_cycle(cycle: Sequence[int]) -> str:
    return " ".join(str(v) for v in cycle)


def parse_cycle(text: str) -> list[int]:
    """The vertex numbers a response lists, in order (a generated answer's cycle)."""
    return [int(x) for x in re.findall(r"\d+", text)]


def make_graphs(n_graphs: int, n: int, p: float, seed: int):
    rng = random.Random(seed)
    out = []
    for _ in range(n_graphs):
        edges, cycle = random_graph(n, p, rng)
        for _ in range(10_000):
            wrong = list(range(n))
            rng.shuffle(wrong)
            if not is_hamiltonian_cycle(n, edges, wrong):
                break
        else:  # pragma: no cover - only a complete graph has no non-cycle, and p < 1 forbids it
            raise ValueError("could not draw a permutation that is not a Hamiltonian cycle; lower p")
        out.append((edges, cycle, wrong))
    return out


class HamiltonianTask(Task):
    description = "verify Hamiltonian cycles: a valid cycle vs a random non-cycle (generated from a seed)"

    def __init__(self, n_graphs: int = 100, n: int = 6, p: float = 0.2, seed: int = 0) -> None:
        if int(n) < 4:
            raise ValueError(f"n must be at least 4, got {n}")
        if not 0 <= float(p) < 1:
            raise ValueError(f"p must be in [0, 1), got {p}")
        self.n_graphs, self.n, self.p, self.seed = int(n_graphs), int(n), float(p), int(seed)

    def groups(self) -> Iterator[ComparisonGroup]:
        for i, (edges, cycle, wrong) in enumerate(make_graphs(self.n_graphs, self.n, self.p, self.seed)):
            yield ComparisonGroup(f"graph:{i}", format_prompt(self.n, edges),
                                  (format_cycle(cycle), format_cycle(wrong)),
                                  (1, 0), meta=canonical_json({"n": self.n, "edges": [list(e) for e in edges]}))
