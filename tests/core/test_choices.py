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
    with pytest.raises(ConfigError,
                       match="--dtype must be one of 'auto', 'float32', 'bfloat16', 'float16', got 'int8'"):
        dtype_choice("int8")


def test_runtime_truncation_and_padding_side_check_their_words_once():
    from rmbench.models import Runtime, Truncation

    assert Runtime(dtype="bf16").dtype == "bfloat16" and Runtime(dtype="fp32", device="cuda:1").device == "cuda:1"
    assert Runtime(device="cpu:0").device == "cpu:0"  # an accelerate rank's device
    assert Runtime() == Runtime(dtype="auto", device="auto")
    with pytest.raises(ConfigError, match=r"^--device must be one of 'auto', 'cpu', 'cuda', 'mps', got 'cuda:x'$"):
        Runtime(device="cuda:x")
    with pytest.raises(ConfigError, match=r"got 'auto:0'$"):
        Runtime(device="auto:0")
    with pytest.raises(ConfigError, match=r"^--dtype must be one of .*, got 'int8'$"):
        Runtime(dtype="int8")
    with pytest.raises(ConfigError, match=r"^--truncation must be 'left' \(keep the response\) or 'right', got 'mid'$"):
        Truncation(100, "mid")  # type: ignore[arg-type]
    pytest.importorskip("torch")
    from rmbench.models.seqcls import SeqClsRM

    with pytest.raises(ConfigError, match=r"^padding_side must be 'left' or 'right', got 'up'$"):
        SeqClsRM("no/such-model", padding_side="up")  # type: ignore[arg-type]
