"""Writes vl_rewardbench_sample/: rmbench's own miniature of VL-RewardBench, 10 items in its format.

Every item is an image drawn here (coloured shapes on a plain background: counts, colours,
positions), a question about it, and two answers: the one a careful reader of the image gives
(ranked first by ``human_ranking``) and one that hallucinates (an object, a colour or a count the
image does not show) or reasons wrongly. The ids carry the prefixes VL-RewardBench's ``cal.py``
maps to its datasets, so the official groups exist: general (vlfeedback, wildvision-battle),
hallucination (rlaif-v, rlhf-v, povid) and reasoning (mathverse, mmmu). Nothing is copied from
the benchmark: the rows only follow its schema (``data.jsonl``: id, query, response, image_path,
human_ranking, models, query_source, meta; images at ``FOLDER/<image_path>``).

It also writes ``examples/vl_rewardbench/``, six more items in the same format that the
multimodal tutorial (docs/tutorials/multimodal.md) reads as "your own folder" with
``--data vl_rewardbench=examples/vl_rewardbench``: their questions ask what the tutorial's toy
reward model (examples/my_vision_rm.py) cannot see (positions, touching shapes, an outline).

The images are 96 x 72 palette PNGs of a few hundred bytes each. Another Pillow version may
compress them to other bytes (the same pixels): the task's fingerprint follows the bytes, so bump
``version`` in tasks/vl_rewardbench_sample.yaml whenever these files are rewritten.
Run: python tasks/data/make_vl_rewardbench_sample.py   (needs Pillow)
"""

import json
from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent / "vl_rewardbench_sample"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "vl_rewardbench"
SIZE = (96, 72)
COLOURS = {"red": (220, 30, 30), "blue": (30, 70, 220), "green": (30, 160, 60), "yellow": (240, 200, 20),
           "orange": (245, 130, 20), "purple": (130, 50, 170), "black": (0, 0, 0)}


def shape(draw: ImageDraw.ImageDraw, kind: str, colour: str, x: int, y: int, r: int = 10) -> None:
    """A shape of ``kind`` centred at (x, y), ``r`` pixels from the centre to its edge."""
    fill = COLOURS[colour]
    if kind == "circle":
        draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
    elif kind == "square":
        draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
    elif kind == "ring":  # a circle's outline only
        draw.ellipse((x - r, y - r, x + r, y + r), outline=fill, width=2)
    elif kind == "triangle":
        draw.polygon(((x, y - r), (x - r, y + r), (x + r, y + r)), fill=fill)
    else:
        raise ValueError(kind)


# id (its prefix picks the dataset), the shapes (kind, colour, x, y), the question, the answer that
# reads the image right, the one that does not, and which comes first in the row
ITEMS = [
    ("vlfeedback_s1", [("circle", "red", 24, 36), ("square", "blue", 72, 36)],
     "Describe the image.",
     "A red circle on the left and a blue square on the right, on a white background.",
     "A blue circle on the left and a red triangle on the right, on a grey background.", 0),
    ("wildvision-battle_s2", [("triangle", "green", 48, 20), ("circle", "yellow", 48, 54)],
     "Which shape is at the top of the picture, and what colour is it?",
     "The shape at the top is a green triangle; a yellow circle sits below it.",
     "The shape at the top is a yellow circle; a green square sits below it.", 1),
    ("vlfeedback_s3", [("square", "purple", 20, 20), ("square", "purple", 76, 52)],
     "Where are the squares?",
     "There are two purple squares: one in the top-left corner and one in the bottom-right corner.",
     "There is one purple square, in the centre of the image.", 0),
    ("RLAIF-V_s4", [("circle", "green", 20, 36), ("circle", "green", 48, 36), ("circle", "green", 76, 36)],
     "How many circles are in the picture?",
     "There are three green circles in a row.",
     "There are three green circles in a row and a small red square in the corner.", 1),
    ("RLHF-V_s5", [("square", "orange", 30, 36), ("square", "blue", 66, 36)],
     "Describe the picture in detail.",
     "Two squares side by side on a white background: an orange one on the left and a blue one on the right.",
     "Two squares side by side on a white background, an orange one and a blue one, with a small dog "
     "sitting between them.", 0),
    ("hallucination_pair_s6", [("triangle", "orange", 48, 36)],
     "What colour is the triangle?",
     "The triangle is orange.",
     "The triangle is purple.", 1),
    ("hallucination_pair_s7", [("square", "red", 30, 36), ("square", "black", 66, 36)],
     "Is there a circle in the image?",
     "No. The image shows only two squares, a red one and a black one.",
     "Yes, there is a red circle on the left, next to a black square.", 0),
    ("mathverse_s8", [("triangle", "blue", 28, 36), ("square", "red", 68, 36)],
     "How many sides do the shapes in the image have altogether?",
     "A triangle has 3 sides and a square has 4, so together they have 3 + 4 = 7 sides.",
     "A triangle has 3 sides and a square has 4, so together they have 3 + 4 = 8 sides.", 1),
    ("mmmu-s9", [("circle", "black", 16 + 16 * k, 36, 6) for k in range(5)],
     "Each dot is worth 2 points. How many points does the image show?",
     "There are 5 dots, and 5 x 2 = 10 points.",
     "There are 4 dots, and 4 x 2 = 8 points.", 0),
    ("mathverse_s10", [("circle", "green", 16, 20, 8), ("circle", "green", 40, 20, 8), ("circle", "green", 64, 20, 8),
                       ("circle", "green", 88, 20, 7), ("square", "blue", 28, 54, 8), ("square", "blue", 68, 54, 8)],
     "Are there more circles or more squares in the image, and by how many?",
     "There are 4 circles and 2 squares, so there are 2 more circles than squares.",
     "There are 2 circles and 4 squares, so there are 2 more squares than circles.", 1),
]


EXAMPLE_ITEMS = [
    ("wildvision-battle_e1", [("circle", "blue", 24, 36), ("square", "red", 72, 36)],
     "Is the red square to the left or to the right of the blue circle?",
     "The red square is to the right of the blue circle.",
     "The red square is to the left of the blue circle.", 0),
    ("vlfeedback_e2", [("square", "green", 38, 36), ("square", "green", 58, 36)],
     "How many green squares are there?",
     "There are two green squares, touching side by side.",
     "There is one green square.", 1),
    ("RLAIF-V_e3", [("circle", "red", 30, 36), ("circle", "yellow", 66, 36)],
     "What colours are the circles?",
     "One circle is red and the other is yellow.",
     "One circle is red and the other is green.", 0),
    ("hallucination_pair_e4", [("triangle", "orange", 20 + 28 * k, 36) for k in range(3)],
     "How many triangles are in the picture?",
     "There are three orange triangles.",
     "There are four orange triangles.", 1),
    ("mathverse_e5", [("triangle", "blue", 20, 36), ("triangle", "blue", 48, 36), ("square", "purple", 76, 36)],
     "What is the total number of sides of all the shapes?",
     "Two triangles and a square: 3 + 3 + 4 = 10 sides.",
     "A triangle and a square: 3 + 4 = 7 sides.", 0),
    ("mmmu-e6", [("ring", "black", 48, 36, 24)],
     "What shape is drawn, and is it filled?",
     "It is the outline of a circle, drawn in black and not filled.",
     "It is a black triangle, filled in.", 1),
]


def draw(shapes) -> Image.Image:
    picture = Image.new("RGB", SIZE, (255, 255, 255))
    pen = ImageDraw.Draw(picture)
    for s in shapes:
        shape(pen, *s)
    return picture.quantize(16)


def write(folder: Path, items) -> None:
    """``folder/data.jsonl`` and ``folder/images/ID.png`` of ``items``, in VL-RewardBench's format."""
    (folder / "images").mkdir(parents=True, exist_ok=True)
    rows = []
    for item, shapes, query, right, wrong, right_at in items:
        name = f"images/{item}.png"
        draw(shapes).save(folder / name, format="PNG", optimize=True)
        responses = [right, wrong] if right_at == 0 else [wrong, right]
        rows.append({"id": item, "query": query, "response": responses, "image_path": name,
                     "human_ranking": [0, 1] if right_at == 0 else [1, 0],
                     "models": ["reads-the-image", "hallucinates"] if right_at == 0 else
                     ["hallucinates", "reads-the-image"],
                     "query_source": "rmbench", "meta": {"written_by": "rmbench", "shapes": len(shapes)}})
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    write(HERE, ITEMS)
    write(EXAMPLES, EXAMPLE_ITEMS)


if __name__ == "__main__":
    main()
