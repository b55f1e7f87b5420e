"""Writes ties_builtin.jsonl: rmbench's own miniature of RewardBench 2's Ties subset.

Each prompt id K has a ``tied:K`` row (an open question with several equally correct answers)
and a ``ref:K`` row (a narrower question with exactly one correct answer, built from the same
answers), in the RB2 schema. The wrong answers mix plausible mistakes with the generic
distractors RB2 uses (refusals, hedges, clarifying questions), written here in our own words.
Run: python tasks/data/make_ties_builtin.py
"""

import json
from pathlib import Path

GENERIC = [
    "I'd rather not answer that.",
    "Sure! Let me know if you need anything else.",
    "Could you tell me more about what you are looking for first?",
    "That depends on many factors, so there is no single answer.",
]

# (open question, correct answers, plausible wrong answers, narrower question, its one correct answer)
ITEMS = [
    ("Name a primary color of paint.", ["Red", "Blue", "Yellow"], ["Green", "Purple", "Brown"],
     "Name the primary color of paint that is also the color of a clear daytime sky.", "Blue"),
    ("Pick an even number between 1 and 9.", ["2", "4", "6", "8"], ["3", "7", "10", "Nine"],
     "Pick an even number between 1 and 9 that is a perfect cube.", "8"),
    ("Name a day of the weekend.", ["Saturday", "Sunday"], ["Monday", "Friday", "Wednesday"],
     "Name the day of the weekend that is named after Saturn.", "Saturday"),
    ("Name a planet of our solar system that is larger than Earth.", ["Jupiter", "Saturn", "Uranus", "Neptune"],
     ["Mars", "Venus", "Mercury", "The Moon"],
     "Name the planet larger than Earth that is best known for its bright ring system.", "Saturn"),
    ("Name a vowel of the English alphabet (not counting Y).", ["A", "E", "I", "O", "U"], ["B", "K", "Y", "Z"],
     "Name the vowel of the English alphabet (not counting Y) that comes last in alphabetical order.", "U"),
    ("Name a continent.", ["Africa", "Antarctica", "Asia", "Australia", "Europe", "North America", "South America"],
     ["Greenland", "The Pacific", "Siberia", "Atlantis"],
     "Name the continent with the largest land area.", "Asia"),
    ("Give a multiple of 7 between 10 and 50.", ["14", "21", "28", "35", "42", "49"], ["15", "27", "50", "36"],
     "Give a multiple of 7 between 10 and 50 that is also a perfect square.", "49"),
    ("Name a noble gas.", ["Helium", "Neon", "Argon", "Krypton", "Xenon", "Radon"],
     ["Oxygen", "Hydrogen", "Nitrogen", "Chlorine"],
     "Name the noble gas with the smallest atomic number.", "Helium"),
    ("Name a season of the year.", ["Spring", "Summer", "Autumn", "Winter"], ["Monsoon", "December", "Harvest"],
     "Name the season that contains the December solstice in the Northern Hemisphere.", "Winter"),
    ("Name a prime number between 20 and 50.", ["23", "29", "31", "37", "41", "43", "47"],
     ["21", "27", "39", "49", "51"],
     "Name the prime number between 20 and 50 whose digits add up to 10.", "37"),
    ("Name a color of the rainbow.", ["Red", "Orange", "Yellow", "Green", "Blue", "Indigo", "Violet"],
     ["Pink", "Brown", "Black", "White"],
     "Name the color of the rainbow with the longest wavelength.", "Red"),
    ("Name a month that has 31 days.", ["January", "March", "May", "July", "August", "October", "December"],
     ["April", "June", "September", "November", "February"],
     "Name the month with 31 days that comes right after July.", "August"),
    ("Give a two-digit number whose two digits are the same.", ["11", "22", "33", "44", "55", "66", "77", "88", "99"],
     ["10", "12", "100", "121"],
     "Give a two-digit number whose two digits are the same and that is a multiple of 5.", "55"),
    ("Name an odd number between 0 and 10.", ["1", "3", "5", "7", "9"], ["0", "2", "4", "11"],
     "Name an odd number between 0 and 10 that is a perfect square greater than 1.", "9"),
    ("Name a chess piece.", ["King", "Queen", "Rook", "Bishop", "Knight", "Pawn"],
     ["Checker", "Joker", "Ace", "General"],
     "Name the chess piece that moves in an L shape.", "Knight"),
    ("Name a suit of a standard deck of playing cards.", ["Hearts", "Diamonds", "Clubs", "Spades"],
     ["Stars", "Jokers", "Crowns"],
     "Name the black suit of a standard deck whose symbol is a pointed leaf shape.", "Spades"),
    ("Name a letter that appears in the word 'apple'.", ["A", "P", "L", "E"], ["O", "S", "T", "R"],
     "Name the letter that appears twice in the word 'apple'.", "P"),
    ("Name a side of a standard six-sided die that shows an even number.", ["2", "4", "6"], ["1", "3", "5", "7"],
     "Name the side of a standard six-sided die that shows an even prime number.", "2"),
    ("Name a Beatle.", ["John Lennon", "Paul McCartney", "George Harrison", "Ringo Starr"],
     ["Mick Jagger", "Elvis Presley", "Bob Dylan", "Freddie Mercury"],
     "Name the Beatle who was the band's usual drummer.", "Ringo Starr"),
    ("Name a state of matter commonly taught in primary school.", ["Solid", "Liquid", "Gas"],
     ["Plasma soup", "Energy", "Vacuum"],
     "Name the state of matter commonly taught in primary school that keeps its own fixed shape.", "Solid"),
]


def rows():
    for k, (question, correct, wrong, narrow, answer) in enumerate(ITEMS):
        assert answer in correct, (k, answer)
        tied_wrong = wrong + GENERIC
        yield {"id": f"tied:{k}", "prompt": question, "chosen": correct, "rejected": tied_wrong,
               "num_correct": len(correct), "num_incorrect": len(tied_wrong),
               "total_completions": len(correct) + len(tied_wrong), "models": ["rmbench-handwritten"],
               "subset": "Ties"}
        ref_wrong = [c for c in correct if c != answer] + wrong + GENERIC
        yield {"id": f"ref:{k}", "prompt": narrow, "chosen": [answer], "rejected": ref_wrong,
               "num_correct": 1, "num_incorrect": len(ref_wrong),
               "total_completions": 1 + len(ref_wrong), "models": ["rmbench-handwritten"], "subset": "Ties"}


if __name__ == "__main__":
    out = Path(__file__).with_name("ties_builtin.jsonl")
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows()), encoding="utf-8")
    print(f"wrote {out}")
