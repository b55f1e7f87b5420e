"""The HTML report of a run on an image task (issue 56 item 1): an example whose prompt carries an
image shows a small PNG thumbnail embedded as a data URL, titled by its sha256; no image path is
written into the page or the results; an image without a thumbnail is its hash and a one-line note."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmbench.core.images import Image
from rmbench.results.publishing.report import ReportOptions, build_report, write_report
from rmbench.results.publishing.thumbnails import MAX_THUMB_BYTES, THUMB_PX, make_thumbnail, thumbnails
from rmbench.results.storage.folder import RunFolder, load_run
from rmbench.scoring.runner import EvalConfig, evaluate
from tests.support.browser import find_browser

PIL = pytest.importorskip("PIL.Image")

IDS = ["RLAIF-V_1", "RLHF-V_2", "mathverse_3", "mmmu-4", "wildvision-battle_5", "vlf_6"]


def _png(width: int, height: int, seed: int) -> bytes:
    """A picture bigger than a thumbnail: a colour gradient with a square, different per seed."""
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([(x * 255 // width + seed * 40) % 256, y * 255 // height, np.full_like(x, 255 - seed * 30)], -1)
    rgb[height // 4:height // 2, width // 4:width // 2] = (seed * 50 % 256, 255, 0)
    out = io.BytesIO()
    PIL.fromarray(rgb.astype(np.uint8)).save(out, format="PNG")
    return out.getvalue()


def _folder(root: Path) -> Path:
    folder = root / "vlrb"
    (folder / "pictures").mkdir(parents=True)
    rows = []
    for k, item in enumerate(IDS):
        (folder / "pictures" / f"pic_{k}.png").write_bytes(_png(320, 200, k))
        rows.append({"id": item, "query": f"What is in picture {k}?", "response": ["a" * (10 + k), "b" * (30 - k)],
                     "human_ranking": [k % 2, 1 - k % 2], "image_path": f"pictures/pic_{k}.png", "meta": {}})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture(scope="module")
def image_run(tmp_path_factory) -> tuple[Path, RunFolder]:
    root = tmp_path_factory.mktemp("image_report")
    folder = _folder(root)
    evaluate(EvalConfig(model="length", tasks=("vl_rewardbench",), data=(("vl_rewardbench", str(folder)),),
                     n_bootstrap=20, use_cache=False), out_dir=root / "run")
    return folder, load_run(root / "run")


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.thumbs: list[dict[str, str | None]] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img" and a.get("class") == "thumb":
            self.thumbs.append(a)


def test_the_report_shows_png_thumbnails_by_hash_and_no_path(image_run, tmp_path):
    folder, run = image_run
    text = write_report([run], tmp_path / "r.html", ReportOptions(top=3)).read_text(encoding="utf-8")
    parsed = _Images()
    parsed.feed(text)
    assert parsed.thumbs
    hashes = {hashlib.sha256(p.read_bytes()).hexdigest() for p in (folder / "pictures").iterdir()}
    for a in parsed.thumbs:
        src = str(a["src"])
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) <= MAX_THUMB_BYTES
        with PIL.open(io.BytesIO(png)) as shown:
            assert max(shown.size) == THUMB_PX and shown.size == (THUMB_PX, 60)  # 320x200 scaled, aspect kept
            assert (int(str(a["width"])), int(str(a["height"]))) == shown.size
        assert str(a["title"]).rsplit("sha256 ", 1)[1] in hashes
    # no image path (nor the data folder) in the page; the results hold hashes only
    for where in (text, (run.path / "results.json").read_text(), (run.path / "rewards.jsonl").read_text()):
        assert "pic_" not in where and "pictures" not in where
    assert str(folder) not in text


def test_one_thumbnail_per_image_however_often_shown(image_run):
    _, run = image_run
    report = build_report([run], ReportOptions(top=3))
    shown = [p for x in report.tasks[0].examples for p in (*x.oversensitive.examples, *x.failures.examples)]
    assert {i.sha256 for p in shown for i in p.images} == set(report.thumbnails)
    assert all(len(p.images) == 1 for p in shown)


def test_an_image_without_a_thumbnail_is_its_hash_and_a_note(tmp_path):
    picture = tmp_path / "p.png"
    picture.write_bytes(_png(40, 30, 1))
    image = Image.from_file(picture)
    small = make_thumbnail(image)
    assert small.png is not None and (small.width, small.height) == (40, 30)  # a small image keeps its size
    picture.write_bytes(_png(40, 30, 2))  # changed since it was loaded
    changed = make_thumbnail(image)
    assert changed.png is None and "changed" in changed.note and str(tmp_path) not in changed.note
    broken = make_thumbnail(Image.from_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40))
    assert broken.png is None and "cannot decode" in broken.note
    # the page's budget: the second distinct image is left out once the first spent it
    a, b = Image.from_bytes(_png(200, 200, 3)), Image.from_bytes(_png(200, 200, 4))
    budget = len(make_thumbnail(a).png or b"")
    got = thumbnails([a, a, b], budget=budget)
    assert got[a.sha256].png is not None and got[b.sha256].png is None and "budget" in got[b.sha256].note


def test_without_pillow_the_page_shows_each_image_as_its_hash_and_a_note(image_run, tmp_path, monkeypatch):
    import sys

    _, run = image_run
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL raises ImportError, as where it is not installed
    text = write_report([run], tmp_path / "r.html", ReportOptions(top=3)).read_text(encoding="utf-8")
    parsed = _Images()
    parsed.feed(text)
    assert not parsed.thumbs
    report = build_report([run], ReportOptions(top=3))
    for sha in report.thumbnails:
        assert f"sha256 {sha}: no thumbnail: install Pillow (pip install pillow) to see it" in text


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 400), st.integers(1, 400), st.integers(0, 2**31 - 1))
def test_property_a_thumbnail_of_noise_is_bounded(width, height, seed):
    """Noise compresses worst: its thumbnail still fits MAX_THUMB_BYTES and THUMB_PX a side."""
    noise = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    out = io.BytesIO()
    PIL.fromarray(noise).save(out, format="PNG")
    t = make_thumbnail(Image.from_bytes(out.getvalue()))
    assert t.png is not None and len(t.png) <= MAX_THUMB_BYTES
    assert max(t.width, t.height) <= THUMB_PX and t.width <= width and t.height <= height


@pytest.mark.slow
def test_thumbnails_render_in_a_headless_browser(image_run, tmp_path):
    browser = find_browser()
    _, run = image_run
    page = write_report([run], tmp_path / "r.html", ReportOptions(top=3))
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", "<script>window.addEventListener('load',function(){var i=document.querySelectorAll('img.thumb');"
        "document.title='thumbs '+i.length+' '+Array.prototype.map.call(i,function(x){return x.naturalWidth+'x'+"
        "x.naturalHeight;}).join(',');});</script></body>"), encoding="utf-8")
    profile = tmp_path / "profile"
    dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom",
                          probe.resolve().as_uri()], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HOME": str(profile)})
    title = dom.stdout.split("<title>", 1)[1].split("</title>", 1)[0]
    count, sizes = title.split(" ", 2)[1:]
    assert int(count) > 0 and set(sizes.split(",")) == {f"{THUMB_PX}x60"}, dom.stderr[-2000:]
