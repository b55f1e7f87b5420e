"""rmbench shift: rewriters and the paired output they write."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from typer.testing import CliRunner

from rmbench.cli.app import app
from rmbench.errors import ConfigError
from rmbench.rewrite.shift import default_template, write_shifted
from rmbench.tasks.shift import PairedShiftTask

PAIRS = [{"prompt": "What is 2 + 2?", "chosen": "It is four.", "rejected": "It is five."},
         {"prompt": "Capital of France?", "chosen": "Paris.", "rejected": "Lyon."}]


@pytest.fixture
def pairs_file(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    return path


def test_python_rewriter_writes_paired_rows_and_metadata(tmp_path, pairs_file):
    (tmp_path / "rw.py").write_text("def upper(texts):\n    return [t.upper() for t in texts]\n")
    out = tmp_path / "shifted.jsonl"
    result = CliRunner().invoke(app,
                                ["shift", "--data", str(pairs_file), "--rewriter", f"python:{tmp_path}/rw.py:upper",
                                      "--shift", "translation:fr", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["chosen"] == "IT IS FOUR." and rows[0]["orig_chosen"] == "It is four." and rows[1]["orig_index"] == 1
    meta = json.loads((tmp_path / "shifted.jsonl.meta.json").read_text())
    assert meta["rewriter"].startswith("python:") and "French" in meta["prompt_template"] and meta["rows"] == 2
    groups = list(PairedShiftTask(path=str(out), shift="translation:fr").groups())
    assert [g.id for g in groups] == ["orig:0", "translation:fr:0", "orig:1", "translation:fr:1"]


class _Handler(BaseHTTPRequestHandler):
    seen: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append(body)
        text = body["messages"][0]["content"].rsplit("\n\n", 1)[-1]
        reply = {"choices": [{"message": {"content": f"(rephrased) {text}"}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_openai_compatible_rewriter_against_a_local_server(tmp_path, pairs_file):
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_port}/v1"
        out = write_shifted(str(pairs_file), tmp_path / "p.jsonl", f"openai:{base}:tiny-model", "paraphrase")
    finally:
        server.shutdown()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1]["rejected"] == "(rephrased) Lyon."
    assert _Handler.seen[0]["model"] == "tiny-model" and _Handler.seen[0]["temperature"] == 0
    assert "Paraphrase the following text" in _Handler.seen[0]["messages"][0]["content"]


def test_rewriter_errors(tmp_path, pairs_file):
    with pytest.raises(ConfigError, match="use python:FILE.py:FUNC"):
        write_shifted(str(pairs_file), tmp_path / "x.jsonl", "sed:s/a/b/", "paraphrase")
    with pytest.raises(ConfigError, match="no default prompt"):
        default_template("typos")
    (tmp_path / "bad.py").write_text("def f(texts):\n    return ['']\n")
    with pytest.raises(ConfigError, match="returned 1 texts"):
        write_shifted(str(pairs_file), tmp_path / "y.jsonl", f"python:{tmp_path}/bad.py:f", "paraphrase")
    assert not (tmp_path / "y.jsonl").exists()
    with pytest.raises(ConfigError, match="failed"):
        write_shifted(str(pairs_file), tmp_path / "z.jsonl", "openai:http://127.0.0.1:9/v1:m", "paraphrase")


def test_lmeval_generation_rewriter_on_a_tiny_model(tmp_path, pairs_file, tiny):
    pytest.importorskip("lm_eval")
    from rmbench.rewrite.shift import lmeval_rewriter

    rewrite = lmeval_rewriter("hf", f"pretrained={tiny['causal']},dtype=float32", "{text}", max_gen_toks=4)
    out = write_shifted(str(pairs_file), tmp_path / "g.jsonl", f"lmeval:hf:pretrained={tiny['causal']}",
                        "paraphrase", rewriter=lambda texts: [t or "x" for t in rewrite(texts)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(isinstance(r["chosen"], str) for r in rows)


def test_shift_labels_and_templates(tmp_path, pairs_file):
    """A python rewriter needs no prompt (any KIND:NAME shift); without --shift it is a paraphrase;
    the LLM kinds need a template; a bad label fails before anything is written."""
    from rmbench.rewrite.shift import PARAPHRASE, make_rewriter

    (tmp_path / "rw.py").write_text("def upper(texts):\n    return [t.upper() for t in texts]\n")
    spec = f"python:{tmp_path}/rw.py:upper"
    out = write_shifted(str(pairs_file), tmp_path / "t.jsonl", spec, "typos:swap")
    meta = json.loads((tmp_path / "t.jsonl.meta.json").read_text())
    assert meta["shift"] == "typos:swap" and meta["prompt_template"] is None and meta["rewriter_version"] is None
    assert meta["unchanged_texts"] == 0 and json.loads(out.read_text().splitlines()[0])["shift"] == "typos:swap"
    write_shifted(str(pairs_file), tmp_path / "p.jsonl", spec)
    meta = json.loads((tmp_path / "p.jsonl.meta.json").read_text())
    assert meta["shift"] == "paraphrase" and meta["prompt_template"] == PARAPHRASE
    with pytest.raises(ConfigError, match="needs a prompt template"):
        make_rewriter("openai:http://127.0.0.1:9/v1:m")
    with pytest.raises(ConfigError, match="'Bad Label' is not a shift label"):
        write_shifted(str(pairs_file), tmp_path / "b.jsonl", spec, "Bad Label")
    assert not (tmp_path / "b.jsonl").exists()
