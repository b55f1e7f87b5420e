"""bench/gpu.py on the CPU with tiny shapes (its own test, so CI keeps the GPU benchmark working;
the numbers it exists for come from a GPU: bench/RESULTS.md)."""

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("tokenizers")


def test_gpu_benchmark_runs_tiny_on_the_cpu(tmp_path, capsys):
    from bench import gpu

    assert gpu.main(["--tiny", "--groups", "5", "--json", str(tmp_path / "rows.json")]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    by = {(r["model"], r["contender"]): r for r in rows}
    for family in ("seqcls", "implicit"):
        engine, plain = by[f"tiny {family}", "rmbench engine"], by[f"tiny {family}", "plain loop, batch 8, input order"]
        whole = by[f"tiny {family}", "rmbench engine, no prompt KV reuse"]
        assert engine["text_tokens"] == plain["text_tokens"] == whole["text_tokens"] > 0
        assert engine["padding"] < plain["padding"]  # length-sorted batches against input order
        assert "pairs ordered alike 100.0%" in engine["agreement"]  # float32: the plain loop's rewards
        assert "budget 8192 tokens, 64 rows (the CPU default)" in engine["note"]
        assert engine["note"].startswith("plan: prompt KV reuse, padding <= 10%")  # the CPU's plan
        assert plain["agreement"] == "" and whole["agreement"]
        assert by[f"tiny {family}", "vLLM"]["note"]  # measured, or why not
    assert "| tiny seqcls | rmbench engine |" in capsys.readouterr().out


def test_workload_lengths_come_from_the_shipped_tasks():
    from bench import gpu_models

    prompts, answers = gpu_models.shipped_texts()
    tok = gpu_models.build_tokenizer(prompts + answers, 512)
    groups = gpu_models.workload(tok, 30)
    assert all(len(g.responses) == 4 for g in groups)
    shipped = {len(tok(t, add_special_tokens=False)["input_ids"]) for t in answers}
    drawn = [len(tok(r, add_special_tokens=False)["input_ids"]) for g in groups for r in g.responses]
    # Re-tokenising the joined words can merge across a space only where the BPE learned such a merge: rare.
    assert sum(n in shipped for n in drawn) >= 0.9 * len(drawn)
