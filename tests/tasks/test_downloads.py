"""Data only on the web (rmbench.tasks.downloads): declared by URL and sha256, fetched once from a
real HTTP server on 127.0.0.1 (or a mirror of it), verified, cached; Arrow files as the paper
publishes them."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import rmbench
from rmbench.errors import DataError
from rmbench.tasks import downloads
from rmbench.tasks.formats import iter_arrow
from rmbench.tasks.sources import iter_rows


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


PAIRS = b"".join(json.dumps({"prompt": f"q{i}", "chosen": "good " * (i + 1), "rejected": "bad"}).encode() + b"\n"
                 for i in range(4))


def test_a_good_file_downloads_once_is_verified_and_cached(server, capsys):
    base, handler = server
    handler.files["/data/pairs.jsonl"] = PAIRS
    remote = downloads.parse_remote(f"{base}/data/pairs.jsonl#sha256={_sha(PAIRS)}")
    assert not downloads.is_cached(remote)
    path = downloads.fetch(remote)
    assert path.read_bytes() == PAIRS and downloads.is_cached(remote)
    assert "downloading pairs.jsonl" in capsys.readouterr().err  # not a terminal: one line, not a bar
    assert downloads.fetch(remote) == path and handler.hits == ["/data/pairs.jsonl"]  # the second time: the cache
    assert [row["prompt"] for _, _, row in iter_rows(path=remote.text())] == ["q0", "q1", "q2", "q3"]


def test_a_wrong_checksum_is_an_error_and_nothing_is_cached(server):
    base, handler = server
    handler.files["/pairs.jsonl"] = PAIRS
    remote = downloads.parse_remote(f"{base}/pairs.jsonl#sha256={'0' * 64}")
    with pytest.raises(DataError, match=f"has sha256 {_sha(PAIRS)}, not the declared 0000.*it was not kept"):
        downloads.fetch(remote)
    assert not downloads.is_cached(remote) and list(downloads.cached_path(remote).parent.iterdir()) == []


def test_a_cut_transfer_is_an_error_and_nothing_is_cached(server):
    base, handler = server
    handler.files["/pairs.jsonl"] = PAIRS
    handler.cut.add("/pairs.jsonl")
    remote = downloads.parse_remote(f"{base}/pairs.jsonl#sha256={_sha(PAIRS)}")
    with pytest.raises(DataError, match="cut short"):
        downloads.fetch(remote)
    assert list(downloads.cached_path(remote).parent.iterdir()) == []
    handler.cut.clear()  # the server mended: the next run downloads it whole
    assert downloads.fetch(remote).read_bytes() == PAIRS


def test_the_mirror_prefix_serves_host_and_path(server, monkeypatch):
    base, handler = server
    handler.files["/raw.githubusercontent.com/org/repo/abc/data/test.jsonl"] = PAIRS
    monkeypatch.setenv(downloads.MIRROR_ENV, base + "/")
    url = "https://raw.githubusercontent.com/org/repo/abc/data/test.jsonl"
    assert downloads.source_url(url) == f"{base}/raw.githubusercontent.com/org/repo/abc/data/test.jsonl"
    assert downloads.fetch(downloads.parse_remote(f"{url}#sha256={_sha(PAIRS)}")).read_bytes() == PAIRS


def test_a_mirror_folder_holds_files_by_their_names_not_their_quoted_urls(tmp_path, monkeypatch):
    url = "https://raw.githubusercontent.com/org/repo/abc/data/Idea%20Development.json"
    (tmp_path / "mirror" / "raw.githubusercontent.com/org/repo/abc/data").mkdir(parents=True)
    (tmp_path / "mirror" / "raw.githubusercontent.com/org/repo/abc/data/Idea Development.json").write_bytes(PAIRS)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    assert downloads.fetch(downloads.parse_remote(f"{url}#sha256={_sha(PAIRS)}")).read_bytes() == PAIRS


def test_a_mirror_folder_serves_host_and_path_and_a_missing_one_is_one_line(tmp_path, monkeypatch):
    url = "https://raw.githubusercontent.com/org/repo/abc/data/test.jsonl"
    (tmp_path / "mirror" / "raw.githubusercontent.com/org/repo/abc/data").mkdir(parents=True)
    (tmp_path / "mirror" / "raw.githubusercontent.com/org/repo/abc/data/test.jsonl").write_bytes(PAIRS)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    assert downloads.fetch(downloads.parse_remote(f"{url}#sha256={_sha(PAIRS)}")).read_bytes() == PAIRS
    monkeypatch.setenv(downloads.MIRROR_ENV, "/some/folder")
    with pytest.raises(DataError, match=r"RMBENCH_MIRROR=/some/folder is neither a URL prefix .* nor an existing "
                                        r"folder.*/some/folder/raw.githubusercontent.com/org/repo/abc/data/test.jsonl"):
        downloads.fetch(downloads.parse_remote(f"{url}#sha256={'b' * 64}"))


def test_the_cli_says_a_missing_mirror_folder_in_one_line(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, downloads.MIRROR_ENV: "/some/folder", "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    run = subprocess.run([sys.executable, "-m", "rmbench", "eval", "--model", "length", "--tasks", "domain_shift",
                          "--bootstrap", "0", "--out", str(tmp_path / "run")], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "RMBENCH_MIRROR=/some/folder is neither" in lines[0]


def test_unreachable_and_missing_files_say_how_to_get_the_data(server, monkeypatch):
    base, _ = server
    remote = downloads.parse_remote(f"{base}/nothing.jsonl#sha256={'a' * 64}")
    with pytest.raises(DataError, match="HTTP 404.*RMBENCH_MIRROR=PREFIX.*--data TASK=PATH"):
        downloads.fetch(remote)
    closed = downloads.parse_remote(f"http://127.0.0.1:9/x.jsonl#sha256={'a' * 64}")
    with pytest.raises(DataError, match="could not download http://127.0.0.1:9/x.jsonl.*--data TASK=PATH"):
        downloads.fetch(closed)


def test_a_web_source_must_carry_its_checksum():
    assert downloads.parse_remote("data/pairs.jsonl") is None
    with pytest.raises(DataError, match="needs the sha256 of its file"):
        downloads.parse_remote("https://example.org/pairs.jsonl")
    with pytest.raises(DataError, match="needs the sha256"):
        downloads.parse_remote("https://example.org/pairs.jsonl#sha256=abc")
    r = downloads.parse_remote("https://example.org/a/pairs.jsonl#SHA256=" + "F" * 64)
    assert r.sha256 == "f" * 64 and r.name == "pairs.jsonl"


def _arrow_stream(path: Path, rows: list[dict]) -> bytes:
    import pyarrow as pa

    table = pa.Table.from_pylist(rows)
    with pa.ipc.new_stream(str(path), table.schema) as writer:  # what datasets' save_to_disk writes
        writer.write_table(table)
    return path.read_bytes()


def test_arrow_files_read_row_by_row(tmp_path):
    rows = [{"prompt": "q", "chosen": "a", "rejected": "b"}, {"prompt": "r", "chosen": "c", "rejected": "d"}]
    path = tmp_path / "data-00000-of-00001.arrow"
    _arrow_stream(path, rows)
    assert [r for _, r in iter_arrow(path)] == rows
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(DataError, match="not a readable Arrow file"):
        list(iter_arrow(path))


def test_a_paired_shift_task_on_the_web_scores_through_the_mirror(server, tmp_path, monkeypatch):
    """The shape of the published token_shift_sample: the paper's Arrow files by URL and checksum."""
    base, handler = server
    rows = [{"orig_index": str(k), "prompt": f"q{k}", "chosen": f"good answer {k} " * 3, "rejected": "bad",
             "orig_chosen": f"a good answer {k} " * 3, "orig_rejected": "no"} for k in range(5)]
    body = _arrow_stream(tmp_path / "p.arrow", rows)
    handler.files["/raw.githubusercontent.com/o/r/c/test/data-00000-of-00001.arrow"] = body
    monkeypatch.setenv(downloads.MIRROR_ENV, base)
    url = f"https://raw.githubusercontent.com/o/r/c/test/data-00000-of-00001.arrow#sha256={_sha(body)}"
    (tmp_path / "entries").mkdir()
    (tmp_path / "entries" / "web_shift.yaml").write_text(
        f"name: web_shift\nkind: paired_shift\nversion: 1\nargs:\n  paths:\n    paraphrase: {url}\n")
    run = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("web_shift",),
                                              include=(str(tmp_path / "entries"),),
                                              n_bootstrap=20))
    assert run.task("web_shift").counts.groups == 10 and run.value("web_shift", "pairwise_accuracy") == 1.0
    assert run.metric("web_shift", "pairwise_accuracy_shift_gap", shift="paraphrase") is not None
    # --data takes a web source too
    run = rmbench.evaluate(rmbench.EvalConfig(model="length", tasks=("paraphrase_shift_sample",),
                                              data=(("paraphrase_shift_sample", url),),
                                              n_bootstrap=20))
    assert run.task("paraphrase_shift_sample").counts.groups == 10


def test_data_status_says_where_data_comes_from_and_whether_it_is_here(server, tmp_path):
    from rmbench.tasks.sources import data_status

    base, handler = server
    handler.files["/a.jsonl"] = PAIRS
    good = f"{base}/a.jsonl#sha256={_sha(PAIRS)}"
    other = f"{base}/b.jsonl#sha256={'b' * 64}"
    assert data_status({"paths": {"x": good, "y": other}}) == "web, 2 files: not cached"
    downloads.fetch(downloads.parse_remote(good))
    assert data_status({"paths": {"x": good, "y": other}}) == "web, 2 files: 1 of 2 cached"
    assert data_status({"path": good}) == "web, 1 file: cached"
    (tmp_path / "here.jsonl").write_text("{}\n")
    assert data_status({"paths": {"a": str(tmp_path / "here.jsonl"), "b": str(tmp_path / "gone.jsonl")}}) == \
        "local files, 1 missing"
    assert data_status({"dataset": "org/never-fetched"}) == "hub org/never-fetched: not cached"
    assert data_status({"n_graphs": 3}) == "generated"


def test_a_download_off_a_terminal_prints_plain_progress_lines(server, capsys, monkeypatch):
    base, handler = server
    body = PAIRS * 4000  # several chunks of 64 KiB
    handler.files["/data/big.jsonl"] = body
    monkeypatch.setenv("RMBENCH_PROGRESS_EVERY", "1e-9")  # a line with every chunk
    downloads.fetch(downloads.parse_remote(f"{base}/data/big.jsonl#sha256={_sha(body)}"))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("downloading big.jsonl from ")
    assert any(line.startswith("downloading big.jsonl: ") and "MB/s, elapsed" in line for line in lines[1:-1]), lines
    assert lines[-1].startswith("downloading big.jsonl: done, ") and "(100%)" in lines[-1], lines


# --- pin manifests: the checksums a task ships as package data ---------------------------------

def _manifest(tmp_path, files):
    path = tmp_path / "pins.json"
    path.write_text(json.dumps({"base": "https://raw.githubusercontent.com/org/repo/abc/data/", "suffix": ".jsonl",
                                "files": files}))
    return path


def test_a_pin_manifest_entry_with_a_wrong_checksum_is_refused_in_one_line_naming_the_file(tmp_path):
    path = _manifest(tmp_path, {"good": f"sha256={'a' * 64}", "Split/bad": "sha256=" + "a" * 63})
    with pytest.raises(DataError) as err:
        downloads.load_pins(path)
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "files['Split/bad']" in message
    assert "sha256=<64 hex digits> or git-blob-sha1=<40 hex digits>" in message
    with pytest.raises(DataError, match=r"a pin manifest is"):
        downloads.load_pins(_manifest(tmp_path, ["not", "a", "mapping"]))


def test_a_pin_manifest_is_read_through_the_one_mechanism_and_a_served_file_that_differs_is_not_kept(
        tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    blob = hashlib.sha1(f"blob {len(PAIRS)}\0".encode() + PAIRS).hexdigest()
    pins = downloads.load_pins(_manifest(tmp_path, {"My pairs": f"git-blob-sha1={blob}",
                                                    "other": f"SHA256={_sha(PAIRS).upper()}"}))
    assert pins == {"My pairs": f"https://raw.githubusercontent.com/org/repo/abc/data/My%20pairs.jsonl"
                                f"#git-blob-sha1={blob}",
                    "other": f"https://raw.githubusercontent.com/org/repo/abc/data/other.jsonl#sha256={_sha(PAIRS)}"}
    folder = tmp_path / "mirror" / "raw.githubusercontent.com/org/repo/abc/data"
    folder.mkdir(parents=True)
    (folder / "My pairs.jsonl").write_bytes(PAIRS)
    monkeypatch.setenv(downloads.MIRROR_ENV, str(tmp_path / "mirror"))
    remote = downloads.parse_remote(pins["My pairs"])
    assert remote.algorithm == "git-blob-sha1" and downloads.fetch(remote).read_bytes() == PAIRS
    assert downloads.cached_path(remote).parent.name == f"git-blob-sha1-{blob}"
    wrong = downloads.parse_remote(pins["My pairs"].replace(blob, "0" * 40))
    with pytest.raises(DataError, match=rf"My%20pairs.jsonl.*has git-blob-sha1 {blob}, not the declared 0{{40}}; "
                                        rf"it was not kept"):
        downloads.fetch(wrong)
    assert not downloads.cached_path(wrong).exists()


def test_an_entry_s_pins_name_a_shipped_manifest_or_a_path(tmp_path):
    """``pins: NAME`` in a task entry: a bare name is a manifest of the package, anything else a path
    (the entry writes no checksum itself)."""
    shipped = downloads.pin_manifest("rmb_pins.json")
    assert shipped == downloads.PIN_MANIFESTS / "rmb_pins.json" and shipped.is_file()
    own = _manifest(tmp_path, {"x": f"sha256={'b' * 64}"})
    assert downloads.pin_manifest(str(own)) == own
    assert downloads.load_pins(downloads.pin_manifest(str(own)))["x"].endswith("#sha256=" + "b" * 64)
