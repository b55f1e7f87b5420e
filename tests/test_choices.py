"""The closed word sets (rmbench.core.choices): one check, one message naming the option."""

import pytest

from rmbench.core.choices import DEVICES, EPS_UNITS, TRUNCATION_SIDES, choice, dtype_choice
from rmbench.errors import ConfigError


def test_a_word_of_the_set_comes_back_and_another_names_the_option_and_the_words():
    assert choice("raw", EPS_UNITS, "--eps-unit") == "raw"
    with pytest.raises(ConfigError, match=r"^--eps-unit must be 'sigma' or 'raw', got 'std'$"):
        choice("std", EPS_UNITS, "--eps-unit")
    with pytest.raises(ConfigError, match=r"^--device must be one of 'auto', 'cpu', 'cuda', 'mps', got 'tpu'$"):
        choice("tpu", DEVICES, "--device")
    with pytest.raises(ConfigError, match=r"'left' \(keep the response\) or 'right', got None"):
        choice(None, TRUNCATION_SIDES, "--truncation")


def test_short_dtype_spellings_are_spelt_out():
    assert [dtype_choice(x) for x in ("bf16", "fp32", "fp16", "auto", "float16")] == \
        ["bfloat16", "float32", "float16", "auto", "float16"]
    with pytest.raises(ConfigError, match="--dtype must be one of 'auto', 'float32', 'bfloat16', 'float16', got 'int8'"):
        dtype_choice("int8")
