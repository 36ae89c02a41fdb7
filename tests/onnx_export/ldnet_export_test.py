"""
`allennlp ldnet-export` + `ldnet_runtime`: the runtime's output equals the `ldnet_tagger`
predictor's (tokens, tags and spans, as `allennlp predict` writes them) on the fixtures' LD-Net
taggers (the recorded predictions of the fixture archives, raw sentences through spaCy,
pre-tokenised batches with unknown words and characters) and on a tagger with GloVe (words in
no training file); the exported graph is the tagger's network, with the LMs' sentence
boundaries as the states they leave or as input positions (`--lm-boundary-positions`, which
predicts as the predictor too); bad archives, output folders, export folders and inputs are
refused with what to do.
"""

import argparse
import json
import shutil

import numpy as np
import pytest
import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Token, Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.nn.util import get_text_field_mask
from allennlp.predictors import Predictor

from ldnet_allennlp.onnx_export.commands.ldnet_export import export_from_args
from ldnet_allennlp.onnx_export.emissions import EmissionNetwork
from ldnet_allennlp.onnx_export.exporter import _format_version, export_tagger
from ldnet_runtime import Tagger
from ldnet_runtime.export_format import ExportFormatError
from ldnet_runtime.glove import GloveError
from ldnet_runtime.exported_tagger import InputError
from tests.onnx_export.conftest import FIXTURE_ARCHIVES, FIXTURE_TAGGERS

EXPECTED = json.loads((FIXTURE_ARCHIVES / "expected_predictions.json").read_text(encoding="utf-8"))

SENTENCES = [
    "U.S. President Bill Clinton didn't visit   Brussels on Monday, officials said.",
    "E-mail john.smith@example.com or see https://example.com/a?b=1 -- now!",
    "Zxqwv's CEO, Mr. O'Neil, said: \"No.\" (Reuters)",
    "Müller traf Señor Ñandú in Zürich; 北京 🙂 $3.5bn 1,000.",
    "Line one.\nLine two\twith a tab.",
    "She met Peter\n\nBlackburn said .",
    "Bonn\r\n \r\nParis\u2029Reuters\n\n\n",
    "\n\n",
    "",
    "   ",
    "Reuters",
]
TOKENS = [
    ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."],
    ["Pneumonoultramicroscopicsilicovolcanoconiosis", "struck", "Llanfairpwllgwyngyll", "."],
    ["@@UNKNOWN@@", "@@unknown@@", "<S>", "</S>", "北京", "🙂", "x"],
    ["Peter"],
    "the of and to in a is that for it as was with be by on not he I this".split() * 3,
]


def predictor_for(archive_file) -> Predictor:
    return Predictor.from_archive(load_archive(str(archive_file)), "ldnet_tagger")


@pytest.mark.parametrize("name", FIXTURE_TAGGERS)
def test_the_runtime_gives_the_recorded_predictions(fixture_exports, name):
    entry = EXPECTED["archives"][name]
    tagger = Tagger(fixture_exports[name], threads=1)
    expected = [output["predictor"] for output in entry["outputs"]]
    assert [tagger.predict_json(inputs) for inputs in entry["inputs"]] == expected
    assert tagger.predict_batch_json(entry["inputs"]) == expected


@pytest.mark.parametrize("name", FIXTURE_TAGGERS)
def test_the_runtime_predicts_as_the_predictor(fixture_exports, name):
    predictor = predictor_for(FIXTURE_ARCHIVES / f"{name}.tar.gz")
    tagger = Tagger(fixture_exports[name], threads=1)
    inputs = [{"sentence": s} for s in SENTENCES] + [{"tokens": t} for t in TOKENS]
    expected = predictor.predict_batch_json(inputs)
    assert tagger.predict_batch_json(inputs) == expected
    assert [tagger.predict_json(json_dict) for json_dict in inputs] == expected
    assert [predictor.dump_line(output) for output in expected] == [
        json.dumps(output) + "\n" for output in tagger.predict_batch_json(inputs)
    ]


def test_each_paragraph_is_tagged_alone(fixture_exports):
    first, second = "She met Peter", "Blackburn said ."
    runtime = Tagger(fixture_exports["ner_ldnet_pruned"], threads=1)
    predictor = predictor_for(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    for tagger in (runtime, predictor):
        alone = [tagger.predict_json({"sentence": text}) for text in (first, second)]
        split = tagger.predict_json({"sentence": f"{first}\n \n{second}"})
        joined = tagger.predict_json({"sentence": f"{first}\n{second}"})  # one line break
        assert split["tokens"] == joined["tokens"] == alone[0]["tokens"] + alone[1]["tokens"]
        assert split["tags"] == alone[0]["tags"] + alone[1]["tags"]
        assert joined["tags"] != split["tags"]  # on this tagger, the cut changes the tags
        shift = len(alone[0]["tokens"])
        assert split["spans"] == alone[0]["spans"] + [
            {**span, "start": span["start"] + shift, "end": span["end"] + shift}
            for span in alone[1]["spans"]
        ]
    assert runtime.predict_json({"sentence": "\n\n \u2029"}) == {
        "tokens": [],
        "tags": [],
        "spans": [],
    }


def test_a_glove_tagger_tags_words_of_no_training_file_as_the_predictor(glove_tagger):
    train_text = (FIXTURE_ARCHIVES.parent / "tagging" / "conll2003_train.txt").read_text().lower()
    assert "zanzibar" not in train_text and "lyon" not in train_text
    predictor = predictor_for(glove_tagger["archive"])
    tagger = Tagger(glove_tagger["export"], threads=1)
    inputs = [{"tokens": ["Zanzibar", "is", "not", "Lyon", "."]}] + [
        {"sentence": s} for s in SENTENCES
    ]
    assert tagger.predict_batch_json(inputs) == predictor.predict_batch_json(inputs)
    # the graph's GloVe input: the package's row for "zanzibar", the trained unknown vector
    # for a word GloVe lacks, zeros at padding
    lookup = tagger._indexers[0][1].lookup
    vectors = lookup.vectors([["Zanzibar", "Qqxzvw"], ["x"]], 3)
    assert np.array_equal(vectors[0, 0], lookup.matrix[lookup.rows(["zanzibar"])[0]])
    unknown = load_archive(str(glove_tagger["archive"])).model.text_field_embedder
    unknown = unknown.token_embedder_glove.unknown_vector.detach().numpy()
    assert np.array_equal(vectors[0, 1], unknown) and unknown.any()
    assert not vectors[1, 1:].any()


@pytest.mark.parametrize("boundary_states", [True, False])
@pytest.mark.parametrize("name", FIXTURE_TAGGERS + ["glove"])
def test_the_emission_network_is_the_taggers_network(
    name, boundary_states, glove_tagger, one_thread_session
):
    archive_file = (
        glove_tagger["archive"] if name == "glove" else FIXTURE_ARCHIVES / f"{name}.tar.gz"
    )
    archive = load_archive(str(archive_file))
    model, reader = archive.model.eval(), archive.validation_dataset_reader
    instances = []
    for tokens in TOKENS:
        instance = reader.text_to_instance([Token(t) for t in tokens])
        reader.apply_token_indexers(instance)
        instances.append(instance)
    batch = Batch(instances)
    batch.index_instances(model.vocab)
    text = batch.as_tensor_dict()["tokens"]
    network = EmissionNetwork.from_tagger(model, boundary_states=boundary_states)
    with torch.no_grad():
        expected = model(tokens=text)["logits"]
        mask = get_text_field_mask(text)
        inputs = []
        for key in network.input_keys:
            (tensor,) = text[key].values()
            if network.input_kinds[key] == "glove_embedding":
                tensor = getattr(model.text_field_embedder, f"token_embedder_{key}")(tensor)
            inputs.append(tensor)
        actual = network(mask, *inputs)
    assert torch.allclose(actual[mask], expected[mask], atol=1e-5, rtol=0)


def test_lm_boundary_positions_put_the_boundaries_in_the_lm_input(fixture_exports, tmp_path):
    """`--lm-boundary-positions`: the LMs' sentence boundaries are two positions of their input
    (the `<S>` and `</S>` vectors in `tagger.json`) instead of the states they leave (the
    default: no boundary rows); both predict as the predictor. (Both folders are
    `format_version` 4: the fixture tagger's character CNN is a graph of words.)"""
    name = "ner_ldnet_pruned"
    output_dir = tmp_path / "positions"
    archive = str(FIXTURE_ARCHIVES / f"{name}.tar.gz")
    export_from_args(
        argparse.Namespace(
            archive_file=archive, output_dir=str(output_dir), lm_boundary_positions=True
        )
    )
    for folder, boundaries in ((output_dir, True), (fixture_exports[name], False)):
        tagger_json = json.loads((folder / "tagger.json").read_text())
        (lm,) = [spec for spec in tagger_json["inputs"] if spec["name"] == "lm"]
        assert tagger_json["format_version"] == 4
        assert ("sentence_boundaries" in lm["indexer"]) == boundaries
    inputs = [{"sentence": s} for s in SENTENCES] + [{"tokens": t} for t in TOKENS]
    expected = predictor_for(archive).predict_batch_json(inputs)
    assert Tagger(output_dir, threads=1).predict_batch_json(inputs) == expected


@pytest.mark.parametrize(
    "indexers, int4_tables, version",
    [
        ([{"type": "single_id"}], False, 1),
        ([{"type": "word_table"}], True, 2),
        ([{"type": "word_table", "sentence_boundaries": [[0.0], [0.0]]}], False, 3),
        ([{"type": "word_table", "sentence_boundaries": [[0.0], [0.0]]}], True, 3),
        ([{"type": "character_table"}, {"type": "word_table"}], False, 4),
        ([{"type": "character_table"}, {"type": "word_table", "sentence_boundaries": []}], True, 4),
    ],
)
def test_a_folder_is_the_newest_format_version_one_of_its_parts_needs(
    indexers, int4_tables, version
):
    inputs = [{"name": f"input{i}", "indexer": indexer} for i, indexer in enumerate(indexers)]
    assert _format_version(inputs, int4_tables) == version


def test_the_command_writes_the_folder_and_says_how_to_use_it(tmp_path, capsys):
    output_dir = tmp_path / "new" / "ner"
    archive = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    export_from_args(argparse.Namespace(archive_file=archive, output_dir=str(output_dir)))
    printed = capsys.readouterr().out
    assert "same tags" in printed and f"wrote {output_dir}" in printed
    assert sorted(path.name for path in output_dir.iterdir()) == [
        "crf.json",
        "model.onnx",
        "tagger.json",
        "tokenizer.json",
        "vocabularies.json",
        "word_network_token_characters.onnx",
        "word_tables.npz",
    ]
    tagger_json = json.loads((output_dir / "tagger.json").read_text())
    assert tagger_json["check"]["same_tags"] and tagger_json["made_by"]["archive"] == archive
    assert [spec["name"] for spec in tagger_json["inputs"]] == ["lm", "token_characters", "tokens"]
    crf = json.loads((output_dir / "crf.json").read_text())
    crf_model = load_archive(archive).model.crf
    assert np.array_equal(np.array(crf["transitions"], np.float32), crf_model.transitions.detach())
    assert np.array_equal(np.array(crf["constraint_mask"]), crf_model._constraint_mask.long())
    assert output_dir.stat().st_mode & 0o755 == 0o755
    assert list(tmp_path.iterdir()) == [tmp_path / "new"]  # no partial folder left


def test_refusals_leave_nothing_behind(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"not an archive")
    pruned = str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    cases = [
        (
            str(FIXTURE_ARCHIVES / "lm_forward.tar.gz"),
            "out1",
            "holds a DenseLanguageModel, not a CRF tagger",
        ),
        (str(FIXTURE_ARCHIVES / "student_sst2.tar.gz"), "out2", "not a CRF tagger"),
        (pruned, "full", "exists and is not empty"),
        (pruned, "a_file", "exists and is not a folder"),
        (str(tmp_path / "missing.tar.gz"), "out3", "no such archive file"),
        (str(garbage), "out4", "could not be loaded as an AllenNLP model archive"),
        ("pretrained:no_such_model", "out5", "no pretrained model named 'no_such_model'"),
    ]
    for archive, output, message in cases:
        with pytest.raises(ConfigurationError, match=message):
            export_tagger(archive, str(tmp_path / output))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a_file", "full", "garbage.tar.gz"]
    assert [path.name for path in full.iterdir()] == ["keep.txt"]


def tiny_tagger(characters: dict, encoder: dict) -> Model:
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["O", "U-PER"], "labels")
    embedders = {"tokens": {"type": "embedding", "embedding_dim": 4}, "chars": characters}
    params = {
        "type": "ldnet_crf_tagger",
        "text_field_embedder": {"token_embedders": embedders},
        "encoder": encoder,
    }
    return Model.from_params(vocab=vocab, params=Params(params))


@pytest.mark.parametrize(
    "characters, encoder, message",
    [
        (
            {
                "type": "character_encoding",
                "embedding": {"embedding_dim": 3, "vocab_namespace": "token_characters"},
                "encoder": {"type": "lstm", "input_size": 3, "hidden_size": 2},
            },
            {"type": "lstm", "input_size": 6, "hidden_size": 2},
            "a character_encoding with a LstmSeq2VecEncoder encoder; ldnet-export exports the "
            "`cnn` encoder only",
        ),
        (
            {"type": "embedding", "embedding_dim": 2},
            {"type": "gru", "input_size": 6, "hidden_size": 2},
            "is a GruSeq2SeqEncoder over GRU; ldnet-export exports the `lstm` encoder",
        ),
        (
            {"type": "pass_through", "hidden_dim": 2},
            {"type": "lstm", "input_size": 6, "hidden_size": 2},
            "text_field_embedder.chars is a PassThroughTokenEmbedder: ldnet-export exports",
        ),
    ],
)
def test_unsupported_parts_are_named(characters, encoder, message):
    with pytest.raises(ConfigurationError, match=message):
        EmissionNetwork.from_tagger(tiny_tagger(characters, encoder))


def test_bad_export_folders_are_refused(fixture_exports, glove_tagger, tmp_path):
    with pytest.raises(ExportFormatError, match="is not a folder"):
        Tagger(tmp_path / "nowhere")
    partial = tmp_path / "partial"
    shutil.copytree(fixture_exports["ner_ldnet_pruned"], partial)
    (partial / "crf.json").unlink()
    with pytest.raises(ExportFormatError, match="lacks crf.json"):
        Tagger(partial)
    newer = tmp_path / "newer"
    shutil.copytree(fixture_exports["ner_ldnet_pruned"], newer)
    tagger_json = json.loads((newer / "tagger.json").read_text())
    tagger_json["format_version"] = 99
    (newer / "tagger.json").write_text(json.dumps(tagger_json))
    with pytest.raises(ExportFormatError, match="version 99; this runtime reads"):
        Tagger(newer)
    other_glove = tmp_path / "other_glove"
    shutil.copytree(glove_tagger["export"], other_glove)
    tagger_json = json.loads((other_glove / "tagger.json").read_text())
    tagger_json["inputs"][0]["indexer"]["fingerprint"][5] += 0.5  # trained on other vectors
    (other_glove / "tagger.json").write_text(json.dumps(tagger_json))
    with pytest.raises(GloveError, match="holds other words or vectors"):
        Tagger(other_glove)


@pytest.mark.parametrize(
    "bad",
    [
        {"tokens": ["fine", ""]},
        {"tokens": "not a list"},
        {"sentence": 3},
        {"text": "no key"},
        ["not", "an", "object"],
        {"tokens": ["Bonn", "\ud800"]},  # a lone surrogate, as json.loads reads "\ud800"
        {"sentence": "Kohl \udc00 met"},
    ],
)
def test_bad_inputs_get_the_predictors_message(fixture_exports, bad):
    predictor = predictor_for(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")
    with pytest.raises(ConfigurationError) as expected:
        predictor.predict_json(bad)
    with pytest.raises(InputError) as actual:
        Tagger(fixture_exports["ner_ldnet_pruned"]).predict_json(bad)
    assert str(actual.value) == str(expected.value)
