"""A reward function that looks at the image: ``rmbench eval --model python:examples/my_vision_rm.py:score``.

rmbench calls ``score`` with a batch of ``(prompt, response)`` tuples and expects one float per
tuple. On a multimodal task the prompt is a list of messages, ``{"role", "content", "images"}``,
each image ``{"sha256", "mime", "source"}`` whose ``source`` is the image's file or a ``data:``
URL. This toy "vision reward model" reads pictures of coloured shapes (rmbench's
``vl_rewardbench_sample``): it finds each shape's colour and kind (circle, square, triangle) and
rewards an answer for what it says that the picture shows, minus what it says that it does not:

* +1 for each colour word the picture shows (its background included), -1 for one it does not;
* +1 for each shape word ("circle", "dots", ...) the picture shows, -1 for one it does not;
* +1 for each count ("three green circles", "2 squares") that is right, -1 for a wrong one;
* +1 for "N sides" where N is the sides of a shape shown or of all of them, -1 otherwise.

It knows nothing of positions or of objects other than shapes, so an answer that puts a shape
on the wrong side, or adds a dog, is not caught: the two answers tie. Needs Pillow and numpy.
Put your own vision reward model here (a VLM with a reward head, a judge).
"""

from __future__ import annotations

import base64
import io
import re
from collections import Counter, deque

import numpy as np
from PIL import Image

COLOURS = {"white": (255, 255, 255), "black": (0, 0, 0), "grey": (128, 128, 128), "red": (220, 30, 30),
           "blue": (30, 70, 220), "green": (30, 160, 60), "yellow": (240, 200, 20), "orange": (245, 130, 20),
           "purple": (130, 50, 170)}
SIDES = {"circle": 0, "square": 4, "triangle": 3}
NUMBERS = {w: k for k, w in enumerate("zero one two three four five six seven eight nine ten".split())}
SHAPE_WORDS = {"circle": "circle", "dot": "circle", "square": "square", "triangle": "triangle"}
_COLOUR = "|".join(COLOURS) + "|gray"
_SHAPE = r"(circle|dot|square|triangle|shape)s?"
_COUNT = re.compile(rf"\b(\d+|{'|'.join(NUMBERS)})\s+(?:({_COLOUR})\s+)?{_SHAPE}\b", re.I)
_SIDES = re.compile(rf"\b(\d+|{'|'.join(NUMBERS)})\s+sides\b", re.I)
_seen: dict[str, tuple[str, list[tuple[str, str]]]] = {}


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS[word.lower()]


def _picture(image: dict) -> Image.Image:
    source = image["source"]
    if source.startswith("data:"):
        return Image.open(io.BytesIO(base64.b64decode(source.partition(",")[2])))
    return Image.open(source)


def read_picture(image: dict) -> tuple[str, list[tuple[str, str]]]:
    """The picture's background colour and its shapes, (colour, kind) each; cached by content hash."""
    if image["sha256"] in _seen:
        return _seen[image["sha256"]]
    with _picture(image) as opened:
        picture = opened.convert("RGB")
    picture.thumbnail((128, 128), Image.Resampling.NEAREST)
    pixels = np.asarray(picture, dtype=np.int64)
    names = list(COLOURS)
    palette = np.array([COLOURS[n] for n in names])
    nearest = ((pixels[:, :, None, :] - palette[None, None]) ** 2).sum(-1).argmin(-1)  # each pixel's colour
    background = Counter(nearest.ravel().tolist()).most_common(1)[0][0]
    height, width = nearest.shape
    done = np.zeros_like(nearest, dtype=bool)
    shapes = []
    for y in range(height):
        for x in range(width):
            if done[y, x] or nearest[y, x] == background:
                continue
            colour, region, todo = nearest[y, x], [], deque([(y, x)])
            done[y, x] = True
            while todo:  # the shape: the 4-connected pixels of one colour
                cy, cx = todo.popleft()
                region.append((cy, cx))
                for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                    if 0 <= ny < height and 0 <= nx < width and not done[ny, nx] and nearest[ny, nx] == colour:
                        done[ny, nx] = True
                        todo.append((ny, nx))
            if len(region) < 6:
                continue  # a stray pixel of an edge
            ys, xs = zip(*region)
            fill = len(region) / ((max(ys) - min(ys) + 1) * (max(xs) - min(xs) + 1))  # of its bounding box
            shapes.append((names[colour], "square" if fill > 0.9 else "circle" if fill > 0.65 else "triangle"))
    _seen[image["sha256"]] = (names[background], shapes)
    return _seen[image["sha256"]]


def reward(background: str, shapes: list[tuple[str, str]], response: str) -> float:
    """What ``response`` says that the picture shows, minus what it says that it does not (module doc)."""
    text = response.lower().replace("gray", "grey")
    colours = {c for c, _ in shapes} | {background}
    kinds = {k for _, k in shapes}
    total = 0
    for word in re.findall(r"[a-z]+", text):
        if word in COLOURS:
            total += 1 if word in colours else -1
        elif word.rstrip("s") in SHAPE_WORDS:
            total += 1 if SHAPE_WORDS[word.rstrip("s")] in kinds else -1
    for number, colour, kind in _COUNT.findall(text):
        kind = SHAPE_WORDS.get(kind.lower())  # None: "shapes", any kind
        count = sum(1 for c, k in shapes if (not colour or c == colour.lower()) and (kind is None or k == kind))
        total += 1 if _number(number) == count else -1
    sides = {SIDES[k] for k in kinds} | {sum(SIDES[k] for _, k in shapes)}
    for number in _SIDES.findall(text):
        total += 1 if _number(number) in sides else -1
    return float(total)


def score(pairs):
    out = []
    for prompt, response in pairs:
        messages = prompt if isinstance(prompt, list) else []
        images = [image for message in messages for image in message.get("images", [])]
        if not images:
            raise ValueError("this reward model reads a picture: the prompt carries no image")
        out.append(reward(*read_picture(images[0]), response))
    return out
