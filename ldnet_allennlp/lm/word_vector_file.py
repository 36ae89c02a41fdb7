"""
A dense LM's input word embeddings in the GloVe text format (`word v_1 ... v_d` per line), so
that a tagger's ordinary `embedding` token embedder can start from them through its
`pretrained_file` key (`training_configs/tagging/ner_ldnet_lm_init.jsonnet`); the subcommand is
`allennlp ldnet-export-word-vectors` (`ldnet_allennlp/lm/commands/`).

With `--lowercase` (for taggers whose `tokens` indexer lowercases), each lowercased word gets the
vector of its first cased variant in the LM vocabulary. AllenNLP builds vocabularies in
descending count order, so that is the most frequent variant ("the", not "The").
"""

import logging
from typing import Tuple

import torch
from allennlp.common.tqdm import Tqdm

from ldnet_allennlp.lm.modules.lm_archives import load_dense_lm

logger = logging.getLogger(__name__)

_CHUNK = 4096  # word ids embedded at once


def write_word_vector_file(
    archive_file: str, output_file: str, lowercase: bool = False
) -> Tuple[int, int]:
    """
    Writes the LM's input embedding of every word of its `tokens` vocabulary (padding and the
    OOV token left out) to `output_file`; returns `(number of words written, embedding dim)`.
    A `ConfigurationError` names the archive if it is not a dense LM.
    """
    model, _ = load_dense_lm(archive_file, "model.archive_file")
    model.eval()
    vocab = model.vocab
    skip = {vocab._padding_token, vocab._oov_token}
    chosen = {}  # word as written -> LM id
    for index, word in vocab.get_index_to_token_vocabulary("tokens").items():
        if word in skip or any(character.isspace() for character in word):
            continue
        key = word.lower() if lowercase else word
        if key not in chosen or index < chosen[key]:
            chosen[key] = index
    words = sorted(chosen, key=chosen.get)
    dim = model.embedding_dim
    with open(output_file, "w", encoding="utf-8") as out, torch.no_grad():
        for start in Tqdm.tqdm(range(0, len(words), _CHUNK), desc="word vectors"):
            batch = words[start : start + _CHUNK]
            ids = torch.tensor([[chosen[word] for word in batch]], dtype=torch.long)
            vectors = model.embed_tokens(ids)[0]
            for word, vector in zip(batch, vectors.tolist()):
                out.write(word + " " + " ".join(f"{value:.6g}" for value in vector) + "\n")
    logger.info("wrote %d %d-d word vectors to %s", len(words), dim, output_file)
    return len(words), dim
