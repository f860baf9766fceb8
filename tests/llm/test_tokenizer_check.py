"""The load-time tokenizer round trip (the real tokenizers: tests/llm/test_llamacpp.py and
tests/llm/test_vllm_cpu.py load the embedded model through it)."""

from __future__ import annotations

import pytest

from thinkbias.llm.tokenizer_check import TokenizerRoundTripError, check_round_trip, round_trip_text


def char_codec():
    return (lambda text: [ord(c) for c in text]), (lambda ids: "".join(chr(i) for i in ids))


def test_the_text_holds_what_tokenizers_get_wrong():
    text = round_trip_text("<think>\n", "</think>")
    assert "  " in text and "\t" in text and any(c.isdigit() for c in text) and "Zürich" in text
    assert "<think> step one </think>" in text and not text.endswith("\n")
    assert "<think>" not in round_trip_text()


def test_a_faithful_tokenizer_passes():
    encode, decode = char_codec()
    check_round_trip("m", encode, decode, "<think>\n", "</think>")


def test_a_tokenizer_that_drops_spaces_stops_the_load_naming_the_model():
    encode, decode = char_codec()
    with pytest.raises(TokenizerRoundTripError) as err:
        check_round_trip("r1-distill-qwen-32b-awq", encode, lambda ids: decode(ids).replace(" ", ""))
    msg = str(err.value)
    assert "r1-distill-qwen-32b-awq" in msg and "first difference at character 3" in msg


def test_a_normalising_tokenizer_is_caught():
    encode, decode = char_codec()
    with pytest.raises(TokenizerRoundTripError, match="Zürich|Zoë"):
        check_round_trip("m", encode, lambda ids: decode(ids).encode("ascii", "replace").decode())
