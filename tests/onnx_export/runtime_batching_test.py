"""
`ldnet_runtime.Tagger` puts every sentence's output back in its place whatever the bucketing:
a batch tagged with any group size and padded-token budget (sentences and padded tokens per
graph run, after sorting by length) gives what tagging each sentence alone gives, in input order.
"""

import pytest

from ldnet_runtime import Tagger

SENTENCES = [
    "EU rejects German call to boycott British lamb .",
    "Peter Blackburn",
    "BRUSSELS 1996-08-22",
    "The European Commission said on Thursday it disagreed with German advice to consumers to "
    "shun British lamb until scientists determine whether mad cow disease can be transmitted "
    "to sheep .",
    "Germany 's representative to the European Union 's veterinary committee Werner Zwingmann "
    "said on Wednesday consumers should buy sheepmeat from countries other than Britain .",
    "Rare Hendrix song draft sells for almost $ 17,000 .",
    "LONDON",
    "A",
    "Japan coach Shu Kamo said : ' ' The Syrian own goal proved lucky for us .",
    "",
]


@pytest.mark.parametrize(
    "group_size, group_tokens", [(1, None), (2, None), (3, 10), (8, 40), (64, None), (32, 160)]
)
def test_batches_keep_the_input_order(fixture_exports, group_size, group_tokens):
    inputs = [{"tokens": sentence.split()} for sentence in SENTENCES] * 3
    alone = Tagger(fixture_exports["ner_ldnet_pruned"], threads=1)
    expected = [alone.predict_json(json_dict) for json_dict in inputs]
    groups = dict(group_size=group_size, group_tokens=group_tokens)
    tagger = Tagger(fixture_exports["ner_ldnet_pruned"], threads=1, **groups)
    assert tagger.predict_batch_json(inputs) == expected
    assert [output["tokens"] for output in expected] == [x["tokens"] for x in inputs]
