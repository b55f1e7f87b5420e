"""A reward function for ``rmbench eval --model python:examples/my_rm.py:score``.

rmbench calls ``score`` with a batch of ``(prompt, response)`` tuples (the prompt is a string,
or a list of ``{"role", "content"}`` messages) and expects one float per tuple, in order. This
one prefers shorter answers; put your own model's scoring here.
"""


def score(pairs):
    return [-float(len(response)) for _, response in pairs]
