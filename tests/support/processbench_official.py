"""ProcessBench's critic answer parse, as its own code has it (QwenLM/ProcessBench @ e802463,
code/run_eval.py: ``extract_answer``, lines 12-17, and the prediction of ``main``, lines 92-96,
without voting), copied so that tests compare rmbench's parse with it. Apache-2.0."""

import re


def extract_answer(solution_text: str):
    boxed_pattern = r'\\boxed\{([^}]*)\}'
    matches = re.findall(boxed_pattern, solution_text)
    if matches:
        return matches[-1].strip()
    return None


def critic_prediction(generated_critique):
    pred = extract_answer(generated_critique)
    try:
        pred = int(pred)
    except:  # noqa: E722 - as the official code
        pred = None
    return pred
