"""The thread policy (rmbench.models.threads): CPU budget from affinity and cgroup quota, the
contention arithmetic, the governor's thread choice per batch, the wait policy set before
OpenMP starts (checked in libgomp's own report of its settings), and rewards that do not
depend on the thread count."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rmbench.errors import ConfigError
from rmbench.models import threads as th
from rmbench.models.threads import CpuSample, ThreadGovernor, contention, cpu_budget, threads_for

REPO = Path(__file__).resolve().parents[2]


# -- CPU budget ---------------------------------------------------------------------------------

def _cgroup(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


@pytest.mark.parametrize("files, expected", [
    ({"cpu.max": "150000 100000"}, 1.5),
    ({"cpu.max": "max 100000"}, None),
    ({"cpu.max": "200000 100000"}, 2.0),
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000"}, None),
    ({"cpu/cpu.cfs_quota_us": "50000", "cpu/cpu.cfs_period_us": "100000"}, 0.5),
    ({}, None),
])
def test_cgroup_quota_reads_v2_and_v1_files(tmp_path, files, expected):
    assert th.cgroup_quota(_cgroup(tmp_path, files)) == expected


@pytest.mark.parametrize("affinity, quota, expected", [
    ({0, 1, 2, 3}, None, (4, "CPU affinity")),
    ({0, 1, 2, 3}, 1.5, (1, "cgroup CPU quota 1.5")),
    ({0, 1, 2, 3}, 2.9, (2, "cgroup CPU quota 2.9")),
    ({0, 1, 2, 3}, 0.3, (1, "cgroup CPU quota 0.3")),  # at least one
    ({0, 1}, 8.0, (2, "CPU affinity")),  # a quota above the affinity does not add CPUs
    ({5}, None, (1, "CPU affinity")),
])
def test_cpu_budget_is_the_smaller_of_affinity_and_quota(affinity, quota, expected):
    assert cpu_budget(affinity, quota) == expected


def test_cpu_budget_of_this_process_is_within_its_affinity():
    cpus, source = cpu_budget()
    assert 1 <= cpus <= len(os.sched_getaffinity(0)) and source


# -- contention ---------------------------------------------------------------------------------

def test_sample_cpu_sums_busy_fields_of_the_chosen_cpus_only(tmp_path):
    tick = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    #                user nice system idle iowait irq softirq steal
    stat.write_text("cpu  999 0 999 999 0 0 0 0\n"
                    "cpu0 100 10 50 1000 500 1 2 3\n"
                    "cpu1 7 0 0 0 0 0 0 0\n"
                    "cpu2 1000 0 0 0 0 0 0 0\n")
    s = th.sample_cpu({0, 1}, stat)
    assert s.busy == pytest.approx((100 + 10 + 50 + 1 + 2 + 3 + 7) / tick)  # idle and iowait left out
    assert th.sample_cpu({0}, tmp_path / "absent") is None


@pytest.mark.parametrize("busy, own, wall, expected", [
    (2.0, 1.0, 1.0, 1.0),  # 2 cores busy, 1 of them ours: one core of others
    (1.0, 1.0, 1.0, 0.0),  # all the busy time was ours
    (1.0, 1.5, 1.0, 0.0),  # own time counted on CPUs outside the set: never negative
    (3.0, 0.0, 2.0, 1.5),
])
def test_contention_is_others_busy_time_per_second(busy, own, wall, expected):
    assert contention(CpuSample(10.0, 5.0, 1.0),
                      CpuSample(10.0 + wall, 5.0 + busy, 1.0 + own)) == pytest.approx(expected)


def test_contention_over_too_short_a_window_is_unknown():
    assert contention(CpuSample(0.0, 0.0, 0.0), CpuSample(th.MIN_WINDOW_S / 2, 1.0, 0.0)) is None


@pytest.mark.parametrize("cpus, others, expected", [
    (2, 0.0, 2), (2, 0.4, 2), (2, 0.5, 2), (2, 0.6, 1), (2, 1.0, 1), (2, 3.0, 1), (8, 2.2, 6), (8, 2.6, 5), (1, 0.0, 1),
])
def test_threads_for_leaves_the_cores_others_use(cpus, others, expected):
    assert threads_for(cpus, others) == expected


def test_thread_counts_are_checked():
    assert th.check_threads(None) is None and th.check_threads(3) == 3
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ConfigError, match="--threads must be a whole number >= 1"):
            th.check_threads(bad)


# -- the governor -------------------------------------------------------------------------------

def _governor(fixed=None):
    return ThreadGovernor(cpus=2, cpus_from="CPU affinity", fixed=fixed, fixed_from=fixed and "--threads",
                          wait="spin", wait_from="test", wait_in_effect=True, others_at_start=0.0,
                          threads=fixed or 2, _cpu_set={0, 1})


def _feed(monkeypatch, samples):
    """sample_cpu returns these (wall, busy, own) samples in turn."""
    it = iter(CpuSample(*s) for s in samples)
    monkeypatch.setattr(th, "sample_cpu", lambda cpus, stat=None: next(it))


def test_governor_follows_the_others_load(monkeypatch):
    import torch

    before = torch.get_num_threads()
    # 1 s windows: others use 0, then 1.8 cores for three windows, then 0 again
    _feed(monkeypatch,
          [(0, 0, 0), (1, 2, 2), (2, 3.9, 2.1), (3, 5.8, 2.2), (4, 7.7, 2.3), (5, 9.7, 4.3), (6, 11.7, 6.3),
                        (7, 13.7, 8.3)])
    g = _governor()
    try:
        seen = [g.before_batch() for _ in range(8)]
        assert torch.get_num_threads() == seen[-1]
    finally:
        torch.set_num_threads(before)
    # smoothing: 0 -> 0.9 -> 1.35 -> 1.58 (1 thread) -> 0.79 -> 0.39 -> 0.20
    assert seen == [2, 2, 1, 1, 1, 1, 2, 2]
    d = g.describe()
    assert d["batches_by_threads"] == {"1": 4, "2": 4} and d["threads"] == "adaptive"
    assert d["cpus"] == 2 and d["wait_policy"] == "spin"


def test_governor_with_a_fixed_count_never_changes_it(monkeypatch):
    import torch

    before = torch.get_num_threads()
    _feed(monkeypatch, [(i, 2.0 * i, 0.0) for i in range(5)])  # two cores of others throughout
    g = _governor(fixed=2)
    try:
        assert [g.before_batch() for _ in range(5)] == [2] * 5
    finally:
        torch.set_num_threads(before)
    assert g.describe()["threads"] == 2 and g.describe()["threads_from"] == "--threads"


def test_governor_keeps_its_estimate_over_short_windows(monkeypatch):
    _feed(monkeypatch, [(0, 0, 0), (1, 2, 0), (1.01, 2.02, 0), (1.02, 2.02, 0.02)])
    g = _governor()
    import torch

    before = torch.get_num_threads()
    try:
        assert [g.before_batch() for _ in range(4)] == [2, 1, 1, 1]
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def fresh_policy(monkeypatch):
    monkeypatch.setattr(th, "_CURRENT", None)
    monkeypatch.setattr(th, "_START", None)
    monkeypatch.setattr(th, "_openmp_loaded", lambda maps=None: False)


@pytest.mark.parametrize("others, env, wait, passive_set", [
    (1.0, {}, "passive", True),
    (0.1, {}, "spin", False),
    (1.0, {"OMP_WAIT_POLICY": "ACTIVE"}, "OMP_WAIT_POLICY=ACTIVE", False),
    (1.0, {"GOMP_SPINCOUNT": "1000"}, "GOMP_SPINCOUNT=1000", False),
])
def test_wait_policy_is_passive_only_on_a_shared_machine_and_never_overrides_the_user(
        fresh_policy, monkeypatch, others, env, wait, passive_set):
    monkeypatch.setattr(th, "_others_at_start", lambda cpus: others)
    user_env, env = dict(env), dict(env)
    g = th.prepare_threads(None, env)
    assert g.wait == wait and g.wait_in_effect is True
    assert g.threads == threads_for(g.cpus, others)
    assert env == ({**user_env, "OMP_WAIT_POLICY": "PASSIVE"} if passive_set else user_env)


def test_wait_policy_is_not_claimed_once_openmp_is_loaded(fresh_policy, monkeypatch):
    monkeypatch.setattr(th, "_openmp_loaded", lambda maps=None: True)
    monkeypatch.setattr(th, "_others_at_start", lambda cpus: 1.5)
    g = th.prepare_threads(None, {})
    assert g.wait == "spin" and g.wait_in_effect is False and "loaded before" in g.wait_from


def test_threads_fixed_by_flag_or_environment(fresh_policy, monkeypatch):
    monkeypatch.setattr(th, "_others_at_start", lambda cpus: 0.0)
    g = th.prepare_threads(None, {"OMP_NUM_THREADS": "1"})
    assert (g.fixed, g.fixed_from, g.threads) == (1, "OMP_NUM_THREADS", 1)
    g = th.prepare_threads(3, {"OMP_NUM_THREADS": "1"})  # a later run of the process, with --threads
    assert (g.fixed, g.fixed_from, g.threads) == (3, "--threads", 3)
    g = th.prepare_threads(None, {})  # and the next one adapts again
    assert (g.fixed, g.adaptive) == (None, True)


def test_openmp_is_seen_in_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00 r-xp 0 08:01 1 /usr/lib/libc.so.6\n")
    assert th._openmp_loaded(maps) is False
    maps.write_text("7f00 r-xp 0 08:01 1 /x/torch/lib/libgomp-a34b3233.so.1\n")
    assert th._openmp_loaded(maps) is True
    assert th._openmp_loaded(tmp_path / "absent") is None


# -- the wait policy takes effect in OpenMP itself -----------------------------------------------

CHILD = textwrap.dedent("""
    import json, sys
    from rmbench.models import threads as th
    th._others_at_start = lambda cpus: float(sys.argv[1])  # the machine's load as the test says
    g = th.prepare_threads()
    import torch
    a = torch.randn(300, 300)
    (a @ a).sum()  # starts OpenMP's threads, which print their settings (OMP_DISPLAY_ENV)
    print(json.dumps(g.describe()))
""")


@pytest.mark.parametrize("others, spincount, wait", [("1.5", "0", "passive"), ("0.0", "300000", "spin")])
def test_libgomp_runs_with_the_policy_chosen(others, spincount, wait):
    """libgomp reports its own settings (OMP_DISPLAY_ENV=VERBOSE): GOMP_SPINCOUNT 0 is the
    passive policy (threads sleep at once), 300000 OpenMP's default spin."""
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    p = subprocess.run([sys.executable, "-c", CHILD, others], capture_output=True, text=True, env=env, cwd=REPO,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    if "GOMP_SPINCOUNT" not in p.stderr:
        pytest.skip("this torch's OpenMP runtime is not libgomp (no GOMP_SPINCOUNT in its settings)")
    assert f"GOMP_SPINCOUNT = '{spincount}'" in p.stderr
    described = json.loads(p.stdout.strip().splitlines()[-1])
    assert described["wait_policy"] == wait and described["wait_policy_in_effect"] is True


# -- rewards do not depend on the thread count; the record says what ran --------------------------

def test_rewards_are_bit_equal_at_one_and_two_threads(tiny):
    import torch

    from rmbench.core.types import ComparisonGroup
    from rmbench.models import Runtime, build_model
    from rmbench.models.names import resolve_model
    from rmbench.scoring.engine import score_groups

    groups = [ComparisonGroup(f"g{i}", f"Question {i}: what is {i} + {i}?",
                              [f"It is {2 * i}.",
                               f"The answer is {2 * i + 1}, I think, after a long thought." * (1 + i % 3)],
                              [1, 0]) for i in range(6)]
    runtime = Runtime(dtype="float32", device="cpu")
    before = torch.get_num_threads()
    out = {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            model = build_model(resolve_model(f"implicit:{tiny['causal']}"), runtime)
            out[n], _ = score_groups(model, groups, runtime)
    finally:
        torch.set_num_threads(before)
    assert np.array_equal(np.asarray(out[1]), np.asarray(out[2]))


def test_the_run_record_holds_the_thread_policy(tiny, tmp_path):
    from rmbench.models import Runtime
    from rmbench.scoring.runner import EvalConfig, evaluate

    run = evaluate(EvalConfig(model=f"implicit:{tiny['causal']}",
                              runtime=Runtime(dtype="float32", device="cpu", threads=1),
                              limit=3, n_bootstrap=10, use_cache=False), tmp_path / "run")
    policy = run.execution.stats.threads
    assert policy["threads"] == 1 and policy["threads_from"] == "--threads"
    assert sum(policy["batches_by_threads"].values()) == run.execution.stats.batches_computed
    saved = json.loads((tmp_path / "run" / "results.json").read_text())
    assert saved["execution"]["stats"]["threads"]["threads"] == 1 and "threads" not in saved["execution"]["backend"]
    with pytest.raises(ConfigError, match="--threads"):
        EvalConfig(model="length", runtime=Runtime(threads=0))


def test_cli_refuses_zero_threads():
    p = subprocess.run([sys.executable, "-m", "rmbench", "eval", "--model", "length", "--threads", "0"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode != 0 and "--threads must be a whole number >= 1" in p.stderr + p.stdout
    assert "Traceback" not in p.stderr


def test_training_holds_one_thread_count_and_records_it(tiny, tmp_path):
    import torch

    from rmbench.core.types import ComparisonGroup
    from rmbench.train.trainer import TrainConfig, train_one

    groups = [ComparisonGroup(f"g{i}", f"Say {i}.", [f"{i}.", f"Not {i}."], [1, 0]) for i in range(4)]
    before = torch.get_num_threads()
    try:
        card = train_one("ex", TrainConfig(base=str(tiny["causal"]), kind="ex", batch_size=2), groups, tmp_path / "ex",
                         threads=1)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert card["threads"]["threads"] == 1 and card["threads"]["threads_from"] == "--threads"
    assert json.loads((tmp_path / "ex" / "card.json").read_text())["threads"]["threads"] == 1
