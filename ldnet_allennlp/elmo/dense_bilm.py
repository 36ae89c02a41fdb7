"""
Our forward + backward dense LMs as one frozen biLM with the interface of AllenNLP's ELMo biLM
(`allennlp.modules.elmo._ElmoBiLm`), so it can be the `module=` of `allennlp.modules.Elmo`.
"""

import logging
import tarfile
from typing import Dict, List, Optional, Union

import torch

from allennlp.common import FromParams
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive
from allennlp.nn.util import add_sentence_boundary_token_ids

from ldnet_allennlp.lm.models.dense_language_model import DenseLanguageModel

logger = logging.getLogger(__name__)

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def load_dense_lm(
    archive_or_model: Union[str, DenseLanguageModel], key: str, direction: str
) -> DenseLanguageModel:
    """
    Loads a `dense_language_model` archive (or takes an already loaded model) and checks that it
    reads in `direction`; errors are `ConfigurationError`s naming the config `key`.
    """
    if isinstance(archive_or_model, torch.nn.Module):
        model = archive_or_model
        where = "the model given"
    else:
        where = str(archive_or_model)
        try:
            model = load_archive(where, cuda_device=-1).model
        except (OSError, EOFError, tarfile.TarError) as error:  # missing, not a tar.gz, cut
            raise ConfigurationError(
                f"{key}: cannot load the language model archive {where!r} ({error})."
            )
    if not isinstance(model, DenseLanguageModel):
        raise ConfigurationError(
            f"{key}: {where} holds a {type(model).__name__}, not a dense_language_model."
        )
    if model.direction != direction:
        raise ConfigurationError(
            f"{key}: {where} is a {model.direction!r} language model; {key} needs a "
            f"{direction!r} one (swapped forward_archive and backward_archive?)."
        )
    return model


class DenseBiLm(torch.nn.Module, FromParams):
    """
    A forward and a backward `dense_language_model` run side by side as one frozen biLM.

    For every token it gives `num_layers = L + 1` layers, forward and backward halves
    concatenated: layer 0 is the token layer `[x_fwd; x_bwd]` (the two LMs have their own word
    embeddings, so each direction contributes its own token vector where ELMo, whose character CNN
    is shared, duplicates one), layer j is `[h_j_fwd; h_j_bwd]`. Within one direction, layers of
    different widths (embedding dim != hidden size) are zero-padded to the widest, so every layer
    has `get_output_dim() = 2 * max(embedding_dim, hidden_size)` features and ScalarMix can add
    them (the real LMs have equal widths, nothing is padded).

    The sentences are wrapped in `<S> ... </S>` (as in LM training) and the boundaries are kept in
    the output, which is the contract of `allennlp.modules.Elmo(module=...)`: `Elmo` removes
    them itself. The LMs always stay in eval mode (no dropout, no layer dropout) and, unless
    `requires_grad`, are frozen and run without building a graph.

    # Parameters

    forward_archive : `str` (or a loaded `DenseLanguageModel`)
        `model.tar.gz` of a `dense_language_model` with `direction: "forward"`.
    backward_archive : `str` (or a loaded `DenseLanguageModel`)
        The matching `"backward"` model: same `tokens` vocabulary and number of layers.
    requires_grad : `bool`, optional (default = `False`)
        Fine-tune the LMs with the task (they still run in eval mode).

    # Input / output (`forward`)

    inputs : `(batch_size, num_tokens)` ids in the LMs' `tokens` vocabulary, 0 = padding (what
        the `dense_lm_tokens` indexer produces).
    Returns `{"activations": [(batch_size, num_tokens + 2, get_output_dim())] * num_layers,
    "mask": (batch_size, num_tokens + 2) BoolTensor}`, sentence boundaries included.
    """

    def __init__(
        self,
        forward_archive: Union[str, DenseLanguageModel],
        backward_archive: Union[str, DenseLanguageModel],
        requires_grad: bool = False,
    ) -> None:
        super().__init__()
        forward_lm = load_dense_lm(forward_archive, "forward_archive", "forward")
        backward_lm = load_dense_lm(backward_archive, "backward_archive", "backward")
        check_matching_lms(forward_lm, backward_lm)
        forward_lm.drop_softmax()
        backward_lm.drop_softmax()
        self.forward_lm = forward_lm
        self.backward_lm = backward_lm
        self.vocab = forward_lm.vocab
        # Elmo's contract: the number of layers ScalarMix mixes (token layer + LSTM layers).
        self.num_layers = forward_lm.num_layers + 1
        self._forward_dim = max(forward_lm.embedding_dim, forward_lm.hidden_size)
        self._backward_dim = max(backward_lm.embedding_dim, backward_lm.hidden_size)
        self._bos_index = self.vocab.get_token_index(BOS_TOKEN, "tokens")
        self._eos_index = self.vocab.get_token_index(EOS_TOKEN, "tokens")
        self.requires_grad = requires_grad
        for parameter in self.parameters():
            parameter.requires_grad_(requires_grad)
        self.train(False)

    def train(self, mode: bool = True) -> "DenseBiLm":
        """The LMs stay in eval mode whatever the task model does."""
        super().train(mode)
        self.forward_lm.eval()
        self.backward_lm.eval()
        return self

    def get_output_dim(self) -> int:
        return self._forward_dim + self._backward_dim

    def forward(  # type: ignore
        self, inputs: torch.LongTensor, word_inputs: Optional[torch.Tensor] = None
    ) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
        """
        inputs : `(batch_size, num_tokens)` LM vocabulary ids, 0 = padding.
        word_inputs : ignored (in `Elmo`'s signature for its cached-vocabulary mode).
        """
        if inputs.dim() != 2:
            raise ValueError(
                f"DenseBiLm expects (batch_size, num_tokens) token ids, got shape "
                f"{tuple(inputs.shape)}."
            )
        mask = inputs != 0
        token_ids, mask_with_boundaries = add_sentence_boundary_token_ids(
            inputs, mask, self._bos_index, self._eos_index
        )
        with torch.set_grad_enabled(torch.is_grad_enabled() and self.requires_grad):
            forward_layers = self.forward_lm.contextual_layers(token_ids, mask_with_boundaries)
            backward_layers = self.backward_lm.contextual_layers(token_ids, mask_with_boundaries)
        activations = [
            torch.cat(
                [_pad_to(forward, self._forward_dim), _pad_to(backward, self._backward_dim)],
                dim=-1,
            )
            for forward, backward in zip(forward_layers, backward_layers)
        ]
        return {"activations": activations, "mask": mask_with_boundaries}


def check_matching_lms(forward_lm: DenseLanguageModel, backward_lm: DenseLanguageModel) -> None:
    """Both LMs must share the `tokens` vocabulary and the number of layers."""
    if forward_lm.num_layers != backward_lm.num_layers:
        raise ConfigurationError(
            f"backward_archive has {backward_lm.num_layers} LSTM layers but forward_archive has "
            f"{forward_lm.num_layers}: the scalar mix concatenates the two directions layer by "
            "layer, so both LMs need the same number of layers."
        )
    forward_vocab = forward_lm.vocab.get_token_to_index_vocabulary("tokens")
    backward_vocab = backward_lm.vocab.get_token_to_index_vocabulary("tokens")
    if forward_vocab != backward_vocab:
        raise ConfigurationError(
            f"backward_archive's 'tokens' vocabulary ({len(backward_vocab)} entries) differs from "
            f"forward_archive's ({len(forward_vocab)} entries): the two LMs read the same token "
            "ids, so they must be trained with the same vocabulary."
        )
    for token in (BOS_TOKEN, EOS_TOKEN):
        if token not in forward_vocab:
            raise ConfigurationError(
                f"forward_archive: the 'tokens' vocabulary has no sentence boundary {token!r}; "
                "train the LMs with the dense_lm_text reader, which adds <S> and </S>."
            )


def _pad_to(tensor: torch.Tensor, dim: int) -> torch.Tensor:
    """Zero-pads the last dimension of `tensor` up to `dim`."""
    missing = dim - tensor.size(-1)
    if missing == 0:
        return tensor
    return torch.nn.functional.pad(tensor, (0, missing))
