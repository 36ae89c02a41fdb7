"""The `dense_lm_tokens` indexer: token ids in the dense LMs' own word vocabulary."""

from typing import Dict, List, Optional

from allennlp.common.checks import ConfigurationError
from allennlp.data import Token, Vocabulary
from allennlp.data.token_indexers import SingleIdTokenIndexer, TokenIndexer

from ldnet_allennlp.lm.modules.lm_archives import LM_NAMESPACE, load_dense_lm


@TokenIndexer.register("dense_lm_tokens")
class DenseLMTokenIndexer(SingleIdTokenIndexer):
    """
    Maps each token to its id in the dense LMs' own word vocabulary. A word the LM does not know
    (including any word with characters the LM never saw) gets the LM's OOV id; nothing is
    counted from the data, so the namespace `namespace` is exactly the LMs'.

    Where the LMs' words come from: the task vocabulary's namespace `namespace`, when it holds
    them (a model's archive; or once the `layer_selection` / `dense_lm_scalar_mix` embedder, which
    copies them there, has been built); else the LM archive `lm_archive`, read once. So with
    `lm_archive` the indexer works before (or without) any model.

    Registered as `"dense_lm_tokens"`.

    # Parameters

    namespace : `str`, optional (default = `"lm_tokens"`)
        Must equal the embedder's `vocab_namespace`.
    lm_archive : `str`, optional
        Either dense LM archive (the two share one vocabulary).
    lowercase_tokens : `bool`, optional (default = `false`)
        The dense LMs are trained on cased text (`dense_lm_text` reader); set this only if your LM
        was trained lowercased.
    token_min_padding_length : `int`, optional (default = `0`)
    """

    def __init__(
        self,
        namespace: str = LM_NAMESPACE,
        lm_archive: Optional[str] = None,
        lowercase_tokens: bool = False,
        token_min_padding_length: int = 0,
    ) -> None:
        super().__init__(
            namespace=namespace,
            lowercase_tokens=lowercase_tokens,
            token_min_padding_length=token_min_padding_length,
        )
        self.lm_archive = lm_archive
        self._lm_vocab: Optional[Vocabulary] = None

    def count_vocab_items(self, token: Token, counter: Dict[str, Dict[str, int]]):
        # The namespace is the LMs' vocabulary: never grown from the data.
        return

    def tokens_to_indices(self, tokens: List[Token], vocabulary: Vocabulary):
        if vocabulary.get_vocab_size(self.namespace) > 2:
            return super().tokens_to_indices(tokens, vocabulary)
        if self.lm_archive is None:
            raise ConfigurationError(
                f"dense_lm_tokens: the vocabulary namespace {self.namespace!r} is empty. Give the "
                "indexer lm_archive (a dense LM archive), or build the model first: its "
                "layer_selection / dense_lm_scalar_mix embedder (vocab_namespace "
                f"{self.namespace!r}) copies the LMs' words there."
            )
        if self._lm_vocab is None:
            self._lm_vocab = load_dense_lm(self.lm_archive, "dense_lm_tokens.lm_archive")[0].vocab
        indices = []
        for token in tokens:
            text = self._get_feature_value(token)
            indices.append(
                self._lm_vocab.get_token_index(text.lower() if self.lowercase_tokens else text)
            )
        return {"tokens": indices}
