"""An LLM judge's protocol: a Prometheus-style rubric graded "[RESULT] N" on 1-5."""

import re

from rmbench.plugins import JudgeProtocol

RUBRIC = "###Instruction: {question}\n###Response: {answer}\n###Score Rubrics: ...\nEnd with \"[RESULT] N\" (1-5)."
RESULT = re.compile(r"\[RESULT\]\s*(\d+)")


def messages(question, answers, subset):        # one answer in mode rating; A, B pairwise; A-D fourway
    return (("system", "You are a fair judge assistant."),
            ("user", RUBRIC.format(question=question, answer=answers[0])))


def parse(text):                                # the verdict in a reply, or None
    found = RESULT.findall(text or "")
    return int(found[-1]) if found else None


PROMETHEUS = JudgeProtocol("prometheus", "rating", messages, parse, text=RUBRIC, scale=(1, 5), max_tokens=512)
