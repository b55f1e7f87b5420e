"""``rmbench shift``: write a shifted copy of a preference dataset with a pluggable rewriter.

The output is the paper's format (arXiv 2507.07981), which the ``paired_shift`` task kind
reads: ``prompt`` (kept), ``chosen``/``rejected`` (rewritten), ``orig_chosen``,
``orig_rejected``, ``orig_index``, plus ``shift`` and ``rewriter``; a sidecar
``OUT.meta.json`` records the rewriter, its prompt template, the source file and its data
fingerprint. Rewriters:

* ``python:file.py:func`` or ``python:module:func``: ``func(texts: list[str]) -> list[str]``;
* ``openai:BASE_URL:MODEL``: an OpenAI-compatible server's ``/chat/completions`` (vLLM, llama.cpp,
  ...), temperature 0; the API key, if any, from ``OPENAI_API_KEY``;
* ``lmeval:LM:MODEL_ARGS``: an lm-evaluation-harness model's ``generate_until`` (e.g.
  ``lmeval:hf:pretrained=path/to/model``);
* ``style:NAME``: a deterministic, offline style rewriter of :mod:`rmbench.rewrite.style`
  (``markdown-to-plain``, ``polite``, ...): no prompt template; the shift label defaults to
  ``style:NAME``, and the meta file records the style's ``rewriter_version``.

The meta file also counts the texts the rewriter left exactly as they were (``unchanged_texts``).

Without ``--shift``, the python, openai and lmeval rewriters label their copies ``paraphrase``. The
default prompt for ``--shift paraphrase`` asks for a meaning-preserving paraphrase, for
``--shift translation:fr`` (any ISO code) a faithful translation; both keep errors on purpose.
A python rewriter needs no prompt (it gets the shift's default one, if any, only for the record).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from rmbench.core.types import ComparisonGroup, data_fingerprint, prompt_to_json
from rmbench.errors import ConfigError
from rmbench.files import atomic_write_text
from rmbench.tasks.jsonl import PreferenceTask
from rmbench.tasks.shift import SHIFT_LABEL

LANGUAGES = {"fr": "French", "es": "Spanish", "de": "German", "it": "Italian", "pt": "Portuguese", "ru": "Russian",
             "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic", "hi": "Hindi", "nl": "Dutch"}

PARAPHRASE = ("Paraphrase the following text. Keep its meaning exactly, including any mistakes it makes, but "
              "change the wording and sentence structure as much as you can. Reply with the paraphrase only.\n\n{text}")
TRANSLATE = ("Translate the following text into {language}. Keep its meaning exactly, including any mistakes it "
             "makes. Reply with the translation only.\n\n{text}")

Rewriter = Callable[[list[str]], list[str]]


def default_template(shift: str) -> str:
    if shift == "paraphrase":
        return PARAPHRASE
    kind, _, code = shift.partition(":")
    if kind == "translation" and code:
        return TRANSLATE.replace("{language}", LANGUAGES.get(code, code))
    raise ConfigError(f"no default prompt for shift {shift!r}: give --prompt-template with {{text}} in it")


def python_rewriter(target: str) -> Rewriter:
    from rmbench.registry import import_target

    fn = import_target(target)
    return lambda texts: list(fn(list(texts)))


def openai_rewriter(base_url: str, model: str, template: str, max_tokens: int = 1024) -> Rewriter:
    """A rewriter that asks an OpenAI-compatible server (temperature 0, 16 requests at a time; the
    key, if any, from ``OPENAI_API_KEY``) to rewrite each text; a failure is one
    :class:`~rmbench.models.judge.client.JudgeServerError` line naming the server and the model."""
    from rmbench.models.judge.client import ChatClient, ChatRequest

    client = ChatClient(base_url, model, os.environ.get("OPENAI_API_KEY") or None, concurrency=16, progress=False,
                        description="rewriter")

    def run(texts: list[str]) -> list[str]:
        requests = [ChatRequest(messages=(("user", template.format(text=t)),), max_tokens=max_tokens, temperature=0.0)
                    for t in texts]
        return [reply.text.strip() for reply in client.complete(requests)]

    return run


def lmeval_rewriter(lm_name: str, model_args: str, template: str, max_gen_toks: int = 512) -> Rewriter:
    from lm_eval.api.instance import Instance

    from rmbench.models.lmeval import create_lm

    lm = create_lm(lm_name, model_args, batch_size=1)

    def run(texts: list[str]) -> list[str]:
        requests = [Instance(request_type="generate_until", doc={}, idx=i,
                             arguments=(template.format(text=t), {"until": ["\n\n\n"], "max_gen_toks": max_gen_toks,
                                                                  "do_sample": False}))
                    for i, t in enumerate(texts)]
        return [out.strip() for out in lm.generate_until(requests, disable_tqdm=True)]

    return run


def make_rewriter(spec: str, template: str | None = None) -> Rewriter:
    """The rewriter a ``--rewriter`` spec names; ``template`` (with ``{text}``) is the LLM kinds' prompt."""
    kind, sep, rest = spec.partition(":")
    if kind == "python" and sep:
        return python_rewriter(rest)
    if kind == "style" and sep:
        from rmbench.rewrite.style import style_rewriter

        return style_rewriter(rest)
    if kind in ("openai", "lmeval") and sep:
        if template is None:
            raise ConfigError(f"--rewriter {spec!r} needs a prompt template with {{text}} in it")
        if kind == "openai":
            base, _, model = rest.rpartition(":")
            if not base or not model:
                raise ConfigError(f"--rewriter {spec!r}: expected openai:BASE_URL:MODEL")
            return openai_rewriter(base, model, template)
        lm_name, _, args = rest.partition(":")
        return lmeval_rewriter(lm_name, args, template)
    raise ConfigError(f"--rewriter {spec!r}: use python:FILE.py:FUNC, openai:BASE_URL:MODEL, lmeval:LM:MODEL_ARGS "
                      "or style:NAME")


def resolve_shift(rewriter_spec: str, shift: str | None, template: str | None) -> tuple[str, str | None, int | None]:
    """(shift label, prompt template, rewriter version) of a ``rmbench shift`` run.

    ``style:NAME`` takes no template and labels its copies ``style:NAME`` unless ``shift`` is
    given; its version is the style's. The other rewriters default to ``paraphrase`` and to the
    shift's default prompt (which a python rewriter may lack: it uses none). The label must be
    one ``paired_shift`` reads (:data:`rmbench.tasks.shift.SHIFT_LABEL`)."""
    kind, sep, name = rewriter_spec.partition(":")
    if kind == "style" and sep:
        from rmbench.rewrite.style import get_style

        try:
            style = get_style(name)
        except ConfigError as exc:
            raise ConfigError(f"--rewriter {rewriter_spec!r}: {exc}") from None
        if template is not None:
            raise ConfigError(f"--rewriter {rewriter_spec!r} takes no --prompt-template (style rewriters use no LLM)")
        label, version = shift or f"style:{name}", style.version
    else:
        label, version = shift or "paraphrase", None
        if template is None:
            try:
                template = default_template(label)
            except ConfigError:
                if kind != "python":  # a python rewriter uses no prompt
                    raise
        if template is not None and "{text}" not in template:
            raise ConfigError("--prompt-template must contain {text}")
    if not SHIFT_LABEL.match(label):
        raise ConfigError(f"--shift {label!r} is not a shift label (paraphrase, translation:LANG, KIND:NAME)")
    return label, template, version


def _rewrite_all(rewrite: Rewriter, texts: list[str], rewriter_spec: str, batch_size: int,
                 progress: Callable[[int], None] | None) -> list[str]:
    """``texts`` rewritten batch by batch, each batch checked (as many texts, none empty)."""
    rewritten: list[str] = []
    for s in range(0, len(texts), batch_size):
        chunk = texts[s:s + batch_size]
        out_chunk = rewrite(chunk)
        if len(out_chunk) != len(chunk) or not all(isinstance(t, str) and t.strip() for t in out_chunk):
            raise ConfigError(f"rewriter {rewriter_spec!r} returned {len(out_chunk)} texts (some empty or not "
                              f"strings) for {len(chunk)}")
        rewritten += out_chunk
        if progress is not None:
            progress(len(chunk))
    return rewritten


def source_pairs(source: str, split: str = "train") -> list[ComparisonGroup]:
    """The preference pairs of ``source``: a file (or hub dataset) of pairs (``prompt``,
    ``chosen``, ``rejected`` strings), or in RewardBench 2's schema (``chosen`` and ``rejected``
    lists), whose every row becomes one pair per (correct, incorrect) answer, ids ``ROW#i-j``."""
    local = Path(source).exists()
    if local and _first_row_has_lists(Path(source)):
        from rmbench.tasks.rewardbench import RewardBench2Task

        out = []
        for g in RewardBench2Task(path=source).groups():
            for a, b in g.discrimination_pairs():
                out.append(ComparisonGroup.preference_pair(f"{g.id}#{a}-{b}", g.prompt, g.responses[a],
                                                           g.responses[b]))
        return out
    task = PreferenceTask(path=source) if local else PreferenceTask(dataset=source, split=split)
    return list(task.groups())


def _first_row_has_lists(path: Path) -> bool:
    """Whether the first row of a JSON Lines file holds ``chosen`` as a list (RewardBench 2's schema)."""
    try:
        with path.open(encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), "")
        return isinstance(json.loads(first).get("chosen"), list)
    except (ValueError, AttributeError, UnicodeDecodeError):
        return False  # not JSON Lines of objects: the pair reader says what is wrong


def write_shifted(source: str, out: str | Path, rewriter_spec: str, shift: str | None = None,
                  template: str | None = None, limit: int | None = None, batch_size: int = 16,
                  progress: Callable[[int], None] | None = None, rewriter: Rewriter | None = None,
                  split: str = "train") -> Path:
    """Rewrite ``chosen`` and ``rejected`` of every pair of ``source`` (a local file, or else a hub
    dataset id with ``split``; pairs or RewardBench 2 rows, :func:`source_pairs`); write ``out``
    and ``OUT.meta.json`` atomically.

    ``shift`` defaults to ``style:NAME`` for a style rewriter and to ``paraphrase`` otherwise
    (see :func:`resolve_shift`); ``rewriter``, if given, is used instead of the spec's."""
    shift, template, version = resolve_shift(rewriter_spec, shift, template)
    groups = source_pairs(source, split)[:limit]
    rewrite = rewriter or make_rewriter(rewriter_spec, template)
    texts = [t for g in groups for t in g.responses]
    rewritten = _rewrite_all(rewrite, texts, rewriter_spec, batch_size, progress)
    rows = []
    for k, g in enumerate(groups):
        rows.append({"prompt": prompt_to_json(g.prompt, sources=True),
                     "chosen": rewritten[2 * k], "rejected": rewritten[2 * k + 1],
                     "orig_chosen": g.responses[0], "orig_rejected": g.responses[1], "orig_index": k,
                     "id": f"{g.id}:{shift}", "shift": shift, "rewriter": rewriter_spec})
    out = Path(out)
    atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    meta = {"source": str(Path(source).resolve()) if Path(source).exists() else source,
            "source_fingerprint": data_fingerprint(groups), "shift": shift, "rewriter": rewriter_spec,
            "rewriter_version": version, "prompt_template": template, "rows": len(rows),
            "unchanged_texts": sum(a == b for a, b in zip(texts, rewritten))}
    atomic_write_text(out.with_name(out.name + ".meta.json"), json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return out


__all__: Sequence[str] = ["write_shifted", "make_rewriter", "default_template", "resolve_shift"]
