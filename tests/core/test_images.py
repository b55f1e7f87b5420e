"""Images in the data model (issue 56 item 1): an image is known by the sha256 of its bytes in
every key and fingerprint, never by its path; prompts carry images through rows, groups files,
the scoring engine's wire form and the score cache; a text-only model is refused such prompts."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.images import Image, sniff_mime
from rmbench.core.prompts import Message, prompt_from_json, prompt_images, prompt_to_json
from rmbench.core.types import ComparisonGroup, data_fingerprint
from rmbench.errors import DataError, ModelError
from rmbench.models.base import ScoreRequest
from rmbench.scoring.requests import RESPONSES
from rmbench.scoring.runner import EvalConfig, evaluate
from rmbench.tasks.rows import RowReader


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG file (8-bit RGB, one colour), written by hand: signature, IHDR, IDAT, IEND."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


RED, BLUE = png(4, 3, (255, 0, 0)), png(4, 3, (0, 0, 255))


def test_an_image_is_its_content_hash_not_its_path(tmp_path):
    (tmp_path / "a.png").write_bytes(RED)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "copy.jpg").write_bytes(RED)  # same bytes, another name and extension
    (tmp_path / "b.png").write_bytes(BLUE)
    a, copy, b = (Image.from_file(tmp_path / n) for n in ("a.png", "sub/copy.jpg", "b.png"))
    assert a.sha256 == hashlib.sha256(RED).hexdigest()
    assert a == copy and hash(a) == hash(copy) and a != b
    assert a.mime == copy.mime == "image/png"  # sniffed from the bytes, not the extension
    assert a.identity() == {"sha256": a.sha256}
    assert str(tmp_path) not in json.dumps(a.identity())
    assert a.data is None and a.read_bytes() == RED  # a file's bytes are read again, not held


def test_a_file_changed_after_loading_is_refused(tmp_path):
    path = tmp_path / "a.png"
    path.write_bytes(RED)
    image = Image.from_file(path)
    path.write_bytes(BLUE)
    with pytest.raises(ValueError, match="changed since it was loaded"):
        image.read_bytes()


def test_data_urls_bytes_and_refs(tmp_path):
    url = "data:image/png;base64," + base64.b64encode(RED).decode()
    held = Image.from_data_url(url)
    assert held.data == RED and held.sha256 == hashlib.sha256(RED).hexdigest()
    assert held.data_url() == url
    assert held.data_url(mime="image/jpeg").startswith("data:image/jpeg;base64,")
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "r.png").write_bytes(RED)
    forms = [
        "img/r.png", {"path": "img/r.png"}, {"image_path": "img/r.png"}, url, {"url": url},
        {"bytes": RED}, {"bytes": base64.b64encode(RED).decode()}, str(tmp_path / "img" / "r.png"),
        {"sha256": held.sha256, "source": "img/r.png"},
    ]
    assert {Image.from_ref(f, tmp_path) for f in forms} == {held}


@pytest.mark.parametrize("ref, message", [
    ("https://example.com/a.png", "web address"),
    ("missing.png", "no such image file"),
    ("data:image/png;base64,@@@", "invalid base64"),
    ("data:image/png,notbase64", "data:<type>;base64"),
    ({"nothing": 1}, "needs 'path'"),
    ({"path": "r.png", "sha256": "0" * 64}, "it changed"),
    (3, "not int"),
])
def test_bad_image_refs_are_one_line(tmp_path, ref, message):
    (tmp_path / "r.png").write_bytes(RED)
    with pytest.raises(ValueError, match=message) as info:
        Image.from_ref(ref, tmp_path)
    assert "\n" not in str(info.value)


def test_mime_sniffing():
    assert sniff_mime(RED) == "image/png"
    assert sniff_mime(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert sniff_mime(b"GIF89a...") == "image/gif"
    assert sniff_mime(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_mime(b"??", "x.png") == "image/png"
    assert sniff_mime(b"??") == "application/octet-stream"


def _content_parts(text: str, ref: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": text},
                                         {"type": "image_url", "image_url": {"url": ref}}]}]


def test_prompts_read_openai_content_parts_and_keep_text_prompts_as_they_were(tmp_path):
    (tmp_path / "r.png").write_bytes(RED)
    prompt = prompt_from_json(_content_parts("What colour?", "r.png"), tmp_path)
    assert isinstance(prompt, tuple) and prompt[0].content == "What colour?"
    assert prompt_images(prompt) == (Image.from_bytes(RED),)
    assert prompt_to_json(prompt) == [{"role": "user", "content": "What colour?",
                                       "images": [{"sha256": hashlib.sha256(RED).hexdigest()}]}]
    again = prompt_from_json(prompt_to_json(prompt, sources=True))  # the wire form builds it back
    assert again == prompt and again[0].images[0].source == str((tmp_path / "r.png").resolve())
    # A text message's JSON has no "images" key, so every text prompt's key is what it was.
    text = (Message("user", "hi"),)
    assert prompt_to_json(text) == [{"role": "user", "content": "hi"}]
    assert ScoreRequest(text, "yo").key() == sha256_hex(canonical_json(
        {"prompt": [{"role": "user", "content": "hi"}], "response": "yo"}))
    assert ScoreRequest("hi", "yo").key() == sha256_hex(canonical_json({"prompt": "hi", "response": "yo"}))


def test_interleaved_text_and_images_are_refused(tmp_path):
    (tmp_path / "r.png").write_bytes(RED)
    parts = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "r.png"}},
             {"type": "text", "text": "b"}]
    with pytest.raises(ValueError, match="message 0, part 2: text after an image"):
        prompt_from_json([{"role": "user", "content": parts}], tmp_path)
    with pytest.raises(ValueError, match="message 0, part 0: a content part"):
        prompt_from_json([{"role": "user", "content": [{"type": "audio"}]}], tmp_path)


def test_keys_and_fingerprints_follow_content_not_paths(tmp_path):
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.png").write_bytes(RED)
    (tmp_path / "blue.png").write_bytes(BLUE)

    def group(ref: str) -> ComparisonGroup:
        return ComparisonGroup.preference_pair("g", prompt_from_json(_content_parts("q", ref), tmp_path), "a", "b")
    one, two, blue = group("one/x.png"), group("two/x.png"), group("blue.png")
    assert one == two and data_fingerprint([one]) == data_fingerprint([two]) != data_fingerprint([blue])
    key = ScoreRequest(one.prompt, "a").key()
    assert key == ScoreRequest(two.prompt, "a").key() != ScoreRequest(blue.prompt, "a").key()
    assert "one/x.png" not in json.dumps(one.to_json()) and "one/x.png" in json.dumps(one.to_json(sources=True))


def test_the_engine_wire_form_carries_images(tmp_path):
    (tmp_path / "x.png").write_bytes(RED)
    inline = Image.from_bytes(BLUE)
    prompt = (Message("user", "q", (Image.from_file(tmp_path / "x.png"), inline)),)
    request = ScoreRequest(prompt, "a", "g", 1)
    back = RESPONSES.from_json(json.loads(json.dumps(RESPONSES.to_json(request))))
    assert back == request and back.key() == request.key()
    assert [i.read_bytes() for i in prompt_images(back.prompt)] == [RED, BLUE]


@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=1, max_size=64), st.binary(min_size=1, max_size=64))
def test_equal_bytes_equal_images_property(a, b):
    assert (Image.from_bytes(a) == Image.from_bytes(b)) == (a == b)
    assert Image.from_data_url(Image.from_bytes(a).data_url()) == Image.from_bytes(a)


def test_a_row_image_error_names_file_line_and_field(tmp_path):
    path = tmp_path / "rows.jsonl"
    r = RowReader({"prompt": _content_parts("q", "gone.png")}, str(path.write_text("") or path), 7)
    with pytest.raises(DataError) as info:
        r.prompt()
    assert (info.value.line, info.value.field) == (7, "prompt") and "no such image file" in str(info.value)


# --- end to end: a groups file whose prompts carry images -----------------------------------------

SCORER = '''
import base64, json, pathlib
from rmbench.core.images import Image
CALLS = pathlib.Path(__file__).with_name("calls.txt")

def score(items):
    with CALLS.open("a") as f:
        f.write(f"{len(items)}\\n")
    out = []
    for prompt, response in items:
        image = Image.from_ref(prompt[0]["images"][0])  # the file or data URL, its hash checked
        out.append(float(image.read_bytes()[-13] % 7 + len(response)))
    return out
'''


def _task(folder: Path, images: dict[str, bytes]) -> None:
    (folder / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (name, data) in enumerate(sorted(images.items())):
        (folder / "img" / name).write_bytes(data)
        rows.append({"id": f"g{k}", "prompt": _content_parts(f"Describe image {k}.", f"img/{name}"),
                     "responses": ["short", "a longer answer", "mid one"], "utilities": [0, 2, 1]})
    (folder / "vis.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "vis.yaml").write_text("name: vis\nkind: groups\nargs:\n  path: vis.jsonl\n")


def _calls(scorer: Path) -> int:
    calls = scorer.with_name("calls.txt")
    return sum(int(n) for n in calls.read_text().split()) if calls.exists() else 0


def test_a_groups_file_with_images_scores_end_to_end_and_caches_by_content(tmp_path):
    scorer = tmp_path / "scorer" / "fn.py"
    scorer.parent.mkdir()
    scorer.write_text(SCORER)
    images = {"a.png": RED, "b.png": BLUE, "c.png": png(2, 2, (0, 255, 0))}
    common = dict(model=f"python:{scorer}:score", tasks=("vis",), n_bootstrap=20, cache_dir=str(tmp_path / "cache"))
    _task(tmp_path / "first", images)
    evaluate(EvalConfig(include=(str(tmp_path / "first"),), **common), out_dir=tmp_path / "run1")
    assert _calls(scorer) == 9
    rewards1 = (tmp_path / "run1" / "rewards.jsonl").read_text()
    # The same images in another folder: every score comes from the cache (keys hold no path).
    _task(tmp_path / "second", images)
    evaluate(EvalConfig(include=(str(tmp_path / "second"),), **common), out_dir=tmp_path / "run2")
    assert _calls(scorer) == 9
    assert (tmp_path / "run2" / "rewards.jsonl").read_text() == rewards1
    # One image's pixels changed: only that group's three responses are scored again.
    _task(tmp_path / "third", {**images, "b.png": png(4, 3, (9, 9, 9))})
    evaluate(EvalConfig(include=(str(tmp_path / "third"),), **common), out_dir=tmp_path / "run3")
    assert _calls(scorer) == 12
    results = json.loads((tmp_path / "run3" / "results.json").read_text())
    assert "/img/" not in json.dumps(results)  # no image path in the results (the task file's own path is)


def test_a_text_only_model_is_refused_prompts_with_images(tmp_path, tiny):
    _task(tmp_path, {"a.png": RED, "b.png": BLUE})
    folder = tiny["seqcls"]
    with pytest.raises(ModelError, match=r"reads text only, but 2 of the 2 groups' prompts carry images"):
        evaluate(EvalConfig(model=f"seqcls:{folder}", tasks=("vis",), include=(str(tmp_path),),
                            n_bootstrap=20, use_cache=False))


def test_baselines_read_no_prompt_and_score_image_tasks(tmp_path):
    _task(tmp_path, {"a.png": RED, "b.png": BLUE})
    result = evaluate(EvalConfig(model="length", tasks=("vis",), include=(str(tmp_path),), n_bootstrap=20))
    assert (result.tasks[0].counts.groups, result.tasks[0].counts.responses) == (2, 6)


# --- judges: a prompt's images go to the server as image_url parts -------------------------------

def _judge_reply(body: dict) -> str:
    """A rating judge that reads the colour of the image it is sent: red answers rate 9, others 2."""
    content = body["messages"][-1]["content"]
    url = content[1]["image_url"]["url"]
    data = base64.b64decode(url.partition(",")[2])
    return f"Rating: {9 if data == RED else 2}"


def test_a_judge_sends_each_prompt_image_and_caches_its_calls_by_content(tmp_path):
    from tests.support.judge_server import ScriptedServer

    images = {"a.png": RED, "b.png": BLUE}
    for folder in ("first", "second"):
        _task(tmp_path / folder, images)
    with ScriptedServer(reply=_judge_reply) as server:
        def run(folder: str):
            cfg = EvalConfig(model="judge:judge-model", model_args=(("base_url", server.base_url),), tasks=("vis",),
                             include=(str(tmp_path / folder),), n_bootstrap=20, cache_dir=str(tmp_path / "cache"))
            return evaluate(cfg, out_dir=tmp_path / f"run-{folder}")
        run("first")
        sent = server.chat_requests()
        assert len(sent) == 6
        for body in sent:
            text, image = body["messages"][-1]["content"]
            assert text["type"] == "text" and "Describe image" in text["text"]
            assert image["type"] == "image_url" and image["image_url"]["url"].startswith("data:image/png;base64,")
        red = [b for b in sent if "Describe image 0" in b["messages"][-1]["content"][0]["text"]]
        assert {base64.b64decode(b["messages"][-1]["content"][1]["image_url"]["url"].partition(",")[2])
                for b in red} == {RED}
        rows = [json.loads(line) for line in (tmp_path / "run-first" / "rewards.jsonl").read_text().splitlines()]
        assert sorted({r["reward"] for r in rows}) == [2.0, 9.0]
        run("second")  # the same pixels under another folder: every call from the call cache
        assert len(server.chat_requests()) == 6


def test_anthropic_batch_params_carry_image_blocks():
    from rmbench.models.judge.batch_providers import anthropic_params
    from rmbench.models.judge.wire import ChatRequest

    image = Image.from_bytes(RED)
    request = ChatRequest((("system", "Be fair."), ("user", "Which is red?")), images=((), (image,)))
    params = anthropic_params(request, "claude")
    assert params["system"] == "Be fair."
    assert params["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "Which is red?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": base64.b64encode(RED).decode()}}]}]
    keyed = request.body("m", keyed=True)["messages"][1]["content"][1]
    assert keyed == {"type": "image_url", "image_url": {"url": f"sha256:{image.sha256}"}}
    assert ChatRequest((("user", "hi"),)).body("m") == ChatRequest((("user", "hi"),), images=((),)).body("m")
