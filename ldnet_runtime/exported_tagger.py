"""
`Tagger`: the `ldnet_tagger` predictor of an exported tagger, with numpy and onnxruntime.

The same input and output as the predictor under `allennlp predict`:

- input: `{"sentence": "raw text"}` (tokenised as the predictor's spaCy model does: by
  `rule_tokenizer.RuleTokenizer` from the export's `tokenizer.json`, without spaCy, or by spaCy
  for an export without it; each paragraph a sequence of its own, `tokenizer.paragraphs`) or
  `{"tokens": ["pre", "tokenised"]}`; bad input is an `InputError` (a `ValueError`) with the
  predictor's message;
- output: `{"tokens": [...], "tags": [...], "spans": [{"type", "start", "end", "text"}]}`, `end`
  inclusive, spans in order; an empty sentence gives empty lists.

A batch is indexed (`indexing.py`: one dict lookup per token finds the rows of every word-level
input, `TokenRows`, and each input is one `take` of those rows), run through the graph
(`model.onnx`: the emissions; in groups of sentences of similar length) and decoded by the
constrained Viterbi (`viterbi.py`), so the tags are AllenNLP's as long as the emissions are
(onnxruntime's and torch's floats agree to about 1e-5; the exporter checks them).
"""

from itertools import repeat
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import onnxruntime

from ldnet_runtime.export_format import (
    LOGITS_OUTPUT,
    MASK_INPUT,
    TOKENIZER_FILE,
    ExportFormatError,
    read_export,
    read_word_tables,
)
from ldnet_runtime.indexing import TokenRows, build_indexer
from ldnet_runtime.rule_tokenizer import RuleTokenizer
from ldnet_runtime.shipped_exports import export_dir_of, is_export_dir, is_shipped_name
from ldnet_runtime.spans import SPAN_DECODERS
from ldnet_runtime.tokenizer import SpacyTokenizer, paragraphs
from ldnet_runtime.unicode_text import not_unicode
from ldnet_runtime.viterbi import viterbi_tags

JsonDict = Dict[str, Any]
# a run of the graph (see `Tagger.tag_tokens`): at most GROUP_SIZE sentences and GROUP_TOKENS
# padded tokens (its sentences times the longest one's length)
GROUP_SIZE = 32
GROUP_TOKENS = 160


def session_options(threads: Optional[int] = None) -> onnxruntime.SessionOptions:
    """
    The runtime's onnxruntime session options: every graph optimisation
    (`ORT_ENABLE_ALL`: constant folding, node fusions, layout changes), nodes run one after
    another (`ORT_SEQUENTIAL`, one inter-op thread: the graph is a chain), and `threads`
    intra-op threads (default: onnxruntime's, one per core).

    # Parameters

    threads : `int`, optional
        onnxruntime's intra-op threads.
    """
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 1
    if threads is not None:
        options.intra_op_num_threads = threads
    return options


def length_buckets(
    lengths: Sequence[int], size: int, tokens: Optional[int] = None
) -> List[List[int]]:
    """
    The indices of a batch's sentences in buckets of similar length: sorted by length (equal
    lengths in input order), then cut into consecutive buckets of up to `size` sentences and,
    with `tokens`, up to `tokens` padded tokens (the bucket's sentences times its longest
    one's length; a sentence longer than `tokens` is a bucket of its own). Every index is in
    exactly one bucket; the caller puts each result back at its index.

    # Parameters

    lengths : `Sequence[int]`
        The sentences' lengths, in input order.
    size : `int`
        The most sentences per bucket (at least 1).
    tokens : `int`, optional
        The most padded tokens per bucket.
    """
    if size < 1:
        raise ValueError(f"a bucket holds at least 1 sentence, not {size}")
    buckets: List[List[int]] = []
    bucket: List[int] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        full = len(bucket) == size  # (the sentence added is the bucket's longest)
        if full or (tokens is not None and bucket and (len(bucket) + 1) * lengths[index] > tokens):
            buckets.append(bucket)
            bucket = []
        bucket.append(index)
    return buckets + [bucket] if bucket else buckets


class InputError(ValueError):
    """Input the predictor refuses too; the message quotes it."""


class Tagger:
    """
    An exported tagger, ready to predict.

    # Parameters

    export_dir : `Union[str, Path]`
        The folder `allennlp ldnet-export` wrote, or a shipped tagger's name (`"ner_pruned"`):
        its shipped runtime export or its export in the cache (`shipped_exports.export_dir_of`).
    threads : `int`, optional
        onnxruntime's intra-op threads (default: onnxruntime's, one per core).
    group_size : `int`, optional (default = `GROUP_SIZE`)
        The most sentences per run of the graph (`length_buckets`).
    group_tokens : `int`, optional (default = `GROUP_TOKENS`)
        The most padded tokens per run of the graph (`length_buckets`; None: no such limit).
    """

    def __init__(
        self,
        export_dir: Union[str, Path],
        threads: Optional[int] = None,
        group_size: int = GROUP_SIZE,
        group_tokens: Optional[int] = GROUP_TOKENS,
    ) -> None:
        if not is_export_dir(export_dir) and is_shipped_name(export_dir):
            export_dir = export_dir_of(export_dir)
        export = read_export(export_dir)
        self.export_dir = Path(export_dir)
        tagger, crf = export["tagger"], export["crf"]
        self.tags: List[str] = list(crf["tags"])
        self.transitions = np.asarray(crf["viterbi_transitions"], dtype=np.float32)
        states = len(self.tags) + 2
        if self.transitions.shape != (states, states):
            raise ExportFormatError(
                f"{self.export_dir}: crf.json's viterbi_transitions are "
                f"{self.transitions.shape}, not ({states}, {states}) for {len(self.tags)} tags."
            )
        self.label_encoding: str = tagger["label_encoding"]
        # how the graph was quantised to int8 and its check (`tagger.json`'s `int8`), or None
        self.int8: Optional[Dict[str, Any]] = tagger.get("int8")
        self.spacy_model: str = tagger["spacy_model"]
        self._tags_to_spans = SPAN_DECODERS[self.label_encoding]
        tables = read_word_tables(self.export_dir, tagger)

        def network(file_name: str):
            session = onnxruntime.InferenceSession(
                str(self.export_dir / file_name),
                session_options(threads),
                providers=["CPUExecutionProvider"],
            )
            (graph_input,) = session.get_inputs()
            name = graph_input.name
            if len(graph_input.shape) == 2:  # (words, ...) -> (words, dim)
                return lambda array: session.run(None, {name: array})[0]
            # a graph of (1, words, ...) -> (1, words, dim)
            return lambda array: session.run(None, {name: array[None]})[0][0]

        self._indexers = [
            (
                spec["name"],
                build_indexer(
                    spec["indexer"], export["vocabularies"], self.export_dir, tables, network
                ),
            )
            for spec in tagger["inputs"]
        ]
        # the word-level inputs' rows of each token, with one dict lookup per token
        self._word_level = [
            name for name, indexer in self._indexers if hasattr(indexer, "token_rows")
        ]
        self._token_rows = TokenRows(
            [indexer for name, indexer in self._indexers if name in self._word_level]
        )
        self.group_size, self.group_tokens = group_size, group_tokens
        self._ones = np.ones((1, 256), dtype=bool)  # the mask of one sentence: a slice
        self.session = onnxruntime.InferenceSession(
            str(export["graph"]), session_options(threads), providers=["CPUExecutionProvider"]
        )
        graph_inputs = [graph_input.name for graph_input in self.session.get_inputs()]
        expected = [MASK_INPUT] + [name for name, _ in self._indexers]
        if graph_inputs != expected:
            raise ExportFormatError(
                f"{self.export_dir}: model.onnx takes {graph_inputs}, but tagger.json describes "
                f"{expected}."
            )
        self._tokenizer: Optional[Union[RuleTokenizer, SpacyTokenizer]] = None

    # ------------------------------------------------------------------ the predictor's API

    def predict_json(self, inputs: JsonDict) -> JsonDict:
        return self.predict_batch_json([inputs])[0]

    def predict_batch_json(self, inputs: Sequence[JsonDict]) -> List[JsonDict]:
        return self.results([self.sequences(json_dict) for json_dict in inputs])

    def tag(self, sentence: str) -> JsonDict:
        """`predict_json({"sentence": sentence})`."""
        return self.predict_json({"sentence": sentence})

    def forget_tokens(self) -> None:
        """Forgets what it keeps per token (each word's rows, the character-CNN vectors of
        words outside the tables), as a freshly loaded tagger: the next words are all new."""
        self._token_rows.reset()

    # ------------------------------------------------------------------ the steps

    def sequences(self, json_dict: Any) -> List[List[str]]:
        """
        The token sequences of one input object (the predictor's checks and messages): the
        `"tokens"`, or the tokens of each paragraph of the `"sentence"` (`tokenizer.paragraphs`);
        empty ones left out.
        """
        if not isinstance(json_dict, dict):
            raise InputError(f"each input must be a JSON object, got {json_dict!r:.100}")
        where = getattr(json_dict, "where", "")
        if "tokens" in json_dict:
            tokens = json_dict["tokens"]
            if (
                not isinstance(tokens, list)
                or not all(map(isinstance, tokens, repeat(str)))
                or "" in tokens
            ):
                raise InputError(
                    f'{where}"tokens" must be a list of non-empty strings, got {tokens!r:.100}'
                )
            refusal = not_unicode("tokens", tokens)
            if refusal:
                raise InputError(where + refusal)
            return [list(tokens)] if tokens else []
        if "sentence" in json_dict:
            sentence = json_dict["sentence"]
            if not isinstance(sentence, str):
                raise InputError(f'{where}"sentence" must be a string, got {sentence!r:.100}')
            refusal = not_unicode("sentence", [sentence])
            if refusal:
                raise InputError(where + refusal)
            if self._tokenizer is None:
                self._tokenizer = self._load_tokenizer()
            tokenize = self._tokenizer.tokenize
            return [tokens for tokens in map(tokenize, paragraphs(sentence)) if tokens]
        raise InputError(
            f'{where}each input line needs a "sentence" or a "tokens" key; got keys '
            f"{sorted(json_dict)}"
        )

    def _load_tokenizer(self) -> Union[RuleTokenizer, SpacyTokenizer]:
        """
        The raw sentences' tokenizer, made on the first one: the spaCy model's rules from the
        export's `tokenizer.json` (`RuleTokenizer`, no spaCy), else the spaCy model itself.
        """
        path = self.export_dir / TOKENIZER_FILE
        if not path.is_file():
            return SpacyTokenizer(self.spacy_model)
        tokenizer = RuleTokenizer.from_file(path)
        if tokenizer.model.get("name") != self.spacy_model:
            raise ExportFormatError(
                f"{path} holds the tokenizer of {tokenizer.model.get('name')!r}, but tagger.json "
                f"names the spaCy model {self.spacy_model!r} (export the tagger again)."
            )
        return tokenizer

    def emissions(
        self, sentences: Sequence[Sequence[str]], rows: Optional[np.ndarray] = None
    ) -> Tuple[np.ndarray, List[int]]:
        """
        The CRF's emissions of a batch of tokenised sentences: `(batch, num_tokens, num_tags)`
        float32, and the sentences' lengths. `rows`: the tokens' `TokenRows`, in token order,
        when the caller has them already.
        """
        lengths = [len(tokens) for tokens in sentences]
        num_tokens = max(lengths, default=0)
        if len(sentences) == 1:
            if self._ones.shape[1] < num_tokens:
                self._ones = np.ones((1, 2 * num_tokens), dtype=bool)
            feeds = {MASK_INPUT: self._ones[:, :num_tokens]}
        else:
            feeds = {MASK_INPUT: np.arange(num_tokens)[None, :] < np.asarray(lengths)[:, None]}
        if rows is None:
            rows = self._token_rows([token for tokens in sentences for token in tokens])
        index = self._token_rows.padded(rows, lengths, num_tokens)
        column = 0
        for name, indexer in self._indexers:
            if name in self._word_level:
                feeds[name] = indexer.gather_padded(index[:, :, column], lengths)
                column += 1
            else:
                feeds[name] = indexer(sentences, num_tokens)
        (logits,) = self.session.run([LOGITS_OUTPUT], feeds)
        return logits, lengths

    def tag_tokens(self, sentences: Sequence[Sequence[str]]) -> List[List[str]]:
        """
        The tags of a batch of tokenised, non-empty sentences, in their order. The rows of the
        batch's words are found once for the whole batch (the words new to the tagger in one
        lookup, one run of the character CNN for those outside its tables). The graph runs on
        buckets of sentences of similar length, up to `group_size` sentences and `group_tokens`
        padded tokens each (`length_buckets`): a graph run's LSTM steps span its longest
        sentence, so this runs far fewer steps than one run on the whole batch, and short
        sentences share a run. (An int8 graph's emissions depend a little on the sentences run
        together: its activations have one scale per run.) The emissions of all buckets are then
        decoded together, in one batched Viterbi. One sentence goes straight from the graph to
        the decoder.
        """
        names = self.tags
        if len(sentences) == 1:
            logits, lengths = self.emissions(sentences)
            (path,) = viterbi_tags(logits, lengths, self.transitions)
            return [[names[tag] for tag in path]]
        rows = self._token_rows([token for tokens in sentences for token in tokens])
        lengths = [len(tokens) for tokens in sentences]
        starts = np.cumsum([0] + lengths).tolist()
        buckets = length_buckets(lengths, self.group_size, self.group_tokens)
        order = [i for bucket in buckets for i in bucket]
        lengths = [lengths[i] for i in order]  # in the buckets' order
        emissions = np.zeros((len(order), max(lengths, default=0), len(self.tags)), np.float32)
        first = 0
        for bucket in buckets:
            bucket_rows = np.concatenate([rows[starts[i] : starts[i + 1]] for i in bucket])
            logits, _ = self.emissions([sentences[i] for i in bucket], bucket_rows)
            emissions[first : first + len(bucket), : logits.shape[1]] = logits
            first += len(bucket)
        tags: List[List[str]] = [[] for _ in sentences]
        for i, path in zip(order, viterbi_tags(emissions, lengths, self.transitions)):
            tags[i] = [names[tag] for tag in path]
        return tags

    def results(self, inputs: Sequence[Sequence[Sequence[str]]]) -> List[JsonDict]:
        """
        The outputs of a batch of inputs, each given as its token sequences (`sequences`): all
        sequences are tagged in one `tag_tokens` call; an input's output is its sequences'
        tokens and tags one after another, and the spans of those tags.
        """
        flat = [tokens for sequences in inputs for tokens in sequences]
        tags = iter(self.tag_tokens(flat) if flat else [])
        outputs = []
        for sequences in inputs:
            words: List[str] = []
            input_tags: List[str] = []
            for tokens in sequences:
                words += tokens
                input_tags += next(tags)
            outputs.append(self._result(words, input_tags))
        return outputs

    def _result(self, words: List[str], tags: List[str]) -> JsonDict:
        spans = [
            {"type": label, "start": start, "end": end, "text": " ".join(words[start : end + 1])}
            for label, (start, end) in sorted(self._tags_to_spans(tags), key=lambda s: s[1])
        ]
        return {"tokens": words, "tags": tags, "spans": spans}
