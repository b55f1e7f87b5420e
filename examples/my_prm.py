"""A process reward model for ``rmbench eval --model python-prm:examples/my_prm.py:score``.

rmbench calls ``score`` with a batch of ``(problem, steps)`` tuples (``steps`` a list of strings)
and expects one list of step scores per tuple, one score per step: P(step correct) in [0, 1].
This one checks the arithmetic of each step: a step whose equations (``12 + 7 = 19``, ``3 * 4 = 12``)
all hold scores 0.9, one with a false equation 0.1, a step with none 0.6. Put your own PRM here.
"""

import re

EQUATION = re.compile(r"(-?\d+(?:\.\d+)?(?:\s*[-+*/]\s*-?\d+(?:\.\d+)?)+)\s*=\s*(-?\d+(?:\.\d+)?)")


def step_score(step: str) -> float:
    equations = EQUATION.findall(step.replace("×", "*").replace(",", ""))
    if not equations:
        return 0.6
    for left, right in equations:
        if abs(eval(left, {"__builtins__": {}}) - float(right)) > 1e-6:  # digits and + - * / only
            return 0.1
    return 0.9


def score(items):
    return [[step_score(step) for step in steps] for _, steps in items]
