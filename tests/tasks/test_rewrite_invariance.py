"""The rewrite_invariance task kind: each answer beside its rewrite, in groups of four. Its
metrics (Spec across forms, D within and across forms, their gap, flips) against a hand
computation; the built-in paraphrase_invariance; the paper's file as it is; translations only
when allowed."""

from __future__ import annotations

import json
import math

import pytest

from rmbench.core.types import ORIGINAL, ComparisonGroup, PairIndex
from rmbench.errors import DataError
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.rewrite_invariance import RewriteInvarianceTask
from tests.conftest import shared_file

# Two source pairs and their paraphrases; the RM's reward of each text is given.
ROWS = [{"orig_index": 0, "prompt": "q0", "orig_chosen": "A0", "orig_rejected": "B0", "chosen": "a0", "rejected": "b0"},
        {"orig_index": 1, "prompt": "q1", "orig_chosen": "A1", "orig_rejected": "B1", "chosen": "a1", "rejected": "b1"}]
REWARDS = {"A0": 3.0, "B0": 1.0, "a0": 2.0, "b0": 2.5, "A1": 1.0, "B1": 0.0, "a1": 1.0, "b1": 0.2}
RM = f"REWARDS = {REWARDS!r}\n\ndef score(pairs):\n    return [REWARDS[response] for _, response in pairs]\n"


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "rm.py").write_text(RM)
    return data, tmp_path / "rm.py"


def test_groups_hold_each_answer_beside_its_rewrite(files):
    groups = list(RewriteInvarianceTask(path=str(files[0])).groups())
    assert [g.id for g in groups] == ["paraphrase:0", "paraphrase:1"]
    g = groups[0]
    assert g.responses == ("A0", "B0", "a0", "b0") and g.utilities == (1, 0, 1, 0) and g.shift == "paraphrase"
    assert g.forms == (ORIGINAL, ORIGINAL, "paraphrase", "paraphrase") and g.rewrite_of == (0, 1, 0, 1)
    index = PairIndex.from_groups(groups[:1])
    spec = {(int(a), int(b)) for a, b in zip(index.eq_a, index.eq_b)}
    assert spec == {(0, 2), (1, 3)} and index.eq_cross.all()  # an answer against its own rewrite
    cross = {(int(a), int(b)) for a, b, x in zip(index.diff_better, index.diff_worse, index.diff_cross) if x}
    assert cross == {(0, 3), (2, 1)}  # original chosen vs rewritten rejected, and the reverse
    assert list(zip(index.flip_a, index.flip_b, index.flip_oa, index.flip_ob)) == [(2, 3, 0, 1)]


def test_metrics_equal_a_hand_computation(files, tmp_path):
    data, rm = files
    record = evaluate(EvalConfig(model=f"python:{rm}:score", tasks=("paraphrase_invariance_sample",),
                                 data=(("paraphrase_invariance_sample", str(data)),), eps=(0.0, 0.5), eps_unit="raw",
                                 n_bootstrap=50), out_dir=tmp_path / "run")

    def value(metric, eps=None, shift=None):
        return record.metric("paraphrase_invariance_sample", metric, eps=eps, shift=shift).value

    # Specificity pairs (answer, rewrite): gaps 3-2=1, 1-2.5=-1.5, 1-1=0, 0-0.2=-0.2.
    assert value("rewrite_specificity", 0.0) == pytest.approx(1 / 4)  # only the 0 gap is within eps = 0
    assert value("rewrite_specificity", 0.5) == pytest.approx(2 / 4)
    # Within a form: 3-1=2, 2-2.5=-0.5, 1-0=1, 1-0.2=0.8. Across: 3-2.5=0.5, 2-1=1, 1-0.2=0.8, 1-0=1.
    assert value("within_form_discrimination", 0.0) == pytest.approx(3 / 4)
    assert value("within_form_discrimination", 0.5) == pytest.approx(3 / 4)
    assert value("cross_form_discrimination", 0.0) == pytest.approx(4 / 4)
    assert value("cross_form_discrimination", 0.5) == pytest.approx(3 / 4)  # 0.5 is not above 0.5
    assert value("cross_form_gap", 0.0) == pytest.approx(1 / 4) and value("cross_form_gap", 0.5) == pytest.approx(0)
    # Source 0's preference flips (2 > 0, but -0.5 < 0); source 1's holds.
    assert value("preference_flip_rate") == pytest.approx(1 / 2)
    # One rewrite kind: its slice is the whole task.
    assert value("rewrite_specificity", 0.0, shift="paraphrase") == value("rewrite_specificity", 0.0)
    gap = record.metric("paraphrase_invariance_sample", "cross_form_gap", eps=0.0)
    assert gap.estimate.has_ci and gap.n == 4  # cross-form pairs
    assert record.metric("paraphrase_invariance_sample", "rewrite_specificity", eps=0.0).n == 4
    assert record.task("paraphrase_invariance_sample").args["shift"] == "paraphrase"


def test_flip_rate_counts_ties_as_changes():
    g = ComparisonGroup("g", "q", ("a", "b", "a'", "b'"), (1, 0, 1, 0), forms=(ORIGINAL, ORIGINAL, "p", "p"),
                        rewrite_of=(0, 1, 0, 1))
    index = PairIndex.from_groups([g])
    assert len(index.flip_a) == 1


def test_forms_are_checked():
    with pytest.raises(ValueError, match="rewritten from 1, which is not an original"):
        ComparisonGroup("g", "q", ("a", "b", "c"), (1, 1, 1), forms=(ORIGINAL, "p", "p"), rewrite_of=(0, 0, 1))
    with pytest.raises(ValueError, match="utility of the original"):
        ComparisonGroup("g", "q", ("a", "b"), (1, 0), forms=(ORIGINAL, "p"), rewrite_of=(0, 0))
    with pytest.raises(ValueError, match="both forms and rewrite_of"):
        ComparisonGroup("g", "q", ("a", "b"), (1, 0), forms=(ORIGINAL, ORIGINAL))
    plain = ComparisonGroup("g", "q", ("a", "b"), (1, 0))
    assert "forms" not in plain.to_json()  # the fingerprints of groups without forms are unchanged


def test_translations_only_when_allowed(tmp_path):
    data = tmp_path / "fr.jsonl"
    data.write_text("".join(json.dumps({**r, "lang": "fr"}) + "\n" for r in ROWS))
    with pytest.raises(DataError, match="translation:fr.*allow_translation"):
        list(RewriteInvarianceTask(path=str(data)).groups())
    groups = list(RewriteInvarianceTask(path=str(data), allow_translation=True).groups())
    assert {g.shift for g in groups} == {"translation:fr"}


def test_builtin_paraphrase_invariance_on_a_baseline(tmp_path):
    record = evaluate(EvalConfig(model="length", tasks=("paraphrase_invariance_sample",), n_bootstrap=50))
    task = record.task("paraphrase_invariance_sample")
    assert task.counts.groups == 64 and task.counts.specificity_pairs == 128
    spec = record.metric("paraphrase_invariance_sample", "rewrite_specificity", eps=0.1).value
    assert 0.0 <= spec <= 1.0
    flips = record.metric("paraphrase_invariance_sample", "preference_flip_rate").value
    assert 0.0 <= flips <= 1.0


def test_the_papers_paraphrase_file_as_it_is(tmp_path):
    path = shared_file("exrm-vs-imrm/paraphrase_train.jsonl")
    record = evaluate(EvalConfig(model="length", tasks=("paraphrase_invariance_sample",),
                                 data=(("paraphrase_invariance_sample", str(path)),), n_bootstrap=20, limit=50))
    assert record.task("paraphrase_invariance_sample").counts.groups == 50
    value = record.metric("paraphrase_invariance_sample", "cross_form_discrimination", eps=0.0).value
    assert not math.isnan(value)


def test_rewardbench2_rows_become_pairs_for_a_style_set(tmp_path):
    from rmbench.rewrite.shift import write_shifted
    from rmbench.tasks.rewardbench import RewardBench2Task

    rows = [{"id": "r1", "prompt": "p", "chosen": ["a", "b"], "rejected": ["x", "y", "z"], "subset": "Focus"},
            {"id": "r2", "prompt": "q", "chosen": ["c"], "rejected": ["w"], "subset": "Math"}]
    source = tmp_path / "rb2.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = write_shifted(str(source), tmp_path / "polite.jsonl", "style:polite")
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(written) == 2 * 3 + 1 * 1  # every (correct, incorrect) answer pair of every row
    assert [(w["orig_chosen"], w["orig_rejected"]) for w in written[:3]] == [("a", "x"), ("a", "y"), ("a", "z")]
    assert all(w["chosen"].startswith("Sure!") and w["shift"] == "style:polite" for w in written)
    assert len(list(RewriteInvarianceTask(path=str(out)).groups())) == 7
    assert len(list(RewardBench2Task(path=str(source)).groups())) == 2


@pytest.mark.real_model
def test_paraphrase_invariance_on_the_default_model(tmp_path):
    from tests.conftest import smollm2_gguf

    smollm2_gguf()
    record = evaluate(EvalConfig(tasks=("paraphrase_invariance_sample",), limit=4, n_bootstrap=20))
    assert record.model.name == "smollm2-135m" and record.task("paraphrase_invariance_sample").counts.groups == 4
    for metric in ("rewrite_specificity", "cross_form_discrimination", "within_form_discrimination"):
        assert 0.0 <= record.metric("paraphrase_invariance_sample", metric, eps=0.1).value <= 1.0


# Small answers in four languages, one meaning: a paraphrase keeps the language, a translation does not.
ANSWERS = {
    "en": ("The cat is sleeping on the sofa, and it will wake up when you come home with the food that it likes.",
           "It is not possible to know this from the question; you should ask the owner of the cat about it."),
    "en2": ("Your cat sleeps on the couch and will wake when you return home with the food it enjoys.",
            "From the question alone this cannot be known; the owner of the cat would be the one to ask."),
    "fr": ("Le chat dort sur le canapé, et il se réveillera quand vous rentrerez avec la nourriture qu'il aime.",
           "Il n'est pas possible de le savoir avec cette question ; vous devez le demander au propriétaire du chat."),
    "es": ("El gato está durmiendo en el sofá, y se despertará cuando vuelvas a casa con la comida que le gusta.",
           "No es posible saberlo por la pregunta; también hay que preguntar al dueño del gato sobre esto."),
    "de": ("Die Katze schläft auf dem Sofa, und sie wird aufwachen, wenn du mit dem Futter nach Hause kommst, das sie "
           "mag.",
           "Das ist aus der Frage nicht zu wissen; du musst den Besitzer der Katze danach fragen, denn er kann es "
           "sagen."),
}


@pytest.mark.parametrize("lang", ["en", "en2", "fr", "es", "de"])
def test_the_language_guess_on_small_answers(lang):
    from rmbench.tasks.language import guess_language

    assert guess_language("\n".join(ANSWERS[lang])) == lang[:2]


def test_the_language_guess_stays_silent_without_evidence():
    from rmbench.tasks.language import guess_language

    assert guess_language("7") is None and guess_language("def f(x):\n    return x + 1\n") is None
    assert guess_language("Кошка спит на диване, и она проснётся, когда ты вернёшься домой.") == "cyrillic"


def _rows(rewrite):
    return [{"orig_index": 0, "prompt": "Where is the cat?", "orig_chosen": ANSWERS["en"][0],
             "orig_rejected": ANSWERS["en"][1], "chosen": ANSWERS[rewrite][0], "rejected": ANSWERS[rewrite][1]}]


@pytest.mark.parametrize("lang, name", [("fr", "French"), ("es", "Spanish"), ("de", "German")])
def test_a_translation_labelled_paraphrase_is_refused_with_its_line(tmp_path, lang, name):
    data = tmp_path / f"{lang}.jsonl"
    data.write_text(json.dumps(_rows("en2")[0] | {"orig_index": 1}) + "\n" + json.dumps(_rows(lang)[0]) + "\n")
    with pytest.raises(DataError) as info:
        list(RewriteInvarianceTask(path=str(data)).groups())
    message = str(info.value)
    assert f"{data}, line 2, field 'chosen'" in message
    assert f"in {name} but its original answers are in English" in message
    assert f"labelled 'paraphrase'; label it translation:{lang}" in message


def test_a_paraphrase_in_the_same_language_and_a_labelled_translation_pass(tmp_path):
    data = tmp_path / "en.jsonl"
    data.write_text(json.dumps(_rows("en2")[0]) + "\n")
    assert len(list(RewriteInvarianceTask(path=str(data)).groups())) == 1
    labelled = tmp_path / "fr.jsonl"
    labelled.write_text(json.dumps(_rows("fr")[0] | {"lang": "fr"}) + "\n")
    assert [g.shift for g in RewriteInvarianceTask(path=str(labelled), allow_translation=True).groups()] == \
        ["translation:fr"]


def test_the_papers_french_file_given_as_a_paraphrase_is_refused_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from rmbench.cli.app import app

    path = shared_file("exrm-vs-imrm/translate_french_train.jsonl")
    result = CliRunner().invoke(app, ["eval", "--model", "length", "--tasks", "paraphrase_invariance_sample",
                                      "--data", f"paraphrase_invariance_sample={path}", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "line 1, field 'chosen': the rewrite is in French but its original answers are in English" in text
    assert "Traceback" not in result.output and not (tmp_path / "r").exists()
