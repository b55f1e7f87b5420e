"""How many CPU threads torch's operators use, and how those threads wait, chosen from what this
process may use and how busy the machine is.

Why: a forward pass is thousands of operators, each split over the intra-op threads and ended by
an OpenMP barrier. On a quiet machine the threads spin at the barrier (OpenMP's default) and
that is fastest. On a shared one (a CI runner, a cluster node, a laptop with a browser) a
spinning thread whose partner lost its core waits out its spin at every barrier: measured here
on 2 cores with one busy process beside it, the same scoring took 47.9 s with 2 spinning
threads, 25.9 s with 2 yielding threads and 22.9 s with 1 thread (quiet: 14.2 s with 2
spinning threads, 17.4 s yielding). So the policy is:

* **CPUs this process may use** (:func:`cpu_budget`): its CPU affinity (``sched_getaffinity``)
  and its cgroup's CPU quota (``cpu.max`` or ``cpu.cfs_quota_us``; a quota of q CPUs gives
  ``floor(q)``, at least 1), the smaller of the two.
* **Threads follow the other processes' load** (:class:`ThreadGovernor`): before each batch,
  the CPU time the *other* processes took on those CPUs since the last batch (``/proc/stat``
  less this process's own time) is the contention c (in cores, smoothed); the batch runs on
  ``round(cpus - c)`` threads, at least 1. A core another process holds is never also given a
  thread, so no barrier waits on a thread that has no core. ``--threads N`` (or the user's own
  ``OMP_NUM_THREADS``) fixes the count instead.
* **Wait policy**: where the machine is already shared when the run starts, OpenMP's threads
  yield (``OMP_WAIT_POLICY=PASSIVE``); on a quiet machine they keep OpenMP's default spin. The
  policy is read once, when torch loads OpenMP, so it is set only if OpenMP is not loaded yet
  (checked in ``/proc/self/maps``); a user's own ``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` is
  kept. Either way the record says which policy the run had and whether it took effect.

Changing the thread count between batches does not change a reward: torch's CPU kernels split
rows, not reductions, across threads (``tests/models/test_threads.py`` checks rewards bit for bit at 1
and 2 threads in float32 and bfloat16). Imports torch only to set the count, and only once torch
is loaded anyway.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmbench.errors import ConfigError

SHARED_AT = 0.5
"""Contention (cores the other processes use) at which the machine counts as shared."""
MIN_WINDOW_S = 0.25
"""The shortest interval over which contention is measured; a shorter one keeps the last estimate."""
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user, nice, system, irq, softirq, steal (idle and iowait are not busy)


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cgroup_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """This process's cgroup CPU quota in CPUs (None: no quota), from cgroup v2's ``cpu.max``
    (``QUOTA PERIOD`` or ``max PERIOD``) or cgroup v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``."""
    places = [root]
    own = _read(Path("/proc/self/cgroup")) or ""
    for line in own.splitlines():  # cgroup v2: "0::/path" names this process's own group
        if line.startswith("0::") and line[3:].strip("/"):
            places.insert(0, root / line[3:].strip("/"))
    for place in places:
        text = _read(place / "cpu.max")
        if text:
            quota, _, period = text.partition(" ")
            if quota != "max" and quota.isdigit() and period.isdigit() and int(period) > 0:
                return int(quota) / int(period)
            return None
    cfs_quota, cfs_period = _read(root / "cpu" / "cpu.cfs_quota_us"), _read(root / "cpu" / "cpu.cfs_period_us")
    if (cfs_quota and cfs_period and cfs_quota.lstrip("-").isdigit() and cfs_period.isdigit()
            and int(cfs_quota) > 0 and int(cfs_period) > 0):
        return int(cfs_quota) / int(cfs_period)
    return None


def cpu_budget(affinity: set[int] | None = None, quota: float | None | str = "read") -> tuple[int, str]:
    """(CPUs this process may use, where that number comes from): the CPUs of its affinity
    mask, or fewer where a cgroup quota allows fewer (``floor(quota)``, at least 1)."""
    cpus = len(affinity if affinity is not None else _affinity()) or 1
    quota = cgroup_quota() if quota == "read" else quota
    if isinstance(quota, float) and max(1, math.floor(quota)) < cpus:
        return max(1, math.floor(quota)), f"cgroup CPU quota {quota:g}"
    return cpus, "CPU affinity"


@dataclass(frozen=True)
class CpuSample:
    wall: float
    busy: float  # seconds of busy time on the sampled CPUs, every process together
    own: float  # seconds of CPU time of this process


def sample_cpu(cpus: set[int], stat: Path = Path("/proc/stat")) -> CpuSample | None:
    """Busy time of ``cpus`` (from ``/proc/stat``) and this process's CPU time, now; None where
    ``/proc/stat`` cannot be read (not Linux)."""
    text = _read(stat)
    if text is None:
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            values = [int(v) for v in rest.split()]
            busy += sum(values[i] for i in _BUSY_FIELDS if i < len(values))
    t = os.times()
    return CpuSample(time.monotonic(), busy / tick, t.user + t.system)


def contention(before: CpuSample, after: CpuSample) -> float | None:
    """Cores the other processes used between two samples (None: too short an interval to tell)."""
    wall = after.wall - before.wall
    if wall < MIN_WINDOW_S:
        return None
    return max(0.0, (after.busy - before.busy) - (after.own - before.own)) / wall


def threads_for(cpus: int, others: float) -> int:
    """Threads for a batch: the CPUs the other processes leave free, rounded, at least 1."""
    return max(1, min(cpus, math.floor(cpus - others + 0.5)))


def _openmp_loaded(maps: Path = Path("/proc/self/maps")) -> bool | None:
    """True once an OpenMP runtime is mapped into this process (its settings then are fixed);
    None where that cannot be told (no ``/proc``)."""
    text = _read(maps)
    if text is None:
        return None
    return any(name in text for name in ("libgomp", "libiomp", "libomp"))


def check_threads(value: Any) -> int | None:
    """``value`` as a thread count (None: adaptive), or the ConfigError a bad one gets."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"--threads must be a whole number >= 1, got {value!r}")
    return value


def _fixed_threads(requested: int | None, env: Mapping[str, str]) -> tuple[int | None, str | None]:
    if check_threads(requested) is not None:
        return requested, "--threads"
    value = env.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if value.isdigit() and int(value) >= 1:
        return int(value), "OMP_NUM_THREADS"
    return None, None


@dataclass
class ThreadGovernor:
    """The process's thread policy (see the module docstring) and what it did during a run."""

    cpus: int
    cpus_from: str
    fixed: int | None  # the thread count a user fixed (--threads, OMP_NUM_THREADS); None: adaptive
    fixed_from: str | None
    wait: str  # "spin" (OpenMP's default), "passive", or "OMP_WAIT_POLICY=..." as the user set it
    wait_from: str
    wait_in_effect: bool | None  # False: OpenMP was loaded with another policy before rmbench could set it
    others_at_start: float | None
    threads: int
    _cpu_set: set[int] = field(default_factory=set, repr=False)
    _last: CpuSample | None = field(default=None, repr=False)
    _others: float | None = field(default=None, repr=False)
    _batches: Counter = field(default_factory=Counter, repr=False)
    _switches: int = field(default=0, repr=False)
    _applied: int | None = field(default=None, repr=False)

    @property
    def adaptive(self) -> bool:
        return self.fixed is None

    def before_batch(self) -> int:
        """Measure the contention since the last batch, set torch's thread count for the next
        one, and return it."""
        if self.adaptive:
            now = sample_cpu(self._cpu_set)
            if now is not None and self._last is not None:
                seen = contention(self._last, now)
                if seen is not None:
                    self._others = seen if self._others is None else 0.5 * (self._others + seen)
                    self._last = now
            elif now is not None:
                self._last = now
            if self._others is not None:
                self.threads = threads_for(self.cpus, self._others)
        self._set_torch_threads()
        self._batches[self.threads] += 1
        return self.threads

    def hold(self) -> int:
        """Set torch's thread count once, for the whole of a job whose numbers may depend on
        it (training: a backward pass's reductions may split over threads); returns it."""
        self._set_torch_threads()
        return self.threads

    def _set_torch_threads(self) -> None:
        if self._applied == self.threads or "torch" not in sys.modules:
            return
        import torch

        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        if self._applied is not None:
            self._switches += 1
        self._applied = self.threads

    def start_run(self, requested: int | None = None, env: Mapping[str, str] | None = None) -> ThreadGovernor:
        """The same policy for a new run of this process: the run's own ``requested`` count
        (None: adaptive again, unless ``OMP_NUM_THREADS`` fixes it) and fresh counts."""
        self.fixed, self.fixed_from = _fixed_threads(requested, os.environ if env is None else env)
        if self.fixed is not None:
            self.threads = self.fixed
        self._batches.clear()
        self._switches = 0
        return self

    def describe(self) -> dict[str, Any]:
        """The policy and what it did, for the run's execution record."""
        out: dict[str, Any] = {
            "cpus": self.cpus, "cpus_from": self.cpus_from,
            "threads": self.fixed if self.fixed is not None else "adaptive",
            "threads_from": self.fixed_from or "the other processes' load, before each batch",
            "wait_policy": self.wait, "wait_policy_from": self.wait_from, "wait_policy_in_effect": self.wait_in_effect,
            "others_at_start": None if self.others_at_start is None else round(self.others_at_start, 2),
        }
        if self._batches:
            out["batches_by_threads"] = {str(k): v for k, v in sorted(self._batches.items())}
            out["thread_changes"] = self._switches
        return out


_START: tuple[set[int], CpuSample | None] | None = None
_CURRENT: ThreadGovernor | None = None


def mark_start() -> None:
    """Take the first CPU sample (the command line calls this first): the contention at the
    start is then measured over the start-up, at no cost."""
    global _START
    if _START is None:
        cpus = _affinity()
        _START = (cpus, sample_cpu(cpus))


def _others_at_start(cpus: set[int]) -> float | None:
    """Cores the other processes used since :func:`mark_start`, over at least MIN_WINDOW_S
    (waiting out the rest of that window: this process is idle meanwhile, so what is busy is
    the others); a library call that never marked the start waits one whole window."""
    mark_start()
    first = _START[1] if _START is not None else None
    if first is None:
        return None
    wait = MIN_WINDOW_S - (time.monotonic() - first.wall)
    if wait > 0:
        time.sleep(wait + 0.01)
    now = sample_cpu(cpus)
    return contention(first, now) if now is not None else None


def prepare_threads(requested: int | None = None, env: MutableMapping[str, str] | None = None) -> ThreadGovernor:
    """The thread policy of this process, decided once, before any weights load; later calls
    return it with their own ``requested`` count (None: adaptive again) and fresh counts.
    Sets ``OMP_WAIT_POLICY=PASSIVE`` in ``env`` (``os.environ``) where the machine is shared, OpenMP is
    not loaded yet and the user set no wait policy of their own."""
    global _CURRENT
    environ = os.environ if env is None else env
    if _CURRENT is not None:  # a later run of this process: the same policy, its own counts
        return _CURRENT.start_run(requested, environ)
    fixed, fixed_from = _fixed_threads(requested, environ)
    cpu_set = _START[0] if _START is not None else _affinity()
    cpus, cpus_from = cpu_budget(cpu_set)
    others = _others_at_start(cpu_set)
    shared = others is not None and others >= SHARED_AT
    user_wait = [f"{k}={environ[k]}" for k in WAIT_VARIABLES if environ.get(k)]
    loaded = _openmp_loaded()
    if user_wait:
        wait, wait_from, in_effect = ", ".join(user_wait), "the environment", None if loaded else True
    elif loaded:
        wait, wait_from, in_effect = "spin", "OpenMP's default: OpenMP was loaded before rmbench could choose", False
    elif shared:
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
        wait, wait_from, in_effect = "passive", f"the machine was shared at the start ({others:.1f} cores busy)", True
    else:
        wait, wait_from, in_effect = "spin", "OpenMP's default, the machine being quiet at the start", True
    start_threads = fixed if fixed is not None else threads_for(cpus, others or 0.0)
    _CURRENT = ThreadGovernor(cpus, cpus_from, fixed, fixed_from, wait, wait_from, in_effect, others,
                              start_threads, _cpu_set=set(cpu_set))
    return _CURRENT


def current_threads() -> ThreadGovernor | None:
    """The governor :func:`prepare_threads` made in this process, if any."""
    return _CURRENT
