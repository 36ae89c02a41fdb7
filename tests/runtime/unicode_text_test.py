import json

import pytest

from ldnet_runtime.unicode_text import lone_surrogate, not_unicode


@pytest.mark.parametrize(
    "texts",
    [
        [],
        ["Kohl", "met", "Chirac"],
        ["Zürich", "İstanbul", "東京", "😀", "e\u0301"],
        [json.loads('"\\ud83d\\ude00"')],  # JSON's pair of halves is one character, 😀
    ],
)
def test_unicode_text_passes(texts):
    assert lone_surrogate(texts) is None


@pytest.mark.parametrize(
    "texts, item, expected",
    [
        (["Bonn", "\ud800"], "token", "token 1's character 0 is U+D800, a lone surrogate"),
        (["Kö", "ab\udfffc", "\ud800"], "token", "token 1's character 2 is U+DFFF"),
        # the two halves of 😀 in a row are still two lone surrogates (no UTF-8 for either)
        (["\ud83d\ude00"], "token", "token 0's character 0 is U+D83D"),
        (["a\ud83d", "\ude00"], "token", "token 0's character 1 is U+D83D"),
        (["Kohl \udc00 met"], None, "character 5 is U+DC00, a lone surrogate"),
    ],
)
def test_a_lone_surrogate_is_found_where_it_is(texts, item, expected):
    found = lone_surrogate(texts, item=item)
    assert found.startswith(expected)
    with pytest.raises(UnicodeEncodeError):
        "".join(texts).encode("utf-8")


def test_the_refusal_names_the_key_and_the_token():
    assert not_unicode("tokens", ["Kohl", "met"]) is None
    assert not_unicode("tokens", ["Bonn", "\ud800"]) == (
        '"tokens" must be Unicode text, but token 1\'s character 0 is U+D800, a lone surrogate '
        "(half of a UTF-16 surrogate pair, without its other half)"
    )
    assert not_unicode("hypothesis", ["ab\udc00"]).startswith(
        '"hypothesis" must be Unicode text, but character 2 is U+DC00'
    )
