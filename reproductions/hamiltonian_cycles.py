"""Reproduction 2 of arXiv 2507.07981 at small scale: verifying Hamiltonian cycles vs generating them.

Train an IM-RM (DPO from SmolLM2-135M-Instruct, r = beta * log(pi / pi_ref)) on the
``hamiltonian`` task: a planted Hamiltonian cycle of a random graph (chosen) against a random
permutation that is not one (rejected). Then measure (1) its verification accuracy on graphs it
never saw, and (2) how often its policy pi *generates* a valid cycle for those graphs (greedy and
sampled; checked by the task's checker), beside the untrained base and random permutations.
The paper: the IM-RM verifies at ~99% test accuracy yet its policy generates 0 valid cycles, so
an IM-RM's accuracy does not come from being a better generator.

    python reproductions/hamiltonian_cycles.py --out reproductions/hamiltonian_cycles
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from common import cell, machine_line, metrics, score, tqdm_progress

from rmbench.core.types import data_fingerprint
from rmbench.models import Runtime, build_model, parse_model_spec
from rmbench.tasks.hamiltonian import HamiltonianTask, is_hamiltonian_cycle, parse_cycle
from rmbench.train.trainer import TrainConfig, train_one

LEADERBOARD = Path(__file__).resolve().parents[1] / "leaderboards" / "hamiltonian_cycles.md"


def generate(rm, groups, samples: int, seed: int, max_new_tokens: int = 32) -> dict:
    """Greedy and sampled answers of an implicit RM's policy; rates of well-formed and valid cycles."""
    import torch

    lm, tok = rm.model, rm.tokenizer
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    contexts = [rm.formatter.context_and_full(g.prompt, "")[0] for g in groups]
    answers: dict[str, list[list[str]]] = {"greedy": [], "sampled": []}
    torch.manual_seed(seed)
    for s in range(0, len(contexts), 16):
        enc = tok(contexts[s:s + 16], return_tensors="pt", padding=True,
                  add_special_tokens=rm.formatter.add_special_tokens)
        with torch.inference_mode():
            for mode in answers:
                kw = {"do_sample": False} if mode == "greedy" else {"do_sample": True, "temperature": 1.0, "top_p": 1.0,
                                                                    "top_k": 0, "num_return_sequences": samples}
                outs = lm.generate(**enc, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id, **kw)
                texts = tok.batch_decode(outs[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
                k = 1 if mode == "greedy" else samples
                answers[mode] += [texts[i * k:(i + 1) * k] for i in range(len(texts) // k)]
    out = {}
    for mode, per_graph in answers.items():
        formed = valid = total = 0
        for g, texts in zip(groups, per_graph):
            meta = g.meta_dict
            for t in texts:
                cyc = parse_cycle(t)
                formed += sorted(cyc) == list(range(meta["n"]))
                valid += is_hamiltonian_cycle(meta["n"], [tuple(e) for e in meta["edges"]], cyc)
                total += 1
        out[mode] = {"answers": total, "well_formed": formed / total, "valid": valid / total,
                     "examples": [t[0] for t in per_graph[:3]]}
    return out


def constrained_greedy(rm, groups) -> dict:
    """Format taken out of the picture: the policy writes a permutation, choosing each next vertex
    among those not yet used by its own next-token probabilities. Rate of valid cycles."""
    import torch

    lm, tok = rm.model, rm.tokenizer
    valid = 0
    for g in groups:
        meta = g.meta_dict
        context = rm.formatter.context_and_full(g.prompt, "")[0]
        answer: list[int] = []
        while len(answer) < meta["n"]:
            text = context + " ".join(str(v) for v in answer)
            ids = tok(text, return_tensors="pt", add_special_tokens=rm.formatter.add_special_tokens)["input_ids"]
            with torch.inference_mode():
                logp = lm(input_ids=ids).logits[0, -1].float().log_softmax(-1)
            sep = " " if answer else ""
            options = [v for v in range(meta["n"]) if v not in answer]
            first = [tok(sep + str(v), add_special_tokens=False)["input_ids"][0] for v in options]
            answer.append(options[int(torch.argmax(logp[first]))])
        valid += is_hamiltonian_cycle(meta["n"], [tuple(e) for e in meta["edges"]], answer)
    return {"answers": len(groups), "well_formed": 1.0, "valid": valid / len(groups)}


def random_valid_rate(groups, draws: int, seed: int) -> float:
    rng = random.Random(seed)
    hits = total = 0
    for g in groups:
        meta = g.meta_dict
        for _ in range(draws):
            perm = list(range(meta["n"]))
            rng.shuffle(perm)
            hits += is_hamiltonian_cycle(meta["n"], [tuple(e) for e in meta["edges"]], perm)
            total += 1
    return hits / total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="reproductions/hamiltonian_cycles")
    ap.add_argument("--n", type=int, default=6, help="vertices per graph")
    ap.add_argument("--p", type=float, default=0.2, help="probability of each extra edge")
    ap.add_argument("--train-graphs", type=int, default=160)
    ap.add_argument("--test-graphs", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--beta", type=float, default=0.1)
    ap.add_argument("--samples", type=int, default=4, help="sampled answers per test graph")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    t0 = time.time()
    out = Path(args.out)
    train = list(HamiltonianTask(args.train_graphs, args.n, args.p, seed=args.seed).groups())
    seen = {g.prompt for g in train}
    test = [g for g in HamiltonianTask(args.test_graphs, args.n, args.p, seed=args.seed + 10_000).groups()
            if g.prompt not in seen]
    config = TrainConfig(base="smollm2-135m-instruct", epochs=args.epochs, lr=args.lr, beta=args.beta,
                         batch_size=8, seed=args.seed, max_length=256)
    runtime = Runtime()
    timings = {}
    t = time.time()
    card = train_one("im", config, train, out / "models" / "im", tqdm_progress)
    timings["train"] = time.time() - t
    t = time.time()
    folder = str(out / "models" / "im")
    verification = {split: metrics("hamiltonian", groups, score(folder, groups, runtime))
                    for split, groups in (("train", train), ("test", test))}
    timings["verify"] = time.time() - t
    t = time.time()
    gen_runtime = Runtime(dtype="float32")  # small-batch decoding is faster in fp32 on a CPU
    generation = {}
    for name, model in (("trained IM-RM policy", folder),
                        ("base SmolLM2-135M-Instruct", "implicit:smollm2-135m-instruct")):
        policy = build_model(parse_model_spec(model), gen_runtime)  # loaded once for both decodings
        generation[name] = {**generate(policy, test, args.samples, args.seed),
                            "constrained": constrained_greedy(policy, test)}
    timings["generate"] = time.time() - t
    chance = random_valid_rate(test, 100, args.seed)
    minutes = (time.time() - t0) / 60

    acc = {s: verification[s][("none", "pairwise_accuracy", None)] for s in verification}
    gen_rows = ["| policy | decoding | answers | well-formed (a permutation of all vertices) | valid Hamiltonian "
                "cycles |",
                "|---|---|---|---|---|"]
    for name, res in generation.items():
        for mode, label in (("greedy", "greedy"), ("sampled", "sampled (T=1)"),
                            ("constrained", "greedy over unused vertices only")):
            r = res[mode]
            gen_rows.append(f"| {name} | {label} | {r['answers']} | {r['well_formed']:.3f} | {r['valid']:.3f} |")
    gen_rows.append(f"| uniformly random permutation | - | {100 * len(test)} | 1.000 | {chance:.3f} |")
    examples = "\n".join(f"- `{e!r}`" for e in generation["trained IM-RM policy"]["greedy"]["examples"])

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = ["verification\n(train)", "verification\n(test)", "generation\ngreedy", "generation\nsampled",
              "generation\nconstrained", "random\npermutation"]
    trained = generation["trained IM-RM policy"]
    vals = [acc["train"].value, acc["test"].value, trained["greedy"]["valid"], trained["sampled"]["valid"],
            trained["constrained"]["valid"], chance]
    ax.bar(range(6), vals, color=["tab:orange", "tab:orange", "tab:red", "tab:red", "tab:red", "tab:grey"])
    for i, v in enumerate(vals):
        ax.text(i, v + 0.02, f"{v:.2f}", ha="center", fontsize=9)
    ax.set_xticks(range(6), labels, fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("accuracy / fraction of valid cycles")
    ax.set_title(f"IM-RM on Hamiltonian cycles ({args.n} vertices): verify vs generate")
    fig.tight_layout()
    fig.savefig(out / "verify_vs_generate.png", dpi=120)

    command = (f"python reproductions/hamiltonian_cycles.py --out {args.out} --n {args.n} --p {args.p} "
               f"--train-graphs {args.train_graphs} --test-graphs {args.test_graphs} --epochs {args.epochs} "
               f"--lr {args.lr} --beta {args.beta} --samples {args.samples} --seed {args.seed}")
    report = f"""# Hamiltonian cycles: verification vs generation (arXiv 2507.07981, reproduction 2, small scale)

Command: `{command}`

- Task: rmbench's `hamiltonian` generator, {args.n}-vertex graphs with a planted cycle and extra edges at
  p = {args.p}. Train: {len(train)} graphs (seed {args.seed}); test: {len(test)} graphs (seed {args.seed + 10_000},
  any graph also in train removed). Chosen = the planted cycle, rejected = a random non-cycle permutation.
  Training data fingerprint: {data_fingerprint(train)}.
- IM-RM: DPO from SmolLM2-135M-Instruct (embedded), full fine-tuning in float32, beta {args.beta}, lr {args.lr},
  batch 8 pairs, {args.epochs} epochs, seed {args.seed}. Loss per epoch:
  {', '.join(f'{x:.4f}' for x in card['loss_per_epoch'])}.
- Generation: the policy pi of the IM-RM (and, for reference, the untrained base) answers each test
  prompt greedily and with {args.samples} samples at temperature 1 (max 32 new tokens, float32, seed {args.seed}); the
  vertex numbers in each answer are checked by `rmbench.tasks.hamiltonian.is_hamiltonian_cycle`.
  Constrained: the answer is forced to be a permutation (each next vertex is the most probable of
  those not yet used), which separates "cannot find a cycle" from "does not answer in the format".
- Time: {minutes:.1f} minutes ({', '.join(f'{k} {v / 60:.1f}' for k, v in timings.items())} min) on \
{machine_line(runtime)}.

## Verification (the IM-RM as a reward model)

| split | graphs | pairwise accuracy [95% CI] | reward margin (sd units) |
|---|---|---|---|
| train | {len(train)} | {cell(acc['train'])} | {cell(verification['train'].get(('none', 'reward_margin', None)))} |
| test | {len(test)} | {cell(acc['test'])} | {cell(verification['test'].get(('none', 'reward_margin', None)))} |

## Generation (the same model as a policy)

{chr(10).join(gen_rows)}

First greedy answers of the trained policy:
{examples}

Paper (arXiv 2507.07981, larger models and graphs): the IM-RM verifies at about 99% test accuracy,
yet its policy generates no valid cycle.

![verify vs generate](verify_vs_generate.png)
"""
    (out / "REPORT.md").write_text(report)
    LEADERBOARD.write_text(f"# IM-RM (DPO from SmolLM2-135M-Instruct) on Hamiltonian cycles: verify vs generate\n\n"
                           f"From `{command}` (report: `reproductions/{out.name}/REPORT.md`).\n\n"
                           + report.split("## Verification")[1].split("First greedy")[0].replace(
                               " (the IM-RM as a reward model)", "## Verification (the IM-RM as a reward model)", 1))
    (out / "results.json").write_text(json.dumps(
        {"command": command, "minutes": minutes, "timings_s": timings, "card": card, "random_valid_rate": chance,
         "verification": {s: [r.to_json() for r in v.values()] for s, v in verification.items()},
         "generation": generation}, indent=2))
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
