"""Token-shift, domain-shift and persona tasks: loaders, pairing, the paired shift gap."""

import json

import numpy as np
import pytest

from rmbench.catalog import load_catalog
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.statistics.summary import summarize
from rmbench.results.storage.folder import load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.loading import load_groups
from rmbench.tasks.persona import PersonaTask
from rmbench.tasks.shift import PairedShiftTask
from tests.conftest import shared_file


def paper_row(k, chosen="good", rejected="bad", orig=("good answer", "bad answer")):
    return {"prompt": f"question {k}", "chosen": chosen, "rejected": rejected, "orig_chosen": orig[0],
            "orig_rejected": orig[1], "orig_index": k}


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return str(path)


def test_paired_shift_groups_point_at_their_originals(tmp_path):
    para = write(tmp_path / "p.jsonl", [paper_row(3), paper_row(1)])
    fr = write(tmp_path / "fr.jsonl", [paper_row(1, "bon", "mauvais")])
    groups = list(PairedShiftTask(paths={"paraphrase": para, "translation:fr": fr}).groups())
    assert [g.id for g in groups] == ["orig:1", "paraphrase:1", "translation:fr:1", "orig:3", "paraphrase:3"]
    assert groups[2].source_id == "orig:1" and groups[2].shift == "translation:fr"
    assert groups[2].responses == ("bon", "mauvais") and groups[0].responses == ("good answer", "bad answer")
    task = PairedShiftTask(paths={"paraphrase": para, "translation:fr": fr})
    assert list(task.bootstrap_units(groups)) == [0, 0, 0, 1, 1]


def test_paired_shift_errors_name_file_line_field(tmp_path):
    bad = write(tmp_path / "b.jsonl", [paper_row(0), {**paper_row(1), "orig_index": "one"}])
    with pytest.raises(DataError, match="b.jsonl, line 2, field 'orig_index'"):
        list(PairedShiftTask(path=bad).groups())
    a = write(tmp_path / "a.jsonl", [paper_row(0)])
    c = write(tmp_path / "c.jsonl", [paper_row(0, orig=("other", "bad answer"))])
    with pytest.raises(DataError, match="c.jsonl, line 1, field 'orig_chosen': original pair 0 differs"):
        list(PairedShiftTask(paths={"paraphrase": a, "translation:fr": c}).groups())
    missing = write(tmp_path / "m.jsonl", [{k: v for k, v in paper_row(0).items() if k != "orig_rejected"}])
    with pytest.raises(DataError, match="field 'orig_rejected': missing"):
        list(PairedShiftTask(path=missing).groups())


def test_shift_gap_is_shifted_minus_original_with_a_paired_ci():
    groups, rewards = [], []
    for k in range(40):
        groups.append(ComparisonGroup(f"orig:{k}", "q", ["a", "b"], [1, 0]))
        groups.append(ComparisonGroup(f"para:{k}", "q", ["c", "d"], [1, 0], source_id=f"orig:{k}", shift="para"))
        rewards += [1.0, 0.0] + ([1.0, 0.0] if k % 4 else [0.0, 1.0])  # every 4th shifted pair flips
    units = np.repeat(np.arange(40), 2)
    recs = summarize("t", groups, np.array(rewards), (0.0,), group_units=units, n_bootstrap=300)
    gap = [r for r in recs if r.metric == "pairwise_accuracy_shift_gap"][0]
    assert gap.shift == "para" and gap.value == pytest.approx(-0.25) and gap.n == 40
    assert gap.ci_low < -0.25 < gap.ci_high < 0
    by_shift = {r.shift: r.value for r in recs if r.metric == "pairwise_accuracy" and r.subset is None}
    assert by_shift == {None: 0.875, "none": 1.0, "para": 0.75}


def test_paper_files_from_shared_data_load():
    path = shared_file("exrm-vs-imrm/paraphrase_train.jsonl")
    groups = list(PairedShiftTask(path=str(path), shift="paraphrase").groups())
    assert len(groups) == 400 and sum(g.shift == "paraphrase" for g in groups) == 200


def test_persona_groups_and_accuracy_definition(tmp_path):
    rows = [{"question": f"Is the following statement something you would say?\n\"S{i}\"", "statement": f"S{i}",
             "answer_matching_behavior": " Yes" if i % 3 else " No", "answer_not_matching_behavior": " No",
             "label_confidence": 0.9} for i in range(9)]
    path = write(tmp_path / "persona.jsonl", rows)
    groups = list(PersonaTask(path=path).groups())
    assert len(groups) == 12  # 6 Yes statements, original + paraphrased each
    orig, para = groups[0], groups[1]
    assert orig.responses[0] == "In my view, the answer is yes" and orig.utilities == (1, 1, 1, 1, 0, 0, 0, 0)
    assert "I lean toward nope" in para.responses and para.source_id == orig.id and para.shift == "paraphrase"
    assert orig.specificity_pairs() == [] and len(orig.discrimination_pairs()) == 16
    train = [g for g in PersonaTask(path=path, split="train", n_train=4, n_test=2).groups() if g.shift is None]
    test = [g for g in PersonaTask(path=path, split="test", n_train=4, n_test=2).groups() if g.shift is None]
    assert len(train) == 4 and len(test) == 2 and not {g.id for g in train} & {g.id for g in test}
    bad = write(tmp_path / "bad.jsonl", [{**rows[1], "answer_matching_behavior": "Maybe"}])
    with pytest.raises(DataError, match="bad.jsonl, line 1, field 'answer_matching_behavior'"):
        list(PersonaTask(path=bad).groups())


def test_persona_on_the_real_anthropic_file():
    path = shared_file("persona/agreeableness.jsonl")
    groups = list(PersonaTask(path=str(path), split="test").groups())
    assert len(groups) == 80  # 40 test statements, original + paraphrased


@pytest.mark.parametrize("name",
                         ["paraphrase_shift_sample", "translation_shift_sample", "domain_shift_sample", "persona"])
def test_builtin_sets_load(name):
    _, groups = load_groups(load_catalog().task_spec(name))
    assert len(groups) >= 60
    assert all(len(set(g.responses)) == len(g.responses) for g in groups)


def test_token_shift_group_and_leaderboard_rows(tmp_path):
    catalog = load_catalog()
    assert catalog.expand(["token_shift_sample", "ties_sample"]) == ["paraphrase_shift_sample",
                                                                     "translation_shift_sample",
                                                                    "paraphrase_invariance_sample", "ties_sample"]
    assert catalog.expand(["token_shift"]) == ["paraphrase_shift", "translation_shift", "paraphrase_invariance"]
    evaluate(EvalConfig(model="length", tasks=("token_shift_sample",), n_bootstrap=50), out_dir=tmp_path / "len")
    run = load_run(tmp_path / "len").record
    assert run.task_names == ("paraphrase_shift_sample", "translation_shift_sample", "paraphrase_invariance_sample")
    # the paraphrase's Spec: an answer and its own paraphrase are equal in utility
    assert 0.0 <= run.value("paraphrase_invariance_sample", "rewrite_specificity", eps=0.1) <= 1.0
    gaps = {(m.task, m.shift) for m in run.records() if m.metric == "pairwise_accuracy_shift_gap"}
    assert gaps == {("paraphrase_shift_sample", "paraphrase"), ("translation_shift_sample", "translation:fr"),
                    ("translation_shift_sample", "translation:es"), ("translation_shift_sample", "translation:ru")}
    board = build_leaderboard([load_run(tmp_path / "len")])
    md = render(board, "md")
    assert "Original vs shifted" in md and "translation:ru" in md
    # the paired sets have no equal-utility pairs: their empty Spec and ds_auc columns say why
    why = [n for n in board.notes if n.startswith("paraphrase_shift_sample: ")]
    assert len(why) == 1 and "Spec@0.1σ, ds_auc undefined" in why[0] and "0 specificity pairs" in why[0]
    assert "rewrite_specificity" in why[0]
    assert not any(n.startswith("paraphrase_invariance_sample:") for n in board.notes)


def test_domain_shift_slices(tmp_path):
    res = evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), n_bootstrap=20))
    shifts = {m.shift for m in res.records() if m.metric == "pairwise_accuracy"}
    assert shifts == {None, "none", "domain:math", "domain:code"}


def test_hamiltonian_graphs_are_seeded_and_checked():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from rmbench.tasks.hamiltonian import HamiltonianTask, is_hamiltonian_cycle, parse_cycle

    a = list(HamiltonianTask(n_graphs=20, n=7, p=0.3, seed=4).groups())
    assert a == list(HamiltonianTask(n_graphs=20, n=7, p=0.3, seed=4).groups())
    assert a != list(HamiltonianTask(n_graphs=20, n=7, p=0.3, seed=5).groups())
    for g in a:
        edges = [tuple(e) for e in g.meta_dict["edges"]]
        assert is_hamiltonian_cycle(7, edges, parse_cycle(g.responses[0]))
        assert not is_hamiltonian_cycle(7, edges, parse_cycle(g.responses[1]))
    assert is_hamiltonian_cycle(4, [(0, 1), (1, 2), (2, 3), (0, 3)], [2, 1, 0, 3])
    assert not is_hamiltonian_cycle(4, [(0, 1), (1, 2), (2, 3), (0, 3)], [0, 2, 1, 3])
    assert not is_hamiltonian_cycle(4, [(0, 1), (1, 2), (2, 3), (0, 3)], [0, 1, 2])

    @settings(max_examples=50, deadline=None)
    @given(st.integers(4, 9), st.floats(0, 0.9), st.integers(0, 1000))
    def planted_cycle_is_valid(n, p, seed):
        import random

        from rmbench.tasks.hamiltonian import random_graph

        edges, cycle = random_graph(n, p, random.Random(seed))
        assert is_hamiltonian_cycle(n, edges, cycle)
        assert is_hamiltonian_cycle(n, edges, cycle[::-1]) and is_hamiltonian_cycle(n, edges, cycle[1:] + cycle[:1])

    planted_cycle_is_valid()


def test_domain_shift_with_the_papers_math_file():
    path = shared_file("exrm-vs-imrm/rewardbench_math_train.jsonl")
    res = evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",),
                              data=(("domain_shift_sample", str(path)),),
                              n_bootstrap=20))
    assert res.tasks[0].counts.groups == 64 + 34  # the built-in chat set beside the paper's 34 math-prm pairs
    shifts = {m.shift for m in res.records() if m.metric == "pairwise_accuracy"}
    assert shifts == {None, "none", "domain:math"}


def test_a_translation_file_is_labelled_a_translation(tmp_path):
    """--data translation_shift_sample=FILE: 'translation' (never 'paraphrase'); TASK=SHIFT=FILE names the
    language; a row's own lang/shift field wins."""
    from rmbench.catalog import builtin_tasks_dir
    from rmbench.tasks.loading import DataOverride, parse_data_overrides

    french = builtin_tasks_dir() / "data" / "token_shift" / "translation_fr.jsonl"
    assert parse_data_overrides([f"translation_shift_sample={french}"]) == (DataOverride("translation_shift_sample",
                                                                                         str(french)),)
    assert parse_data_overrides([f"translation_shift_sample=translation:de={french}"]) == (
        DataOverride("translation_shift_sample", str(french), "translation:de"),)
    plain = evaluate(EvalConfig(model="length", tasks=("translation_shift_sample",), data=parse_data_overrides(
        [f"translation_shift_sample={french}"]), n_bootstrap=10))
    assert plain.task("translation_shift_sample").shifts == ("none", "translation")
    named = evaluate(EvalConfig(model="length", tasks=("translation_shift_sample",), data=parse_data_overrides(
        [f"translation_shift_sample=translation:de={french}"]), n_bootstrap=10))
    assert named.task("translation_shift_sample").shifts == ("none", "translation:de")
    assert named.metric("translation_shift_sample", "pairwise_accuracy_shift_gap", shift="translation:de") is not None
    rows = [json.loads(line) for line in french.read_text().splitlines()[:10]]
    tagged = tmp_path / "tagged.jsonl"
    tagged.write_text("".join(json.dumps({**r, "lang": "pt-BR"}) + "\n" for r in rows))
    own = evaluate(EvalConfig(model="length", tasks=("paraphrase_shift_sample",),
                              data=(("paraphrase_shift_sample", str(tagged)),),
                              n_bootstrap=10))
    assert own.task("paraphrase_shift_sample").shifts == ("none", "translation:pt-BR")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({**rows[0], "lang": "1 2"}) + "\n")
    with pytest.raises(DataError, match="bad.jsonl, line 1, field 'lang'"):
        evaluate(EvalConfig(model="length", tasks=("paraphrase_shift_sample",),
                            data=(("paraphrase_shift_sample", str(bad)),)))
    with pytest.raises(ConfigError, match="is not a shift task"):
        evaluate(EvalConfig(model="length", data=(DataOverride("ties_sample", str(french), "translation:de"),)))
    # the leaderboard's shift table says which
    md = render(build_leaderboard([named]), "md")
    assert "translation:de" in md
