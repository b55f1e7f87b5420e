"""Several files per task (issue 32, item 4): ``--data TASK=PART=PATH`` repeats for the tasks
that read several (RM-Bench's domains, domain shift's domains, a shift task's shifts); a task
given local files reads only them, or says which of its own parts it keeps and where from."""

from __future__ import annotations

import json

import pytest

from rmbench.catalog import builtin_tasks_dir
from rmbench.errors import ConfigError
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.loading import DataOverride, parse_data_overrides


def rm_bench_file(path, domain, n=4):
    rows = [{"id": i, "prompt": f"{domain} question {i}", "chosen": ["a" * (i + 2), "b b", "c c c"],
             "rejected": ["d", "e" * (i + 1), "f f"], "domain": domain} for i in range(n)]
    path.write_text(json.dumps(rows))
    return path


def test_parse_takes_several_labelled_files_of_one_task_once_each():
    items = ["rm_bench=chat=chat.json", "rm_bench=code=code.json"]
    assert parse_data_overrides(items, several=True) == (DataOverride("rm_bench", "chat.json", "chat"),
                                                         DataOverride("rm_bench", "code.json", "code"))
    with pytest.raises(ConfigError, match="gives task 'rm_bench' twice"):
        parse_data_overrides(items)  # compare and report take one file per task
    with pytest.raises(ConfigError, match="gives task 'rm_bench' its part 'chat' the file a.json twice"):
        parse_data_overrides(["rm_bench=chat=a.json", "rm_bench=chat=a.json"], several=True)
    # a part given again accumulates, in order (whether its kind takes several: task_spec_with_files)
    assert parse_data_overrides(["rm_bench=safety=a.json", "rm_bench=safety=b.json"], several=True) == (
        DataOverride("rm_bench", "a.json", "safety"), DataOverride("rm_bench", "b.json", "safety"))


def test_rm_bench_reads_each_domain_file_given(tmp_path):
    chat, code = rm_bench_file(tmp_path / "chat.json", "chat"), rm_bench_file(tmp_path / "code.json", "code")
    res = evaluate(EvalConfig(model="length", tasks=("rm_bench",), n_bootstrap=10, use_cache=False,
                              data=(("rm_bench", str(chat), "chat"), ("rm_bench", str(code), "code"))))
    task = res.tasks[0]
    assert task.counts.groups == 8 and dict(task.args) == {"paths": {"chat": str(chat), "code": str(code)}}
    assert {m.subset for m in res.records() if m.metric == "rm_bench_score"} >= {"chat", "code"}
    assert res.config.data == {"rm_bench": f"chat={chat}; code={code}"}


def test_domain_shift_reads_the_domains_given_and_says_which_part_it_keeps(tmp_path):
    data = builtin_tasks_dir() / "data"
    seen = []
    res = evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), n_bootstrap=10, use_cache=False,
                              data=(("domain_shift_sample", str(data / "domain" / "math.jsonl"), "math"),
                                    ("domain_shift_sample", str(data / "domain" / "code.jsonl"), "domain:code"))),
                   warn=seen.append)
    shifts = {m.shift for m in res.records() if m.metric == "pairwise_accuracy"}
    assert shifts == {None, "none", "domain:math", "domain:code"}
    assert any("its in-domain set 'chat' was not given, so it is the task's own (read from " in w for w in seen), seen
    seen.clear()
    evaluate(EvalConfig(model="length", tasks=("domain_shift_sample",), n_bootstrap=10, use_cache=False,
                        data=(("domain_shift_sample", str(data / "token_shift" / "pairs.jsonl"), "chat"),
                              ("domain_shift_sample", str(data / "domain" / "math.jsonl"), "math"))), warn=seen.append)
    assert not any("in-domain" in w for w in seen)  # every part given: nothing of the task's own is read


def test_a_task_that_reads_one_file_refuses_two(tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for p in (a, b):
        p.write_text(json.dumps({"id": "tied:0", "prompt": "q", "chosen": ["x"], "rejected": ["y"]}) + "\n")
    with pytest.raises(ConfigError, match="gives task 'ties' 2 files, but it reads one"):
        evaluate(EvalConfig(model="length", tasks=("ties",), data=(("ties", str(a)), ("ties", str(b)))))


def test_a_shift_task_takes_one_file_per_shift(tmp_path):
    data = builtin_tasks_dir() / "data" / "token_shift"
    res = evaluate(EvalConfig(model="length", tasks=("translation_shift_sample",), n_bootstrap=10, use_cache=False,
                              data=(("translation_shift_sample", str(data / "translation_fr.jsonl"), "translation:fr"),
                                    ("translation_shift_sample", str(data / "translation_es.jsonl"),
                                     "translation:es"))))
    shifts = {m.shift for m in res.records() if m.metric == "pairwise_accuracy"}
    assert {"translation:fr", "translation:es"} <= shifts


def test_a_part_of_several_files_reads_them_in_order_where_the_part_takes_several(tmp_path):
    """RM-Bench's safety domain is two upstream files, with no domain field and the same ids; a
    shift task's shift takes one file (issue 44, item 7)."""
    refuse, response = tmp_path / "safety-refuse_filtered.json", tmp_path / "safety-response_filtered.json"
    for path in (refuse, response):
        rows = json.loads(rm_bench_file(path, "x").read_text())
        path.write_text(json.dumps([{k: v for k, v in r.items() if k != "domain"} for r in rows]))
    chat = rm_bench_file(tmp_path / "chat.json", "chat")
    items = [f"rm_bench=safety={refuse}", f"rm_bench=safety={response}", f"rm_bench=chat={chat}"]
    res = evaluate(EvalConfig(model="length", tasks=("rm_bench",), n_bootstrap=10, use_cache=False,
                              data=parse_data_overrides(items, several=True)))
    task = res.tasks[0]
    assert task.counts.groups == 12
    assert dict(task.args)["paths"] == {"safety": [str(refuse), str(response)], "chat": str(chat)}
    assert res.metric("rm_bench", "rm_bench_score", subset="safety").n == 8
    data = builtin_tasks_dir() / "data" / "token_shift"
    two = (("translation_shift_sample", str(data / "translation_fr.jsonl"), "translation:fr"),
           ("translation_shift_sample", str(data / "translation_es.jsonl"), "translation:fr"))
    with pytest.raises(ConfigError, match="two files for its part 'translation:fr'.*reads one file") as info:
        evaluate(EvalConfig(model="length", tasks=("translation_shift_sample",), data=two))
    assert "\n" not in str(info.value)
