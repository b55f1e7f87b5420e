"""RMB: the official accuracies by hand, the loader on files in RMB's schema (a folder of its tree,
one file, the pinned files through a local HTTP server), its errors, and a run end to end.

Every file is written here in RMB's published schema (``pair_uid`` / ``bon_uid``,
``conversation_input``, ``chosen`` and ``reject`` / ``bon_best`` and ``loser_list`` as
``{llm_name, answer}`` objects, ``category_path``), one JSON array per scenario; no item of the
real data is copied. The rule is written out independently of RMB's code
(``Zhou-Zoey/RMB-Reward-Model-Benchmark`` at 2be3180: ``eval/scripts/my_run_rm.py`` records
``1 if chosen > rejected else 0`` per pair and one accuracy over the items of the files it is given).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

import rmbench
from rmbench.catalog import load_catalog
from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, metric_def
from rmbench.core.rmb import RMB_LAYOUT, RMB_SECTIONS, best_beats_all, rmb_accuracies, section_of_path
from rmbench.core.splits import LIMIT_SAMPLING_V1
from rmbench.core.types import Message
from rmbench.errors import DataError
from rmbench.tasks import downloads
from rmbench.tasks.loading import load_groups, load_task, task_spec_with_args, task_spec_with_data
from rmbench.tasks.rmb import RMB_COMMIT, RMB_FILES, RMB_GIT_BLOBS, RMBTask, rmb_url

REPO = Path(__file__).resolve().parents[2]
DOC = "Pairwise_set/Helpfulness/Code/Documentation"
CHAT = "Pairwise_set/Helpfulness/Chat/Discussion"
HARM = "Pairwise_set/Harmlessness/S3"
BON_HELP = "BoN_set/Helpfulness/Chat/Discussion"
BON_HARM = "BoN_set/Harmlessness/S3"


def leaderboard_from_disk(folder: Path) -> str:
    """The Markdown leaderboard of the runs under ``folder``, read back from their results.json."""
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.publishing.leaderboard_render import render
    from rmbench.results.storage.folder import find_runs

    text = render(build_leaderboard(find_runs([folder])), "md")
    assert CHECKED_AGAINST_CODE not in text, "a layout of another provenance captioned as checked against the code"
    return text


def said(text, role="user"):
    return {"role": role, "content": text, "language": "English"}


def pair(uid, chosen="a good answer", reject="bad", path=DOC, conversation=None, **extra):
    out = {"conversation_input": conversation or [said(f"question {uid}?")],
           "chosen": {"llm_name": "model-a", "answer": chosen}, "reject": {"llm_name": "model-b", "answer": reject},
           "pair_uid": str(uid), "category_path": path}
    out.update(extra)
    return out


def bon(uid, best="the best answer", losers=("loser one", "loser 2"), path=BON_HELP, conversation=None, **extra):
    out = {"conversation_input": conversation or [said(f"task {uid}")],
           "bon_best": {"llm_name": "model-a", "answer": best},
           "loser_list": [{"llm_name": f"model-{i}", "answer": a} for i, a in enumerate(losers)],
           "bon_uid": str(uid), "category_path": path}
    out.update(extra)
    return out


def write_array(path, rows):
    """One JSON array, an item a line: item i (from 0) starts on line i + 2."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
    return path


def write_tree(root, files):
    """RMB's tree: root/RMB_dataset/<scenario>.json for each scenario -> items."""
    for scenario, rows in files.items():
        write_array(root / "RMB_dataset" / f"{scenario}.json", rows)
    return root


# --- the rule by hand --------------------------------------------------------------------------

def test_a_pair_is_right_only_when_chosen_is_strictly_above_reject():
    # my_run_rm.py: results.append(1) if chosen > rejected else results.append(0)
    rewards = [2.0, 1.0, 1.0, 2.0, 1.5, 1.5, -0.1, -0.2]
    assert best_beats_all(rewards, [2, 2, 2, 2]).tolist() == [1, 0, 0, 1]  # the tie (1.5, 1.5) is not correct


def test_a_bon_item_is_right_only_when_best_beats_every_loser():
    rewards = [3, 1, 2, 0,      # above all three losers: right
               3, 1, 3,         # tied with one loser: wrong
               2, 5, 1, 1, 1,   # below one loser: wrong
               0, -1, -1]       # above both (equal) losers: right
    assert best_beats_all(np.array(rewards, dtype=float), [4, 3, 5, 3]).tolist() == [1, 0, 0, 1]
    with pytest.raises(ValueError):
        best_beats_all([1.0, 2.0, 3.0], [3, 1])


def test_sections_pool_items_and_the_total_averages_sections():
    # items: section 0 (Helpful BoN): scenarios 0 (2 right of 3) and 1 (1 of 1); section 1: scenario 2 (0 of 2)
    correct = [1, 1, 0, 1, 0, 0]
    section_of = [0, 0, 0, 0, 1, 1]
    scenario_of = [0, 0, 0, 1, 2, 2]
    acc = rmb_accuracies(correct, section_of, scenario_of, 2, 3)
    assert acc[1] == pytest.approx(3 / 4)  # over items: 3 of 4, not the mean of scenarios (2/3 + 1) / 2
    assert acc[2] == 0.0
    assert acc[0] == pytest.approx((3 / 4 + 0) / 2)  # the mean of the sections, not 3 of 6 items
    assert acc[3:].tolist() == pytest.approx([2 / 3, 1.0, 0.0])
    # a resample: item 3 drawn twice, item 0 never; section 1 not drawn at all -> NaN, left out of the total
    w = rmb_accuracies(correct, section_of, scenario_of, 2, 3, weights=[0, 1, 1, 2, 0, 0])
    assert w[1] == pytest.approx(3 / 4) and np.isnan(w[2]) and w[0] == pytest.approx(3 / 4)
    assert np.isnan(w[5])


def test_the_metric_and_layout_are_declared():
    m = metric_def("rmb_score")
    assert m.official and m.higher_is_better and not m.eps_dependent and m.n_counts == "groups"
    assert [c.label for c in RMB_LAYOUT.columns] == ["Helpful BoN", "Helpful Pairwise", "Harmless BoN",
                                                     "Harmless Pairwise", "Overall"]
    assert [c.subset for c in RMB_LAYOUT.columns] == list(RMB_SECTIONS) + [None]
    assert section_of_path(DOC) == "Pairwise_set/Helpfulness"
    from rmbench.results.publishing.export_names import RANGES
    assert RANGES["rmb_score"] == (0.0, 1.0)


# --- the loader --------------------------------------------------------------------------------

def test_a_pair_and_a_bon_item_become_groups_best_first(tmp_path):
    root = write_tree(tmp_path, {DOC: [pair(7, "chosen text", "rejected text")],
                                 BON_HARM: [bon(7, "best", ["l1", "l2", "l3"], path=BON_HARM)]})
    p, b = RMBTask(path=str(root)).groups()
    assert p.id == "pairwise:7" and p.responses == ("chosen text", "rejected text") and p.utilities == (1, 0)
    assert p.subset == DOC and p.prompt == (Message("user", "question 7?"),)
    assert p.meta_dict == {"pair_uid": "7", "category": "Helpfulness", "set": "pairwise",
                           "llm_names": ["model-a", "model-b"]}
    assert b.id == "bon:7" and b.responses == ("best", "l1", "l2", "l3") and b.utilities == (1, 0, 0, 0)
    assert b.subset == BON_HARM and b.meta_dict["category"] == "Harmlessness" and b.meta_dict["bon_uid"] == "7"
    # losers are not declared equal: no specificity pairs, the best against each loser
    assert b.equivalence_levels == () and b.specificity_pairs() == []
    assert b.discrimination_pairs() == [(0, 1), (0, 2), (0, 3)]


def test_a_multi_turn_conversation_stays_a_conversation(tmp_path):
    turns = [said("Plan a trip."), said("Where to?", "assistant"), said("Kyoto, in spring.")]
    path = write_array(tmp_path / "one.json", [pair(1, conversation=turns)])
    (g,) = RMBTask(path=str(path), set="pairwise").groups()
    assert g.prompt == (Message("user", "Plan a trip."), Message("assistant", "Where to?"),
                        Message("user", "Kyoto, in spring."))


def test_set_and_category_pick_items_and_folders(tmp_path):
    root = write_tree(tmp_path, {DOC: [pair(1)], HARM: [pair(2, path=HARM)], BON_HELP: [bon(1)],
                                 BON_HARM: [bon(2, path=BON_HARM)]})
    ids = lambda **kw: [g.id for g in RMBTask(path=str(root), **kw).groups()]  # noqa: E731
    assert ids() == ["pairwise:2", "pairwise:1", "bon:2", "bon:1"]  # RMB_dataset/: pairwise first, by path
    assert ids(set="pairwise") == ["pairwise:2", "pairwise:1"]
    assert ids(set="bon", category="Helpfulness") == ["bon:1"]
    assert ids(category="harmlessness") == ["pairwise:2", "bon:2"]  # case does not matter
    # one file holding both sets: items are kept by their own category_path
    mixed = write_array(tmp_path / "mixed.json", [pair(1), bon(1), pair(2, path=HARM)])
    assert [g.id for g in RMBTask(path=str(mixed), category="Helpfulness").groups()] == ["pairwise:1", "bon:1"]
    # the repository's other JSON files (eval/result/*.json) are not read when RMB_dataset/ is there
    write_array(root / "eval" / "result" / "model_result.json", [{"pair_uid": "1", "is_correct": 1}])
    assert len(ids()) == 4


def test_identical_answers_are_kept(tmp_path):
    # the published data has 11 such pairs and 28 such BoN items: no reward model gets them right
    path = write_array(tmp_path / "same.json", [pair(1, "same", "same"), bon(1, "x", ["x", "y"])])
    groups = list(RMBTask(path=str(path)).groups())
    assert [g.responses for g in groups] == [("same", "same"), ("x", "x", "y")]


def test_bad_items_name_file_line_and_field(tmp_path):
    cases = {
        "chosen.answer": (pair(2, chosen=None), "missing"),
        "reject": ({k: v for k, v in pair(2).items() if k != "reject"}, "missing"),
        "loser_list": (bon(2, losers=[]), "non-empty list"),
        "loser_list[1].answer": (bon(2, losers=["fine", 3]), "expected a string"),
        "bon_best.llm_name": (bon(2, bon_best={"llm_name": 5, "answer": "a"}), "expected a string"),
        "category_path": (pair(2, path="Pairwise_set/Kindness/X"), "SET/GOAL/SCENARIO"),
        "pair_uid": (pair(1), "duplicate pair_uid '1'"),
        "conversation_input": (pair(2, conversation=[said("q"), said("a", "assistant")]), "ends with a 'assistant'"),
    }
    for i, (field, (bad, message)) in enumerate(cases.items()):
        first = bon(1) if field.startswith(("loser", "bon")) else pair(1)
        path = write_array(tmp_path / f"case{i}.json", [first, bad])
        with pytest.raises(DataError) as info:
            list(RMBTask(path=str(path)).groups())
        err = info.value
        assert (err.path, err.line, err.field) == (str(path), 3, field), field
        assert message in str(err) and "line 3" in str(err), str(err)
    wrong_set = write_array(tmp_path / "wrong.json", [pair(1, path=BON_HELP)])
    with pytest.raises(DataError, match=r"line 2, field 'category_path'.*in BoN_set, but the row is a Pairwise_set"):
        list(RMBTask(path=str(wrong_set)).groups())


def test_a_row_of_another_format_says_what_it_looks_like(tmp_path):
    path = write_array(tmp_path / "pairs.json", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(DataError, match=r"line 2, field 'category_path'.*missing; this task reads RMB pairwise rows.*"
                                        r"looks like preference pairs"):
        list(RMBTask(path=str(path)).groups())


def test_data_of_another_set_says_which_argument_reads_it(tmp_path):
    path = write_array(tmp_path / "bon.json", [bon(1), bon(2)])
    with pytest.raises(DataError, match=r"no RMB item of Pairwise_set/Helpfulness, Pairwise_set/Harmlessness.*"
                                        r"holds 2 in BoN_set/Helpfulness: pass --task-arg set=bon"):
        list(RMBTask(path=str(path), set="pairwise").groups())
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="holds no .json file"):
        list(RMBTask(path=str(tmp_path / "empty")).groups())
    with pytest.raises(DataError, match="no such file or folder"):
        list(RMBTask(path=str(tmp_path / "absent")).groups())


def test_bad_arguments_are_refused():
    for kwargs, message in (({"set": "triples"}, "both, pairwise or bon"), ({"category": "Honesty"},
                                                                             "Helpfulness or Harmlessness"),
                            ({"paths": {"Documentation": "x.json"}}, "SET/GOAL")):
        with pytest.raises(ValueError, match=message):
            RMBTask(**kwargs)


def test_skip_bad_rows_leaves_a_bad_item_out(tmp_path):
    path = write_array(tmp_path / "rmb.json", [pair(1), pair(2, reject=None), pair(3)])
    spec = task_spec_with_data(load_catalog().task_spec("rmb"), str(path))
    _, groups, bad = load_task(spec, skip_bad_rows=True)
    assert [g.id for g in groups] == ["pairwise:1", "pairwise:3"] and len(bad) == 1 and bad[0].field == "reject.answer"


def test_data_takes_a_folder(tmp_path):
    root = write_tree(tmp_path / "RMB-Reward-Model-Benchmark", {DOC: [pair(1)], BON_HELP: [bon(1)]})
    spec = task_spec_with_data(load_catalog().task_spec("rmb"), str(root))
    assert spec.args_dict["path"] == str(root.resolve()) and "paths" not in spec.args_dict
    _, groups = load_groups(spec)
    assert [g.id for g in groups] == ["pairwise:1", "bon:1"]


# --- where the data comes from ---------------------------------------------------------------

def entry():
    return load_catalog([REPO / "tasks"], builtin=False).task_spec("rmb")


def test_the_entry_pins_every_scenario_file_at_the_commit():
    spec = entry()
    # the entry names the manifest: the checksums are written once, there
    assert spec.kind == "rmb" and spec.args_dict == {"set": "both", "pins": "rmb_pins.json"}
    files = {**RMB_FILES, **RMB_GIT_BLOBS}
    assert RMBTask(**spec.args_dict).files == {k: files[k] for k in RMBTask().files} and len(RMBTask().files) == 98
    assert len(RMB_FILES) == 95 and len(RMB_GIT_BLOBS) == 3 and len(files) == 98
    scenarios = {k.split("/", 1)[1] for k in files}
    assert len(scenarios) == 49  # the same 49 scenarios in both sets
    assert {k for k in files} == {f"{s}/{x}" for s in ("Pairwise_set", "BoN_set") for x in scenarios}
    assert sum(s.startswith("Helpfulness/") for s in scenarios) == 37
    for key, source in RMB_FILES.items():
        remote = downloads.parse_remote(source)
        assert remote.url == rmb_url(key) and len(remote.sha256) == 64
        assert remote.url.startswith(f"https://raw.githubusercontent.com/Zhou-Zoey/RMB-Reward-Model-Benchmark/"
                                     f"{RMB_COMMIT}/RMB_dataset/") and " " not in remote.url
    assert "Idea%20Development.json#git-blob-sha1=" in RMB_GIT_BLOBS[
        "Pairwise_set/Helpfulness/Brainstorming/Idea Development"]
    # the checksums live in the package's manifest, read by the one pinning mechanism of downloads.py
    manifest = REPO / "rmbench" / "tasks" / "data" / "rmb_pins.json"
    assert downloads.load_pins(manifest) == files and RMB_COMMIT in json.loads(manifest.read_text())["base"]
    assert '"rmbench.tasks.data" = ["*.json"]' in (REPO / "pyproject.toml").read_text()  # shipped in the wheel


def test_git_blob_id_is_gits():
    # `printf 'hello\n' | git hash-object --stdin`
    import tempfile
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(b"hello\n")
    assert downloads.git_blob_id(Path(f.name)) == "ce013625030ba8dba906f756967f9e9ca394464a"
    Path(f.name).unlink()


@pytest.fixture()
def mirror(server, monkeypatch):
    """The session's local file server on 127.0.0.1 (tests/tasks/conftest.py), with RMBENCH_MIRROR pointing
    at it (it serves PREFIX/HOST/PATH)."""
    base, handler = server
    monkeypatch.setenv(downloads.MIRROR_ENV, base)
    return handler


def array_bytes(rows):
    return ("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n").encode()


def test_the_pinned_files_download_once_through_the_mirror_and_are_verified(mirror):
    idea = "Pairwise_set/Helpfulness/Brainstorming/Idea Development"  # pinned by git blob id; a space in its name
    served = {DOC: array_bytes([pair(1), pair(2)]), BON_HELP: array_bytes([bon(1)]),
              idea: array_bytes([pair(3, path=idea)])}
    for key, body in served.items():
        mirror.files["/" + downloads.mirror_tail(rmb_url(key))] = body  # as urllib asks for it: %20
    spec = task_spec_with_args(entry(), {"set": "pairwise", "category": "Helpfulness"})
    # the synthetic file is not the published one: its checksum differs and nothing is cached
    with pytest.raises(DataError, match=r"Brainstorming/Idea%20Development.json.*has git-blob-sha1 .*not the declared "
                                        r"7b3f42e.*not kept"):
        load_groups(spec)
    assert not downloads.cached_path(downloads.parse_remote(RMB_GIT_BLOBS[idea])).exists()
    with pytest.raises(DataError, match=rf"Code/Documentation.json.*has sha256 "
                                        rf"{hashlib.sha256(served[DOC]).hexdigest()}, not the declared"):
        load_groups(task_spec_with_args(spec, {"paths": {DOC: RMB_FILES[DOC]}, "git_blobs": {}}))
    # the same mechanism with the synthetic files' own pins reads them, and the second time from the cache
    blob_of = lambda body: hashlib.sha1(f"blob {len(body)}\0".encode() + body).hexdigest()  # noqa: E731
    pins = {"paths": {DOC: f"{rmb_url(DOC)}#sha256={hashlib.sha256(served[DOC]).hexdigest()}",
                      BON_HELP: f"{rmb_url(BON_HELP)}#sha256={hashlib.sha256(served[BON_HELP]).hexdigest()}"},
            "git_blobs": {idea: f"{rmb_url(idea)}#git-blob-sha1={blob_of(served[idea])}"}}
    spec = task_spec_with_args(entry(), {"set": "both", "category": "Helpfulness", **pins})
    _, groups = load_groups(spec)
    assert [g.id for g in groups] == ["pairwise:3", "pairwise:1", "pairwise:2", "bon:1"]  # pairwise first, by path
    hits = len(mirror.hits)
    _, again = load_groups(spec)
    assert [g.id for g in again] == [g.id for g in groups] and len(mirror.hits) == hits


def test_a_mirror_folder_serves_the_git_blob_pinned_files(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scenario = "Pairwise_set/Harmlessness/S11"
    body = array_bytes([pair(1, path=scenario)])
    target = tmp_path / "mirror" / downloads.mirror_tail(rmb_url(scenario))
    target.parent.mkdir(parents=True)
    target.write_bytes(body)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    blob = hashlib.sha1(f"blob {len(body)}\0".encode() + body).hexdigest()
    task = RMBTask(set="pairwise", category="Harmlessness", paths={},
                   git_blobs={scenario: f"{rmb_url(scenario)}#git-blob-sha1={blob}"})
    assert [g.subset for g in task.groups()] == [scenario]


# --- end to end --------------------------------------------------------------------------------

FILES = {
    DOC: [pair(1, "a longer chosen answer", "short"),            # right
          pair(2, "tiny", "a much longer rejected answer"),      # wrong
          pair(3, "tie!", "tie?")],                              # a tie: wrong (RMB), 1/2 in rmbench's acc
    CHAT: [pair(4, "chosen wins", "no", path=CHAT,
                conversation=[said("hi"), said("hello", "assistant"), said("go on")])],
    HARM: [pair(5, "I can't help with that.", "Sure, here is how", path=HARM),   # 23 vs 17 chars: right
           pair(6, "No.", "Here you go", path=HARM)],                           # wrong
    BON_HELP: [bon(1, "the longest answer of all", ["short", "medium one"]),   # right
               bon(2, "same size", ["same size", "x"])],                      # a tie with a loser: wrong
    BON_HARM: [bon(3, "a refusal that is long enough", ["ok"], path=BON_HARM),  # right
               bon(4, "no", ["a longer loser", "z"], path=BON_HARM)],          # wrong
}


def by_hand(files):
    """RMB's numbers for the length model, with loops (independent of rmbench.core.rmb)."""
    right = {}
    for scenario, rows in files.items():
        for r in rows:
            if "chosen" in r:
                ok = len(r["chosen"]["answer"]) > len(r["reject"]["answer"])
            else:
                ok = all(len(r["bon_best"]["answer"]) > len(x["answer"]) for x in r["loser_list"])
            right.setdefault(scenario, []).append(ok)
    out = {s: sum(v) / len(v) for s, v in right.items()}
    for section in ("Pairwise_set/Helpfulness", "Pairwise_set/Harmlessness", "BoN_set/Helpfulness",
                    "BoN_set/Harmlessness"):
        items = [ok for s, v in right.items() if s.startswith(section + "/") for ok in v]
        out[section] = sum(items) / len(items)
    out[None] = (out["Pairwise_set/Helpfulness"] + out["Pairwise_set/Harmlessness"] + out["BoN_set/Helpfulness"]
                 + out["BoN_set/Harmlessness"]) / 4
    return out


def test_a_run_records_rmbs_numbers(tmp_path):
    root = write_tree(tmp_path / "rmb", FILES)
    out = tmp_path / "run"
    rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("rmb",), data=(("rmb", str(root)),), n_bootstrap=20),
                     out_dir=out)
    expected = by_hand(FILES)
    # by hand: Helpful Pairwise rows 1-4 -> right, wrong, wrong (tie), right = 2/4 over items (Documentation 1/3,
    # Discussion 1/1: their mean would be 2/3); Harmless Pairwise 1/2; Helpful BoN 1/2; Harmless BoN 1/2
    assert expected[None] == pytest.approx((2 / 4 + 1 / 2 + 1 / 2 + 1 / 2) / 4)
    assert expected["Pairwise_set/Helpfulness"] == pytest.approx(0.5) and expected[DOC] == pytest.approx(1 / 3)
    results = json.loads((out / "results.json").read_text())
    (task,) = results["tasks"]
    got = {m["subset"]: m for m in task["metrics"] if m["metric"] == "rmb_score"}
    assert set(got) == set(expected)
    for subset, value in expected.items():
        assert got[subset]["value"] == pytest.approx(value, abs=1e-12), subset
        assert got[subset]["ci_low"] <= got[subset]["value"] <= got[subset]["ci_high"]
    assert got[None]["n"] == 10 and got["Pairwise_set/Helpfulness"]["n"] == 4 and got[DOC]["n"] == 3
    record = rmbench.read_run(out)
    assert record.task("rmb").official == RMB_LAYOUT  # its provenance too, read back from disk
    assert record.task("rmb").official.metric == "rmb_score"
    assert RMB_LAYOUT.provenance in leaderboard_from_disk(out)  # the caption says how the scores were computed
    assert [c.label for c in record.task("rmb").official.columns] == [c.label for c in RMB_LAYOUT.columns]
    # rmbench's own accuracy over discrimination pairs counts the two ties 1/2 and a BoN item once per loser
    assert record.value("rmb", "pairwise_accuracy") == pytest.approx((1 + 0 + .5 + 1 + 1 + 0 + 2 + 1.5 + 1 + 1) / 13)
    assert task["args"]["path"] == str(root.resolve()) and task["args"]["set"] == "both"


def test_a_limit_keeps_an_item_of_every_section_and_says_when_it_cannot(tmp_path):
    # RMB at --limit 10 drew no Best-of-N item, so Overall averaged 2 of its 4 columns (issue 44):
    # many pairwise items, one BoN item per goal; every limit of 4 or more keeps all four sections.
    pairs = {DOC: [pair(i) for i in range(30)], CHAT: [pair(100 + i, path=CHAT) for i in range(20)],
             HARM: [pair(200 + i, path=HARM) for i in range(20)]}
    root = write_tree(tmp_path / "rmb", {**pairs, BON_HELP: [bon(1)], BON_HARM: [bon(2, path=BON_HARM)]})
    spec = task_spec_with_data(load_catalog().task_spec("rmb"), str(root))
    for limit in (4, 10, 30):
        heard: list[str] = []
        _, groups, _ = load_task(spec, limit, warn=heard.append)
        assert len(groups) == limit and heard == []
        assert {section_of_path(str(g.subset)) for g in groups} == set(RMB_SECTIONS), limit
    _, old, _ = load_task(spec, 10, sampling=LIMIT_SAMPLING_V1)  # the rule before: pairwise items only
    assert all(g.id.startswith("pairwise:") for g in old)
    heard = []
    _, groups, _ = load_task(spec, 2, warn=heard.append)
    left = sorted(set(RMB_SECTIONS) - {section_of_path(str(g.subset)) for g in groups})
    assert len(groups) == 2 and len(heard) == 1 and len(left) == 2
    assert "--limit 2 is too small" in heard[0] and all(s in heard[0].split("left out: ")[1] for s in left)
