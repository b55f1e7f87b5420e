"""``rmbench train``: an explicit and an implicit RM from the same base model, data and loss.

Both minimise the Bradley-Terry loss  -log sigmoid(r(x, y_chosen) - r(x, y_rejected)):

* **EX-RM** (``ex``): r = <u, h(x, y)>, a linear head on the base's last hidden state at the
  last real token; backbone and head are trained (full fine-tuning). The head starts at zero
  and may have its own learning rate (``head_lr``): a zero head passes no gradient to the
  backbone, so with few steps and one shared small rate the EX-RM hardly moves.
* **IM-RM** (``im``): r = beta * (log pi(y|x) - log pi_ref(y|x)) with pi_ref the frozen initial
  model, which makes the loss DPO's. Only the policy is trained; the reference log-probs are
  computed once.

A plain PyTorch loop (TRL's trainers assume accelerators and more memory than a 2-core CPU
has); seeded and deterministic in float32. Each epoch ends with a checkpoint from which an
interrupted run resumes. The outputs load as model adapters: ``--model OUT/ex`` and
``--model OUT/im`` (a folder with ``rmbench_model.yaml``), with a model card recording the
base, the data fingerprint and the hyperparameters.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import yaml

from rmbench import __version__
from rmbench.errors import ConfigError, DataError
from rmbench.models.base import Runtime, ScoreRequest
from rmbench.models.trained import MODEL_ENTRY, load_trained_entry  # noqa: F401 - re-exported
from rmbench.files import atomic_write_text
from rmbench.types import ComparisonGroup, canonical_json, data_fingerprint, sha256_hex


@dataclass(frozen=True)
class TrainConfig:
    base: str
    kind: str = "both"  # ex | im | both
    epochs: int = 1
    lr: float = 1e-5
    beta: float = 0.1
    batch_size: int = 4
    seed: int = 0
    max_length: int | None = 512
    template: str = "auto"
    head_lr: float | None = None  # EX-RM head's learning rate; None = lr

    def __post_init__(self) -> None:
        if self.kind not in ("ex", "im", "both"):
            raise ConfigError(f"--kind must be ex, im or both, got {self.kind!r}")
        if self.epochs < 1 or self.batch_size < 1 or self.lr <= 0 or self.beta <= 0 \
                or (self.head_lr is not None and self.head_lr <= 0):
            raise ConfigError("--epochs and --batch-size must be >= 1, --lr, --head-lr and --beta > 0")


def preference_pairs(groups: Sequence[ComparisonGroup]) -> list[ScoreRequest]:
    """(chosen, rejected) request pairs, flattened: every discrimination pair of every group."""
    out = []
    for g in groups:
        for a, b in g.discrimination_pairs():
            out += [ScoreRequest(g.prompt, g.responses[a], g.id, a), ScoreRequest(g.prompt, g.responses[b], g.id, b)]
    if not out:
        raise DataError("the training data has no preference pairs (every group's responses have equal utilities)")
    return out


def _bt_loss(r):
    import torch.nn.functional as F

    return -F.logsigmoid(r[0::2] - r[1::2]).mean()


class _ExTrainer:
    """Backbone + linear head, rewards at the last real token."""

    def __init__(self, base: str, config: TrainConfig, runtime: Runtime) -> None:
        import torch

        from rmbench.models.implicit import ImplicitRM

        self.rm = ImplicitRM(base, runtime=runtime, template=config.template, max_length=config.max_length)
        self.model = self.rm.model
        self.head = torch.nn.Linear(self.model.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)
        # A zero head passes no gradient to the backbone until it has moved, so it may learn faster.
        self.param_groups = [{"params": list(self.model.parameters())},
                             {"params": list(self.head.parameters()), "lr": config.head_lr or config.lr}]

    def rewards(self, batch):
        from rmbench.models.seqcls import pool

        enc = self.rm.front.encode(self.rm.front.full_texts(batch))
        hidden = self.model.base_model(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                       position_ids=enc.position_ids).last_hidden_state
        return self.head(pool(hidden, enc.attention_mask, "last").float())[:, 0]

    def save(self, folder: Path, config: TrainConfig) -> dict:
        from safetensors.torch import save_file

        self.model.save_pretrained(folder / "model")
        self.rm.tokenizer.save_pretrained(folder / "model")
        save_file({"weight": self.head.weight.detach().reshape(-1).contiguous(),
                   "bias": self.head.bias.detach().contiguous()}, str(folder / "head.safetensors"))
        return {"type": "model", "name": folder.name, "kind": "linear",
                "args": {"model": "model", "head": "head.safetensors", "pooling": "last",
                         "template": config.template, "max_length": config.max_length}}

    def state(self) -> dict:
        return {"model": self.model.state_dict(), "head": self.head.state_dict()}

    def load_state(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.head.load_state_dict(state["head"])


class _ImTrainer:
    """Policy initialised from the base; the frozen base is the reference (DPO)."""

    def __init__(self, base: str, config: TrainConfig, runtime: Runtime) -> None:
        from rmbench.models.implicit import ImplicitRM

        self.rm = ImplicitRM(base, runtime=runtime, template=config.template, max_length=config.max_length)
        self.reference = ImplicitRM(base, runtime=runtime, template=config.template, max_length=config.max_length)
        self.model = self.rm.model
        self.param_groups = [{"params": list(self.model.parameters())}]
        self.beta = config.beta
        self._ref_cache: dict[tuple, float] = {}

    def _logprob_sums(self, batch):
        import torch

        from rmbench.models.implicit import gather_logprobs

        enc = self.rm._encode(batch)
        hidden = self.model.base_model(input_ids=enc.input_ids, attention_mask=enc.attention_mask,
                                       position_ids=enc.position_ids).last_hidden_state
        rows = torch.tensor([i for i, p in enumerate(enc.positions) for _ in p])
        cols = torch.tensor([j for p in enc.positions for j in p])
        lp = gather_logprobs(self.model.get_output_embeddings(), hidden, enc.input_ids, rows, cols)
        return torch.zeros(len(batch), dtype=lp.dtype).index_add(0, rows, lp)

    def rewards(self, batch):
        import torch

        missing = [r for r in batch if (r.group_id, r.index) not in self._ref_cache]
        if missing:
            for r, v in zip(missing, self.reference.score(missing)):
                self._ref_cache[(r.group_id, r.index)] = float(v)
        ref = torch.tensor([self._ref_cache[(r.group_id, r.index)] for r in batch], dtype=torch.float32)
        return self.beta * (self._logprob_sums(batch).float() - ref)

    def save(self, folder: Path, config: TrainConfig) -> dict:
        self.model.save_pretrained(folder / "model")
        self.rm.tokenizer.save_pretrained(folder / "model")
        return {"type": "model", "name": folder.name, "kind": "implicit",
                "args": {"model": "model", "ref": config.base, "beta": config.beta, "template": config.template,
                         "max_length": config.max_length}}

    def state(self) -> dict:
        return {"model": self.model.state_dict()}

    def load_state(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])


def train_one(kind: str, config: TrainConfig, groups: Sequence[ComparisonGroup], out: Path,
              progress: Callable[[str, int], Callable[[int], None]] | None = None, allow_pickle: bool = False) -> dict:
    """Train one kind into ``out``; returns its model card (with the loss per epoch).

    ``allow_pickle``: let the base load from pickle weights (``pytorch_model.bin``), see Runtime.
    """
    import torch

    runtime = Runtime(dtype="float32", device="cpu", allow_pickle=allow_pickle)
    torch.manual_seed(config.seed)
    trainer = (_ExTrainer if kind == "ex" else _ImTrainer)(config.base, config, runtime)
    trainer.model.train()
    optimizer = torch.optim.AdamW(trainer.param_groups, lr=config.lr)
    pairs = preference_pairs(groups)
    n_pairs = len(pairs) // 2
    fingerprint = data_fingerprint(groups)
    run_id = sha256_hex(canonical_json({"config": asdict(config), "kind": kind, "data": fingerprint}))
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.pt"
    losses: list[float] = []
    start_epoch = 0
    if checkpoint.is_file():
        # weights_only: tensors and plain containers only, so a planted checkpoint cannot run code.
        try:
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - not a checkpoint this trainer wrote
            raise ConfigError(f"{checkpoint}: cannot resume from it ({type(exc).__name__}: {str(exc)[:200]}); "
                              f"delete it to train from the start") from None
        if state.get("run_id") == run_id:
            trainer.load_state(state["trainer"])
            optimizer.load_state_dict(state["optimizer"])
            losses, start_epoch = state["losses"], state["epoch"]
    for epoch in range(start_epoch, config.epochs):
        order = list(range(n_pairs))
        random.Random(config.seed * 1000 + epoch).shuffle(order)
        advance = progress(f"{kind}-rm epoch {epoch + 1}/{config.epochs}", n_pairs) if progress else None
        epoch_losses = []
        for s in range(0, n_pairs, config.batch_size):
            idx = order[s:s + config.batch_size]
            batch = [req for i in idx for req in (pairs[2 * i], pairs[2 * i + 1])]
            loss = _bt_loss(trainer.rewards(batch))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            epoch_losses.append(float(loss.detach()))
            if advance:
                advance(len(idx))
        losses.append(sum(epoch_losses) / len(epoch_losses))
        # Saved beside, then renamed: a run killed while saving keeps the previous checkpoint whole.
        partial = checkpoint.with_name(checkpoint.name + ".partial")
        try:
            torch.save({"run_id": run_id, "trainer": trainer.state(), "optimizer": optimizer.state_dict(),
                        "losses": losses, "epoch": epoch + 1}, partial)
            partial.replace(checkpoint)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    trainer.model.eval()
    for sub in ("model",):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    entry = trainer.save(out, config)
    checkpoint.unlink(missing_ok=True)  # only an interrupted run needs it; it holds the optimizer state too
    entry["description"] = f"{kind.upper()}-RM trained by rmbench from {config.base}"
    atomic_write_text(out / MODEL_ENTRY, yaml.safe_dump(entry, sort_keys=False))
    card = {"kind": kind, "base": config.base, "data_fingerprint": fingerprint, "pairs": n_pairs,
            "hyperparameters": asdict(config), "loss_per_epoch": losses, "rmbench_version": __version__,
            "torch": torch.__version__, "loss": "Bradley-Terry" + (" (DPO)" if kind == "im" else "")}
    atomic_write_text(out / "card.json", json.dumps(card, indent=2) + "\n")
    atomic_write_text(out / "MODEL_CARD.md", "\n".join(
        [f"# {kind.upper()}-RM from {config.base}", "", f"- loss: {card['loss']}, per epoch: "
         + ", ".join(f"{x:.4f}" for x in losses), f"- data fingerprint: {fingerprint} ({n_pairs} pairs)",
         f"- hyperparameters: {json.dumps(asdict(config))}", f"- rmbench {__version__}, torch {torch.__version__}",
         "", f"Evaluate: `rmbench eval --model {out}`", ""]))
    return card
