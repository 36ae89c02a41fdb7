"""
Dense-LM archives: opening them, checking them, storing them in a task model and fingerprinting
their weights. The only code that opens a dense-LM archive (`load_dense_lm`); `DenseBiLm`
(`dense_bilm.py`) runs the LMs it returns.

- `load_dense_lm` opens a `dense_language_model` archive (also `"pretrained:<name>"`), checks
  its direction and returns the LM with the config that rebuilds it;
  `"dense_language_model_from_archive"` (the LM fine-tuning configs' model) is this loader
  registered as a `Model`.
- `check_matching_lms`: a forward and a backward LM that a biLM can pair.
- `load_or_rebuild_lm`, `store_in_vocabulary`: the LMs' words and configs kept in the task
  vocabulary (`<namespace>` and `<namespace>_config_tags`), so that a task archive reloads
  without the LM files.
- `lm_weights_sha256`, `leave_out_lm_weights`, `fill_in_lm_weights`: with `store_lm_weights`
  false, a biLM's state dict holds the sha256 of the LM weights instead of the weights.
"""

import hashlib
import json
import logging
import os
import tarfile
import zlib
from typing import Dict, List, Optional, Tuple

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS, DenseLanguageModel
from ldnet_allennlp.modules.dense_lstm import DenseLSTMStack
from ldnet_allennlp.pretrained import resolve_archive

logger = logging.getLogger(__name__)

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
LM_NAMESPACE = "lm_tokens"  # the default namespace of the `dense_lm_tokens` indexer
ARCHIVE_KEYS = {direction: f"{direction}_lm_archive" for direction in DIRECTIONS}
FINGERPRINT_KEY = "lm_weights_sha256"


def lm_config_namespace(namespace: str) -> str:
    """
    The task-vocabulary namespace that stores the LMs' model configs (one JSON string per
    direction, each with its `"direction"`), next to their words in `namespace`.
    """
    return f"{namespace}_config_tags"


def load_dense_lm(
    archive_file: str, key: str, direction: Optional[str] = None
) -> Tuple[DenseLanguageModel, Dict]:
    """
    Loads the `dense_language_model` in `archive_file` (checking that it reads in `direction`,
    if given) and returns it with the model config that rebuilds it without the archive (a
    fine-tuned LM's `dense_language_model_from_archive` config is resolved to its base LM's).

    # Parameters

    archive_file : `str`
        A `model.tar.gz`, or a shipped archive, `"pretrained:<name>"` (`ldnet_allennlp.pretrained`).
    key : `str`
        The config key that named the archive: every `ConfigurationError` names it.
    direction : `str`, optional
        `"forward"` or `"backward"`: the direction the LM must read in.

    # Returns

    `(lm, config)`: the `DenseLanguageModel` and its model config, a `dict`.
    """
    archive_file = resolve_archive(archive_file)
    try:
        archive = load_archive(archive_file, cuda_device=-1)
    except (OSError, EOFError, tarfile.TarError, zlib.error) as error:  # missing, not a tar, cut
        raise ConfigurationError(
            f"{key} ({archive_file}) could not be loaded as an AllenNLP model archive: {error}"
        ) from error
    model = archive.model
    if not isinstance(model, DenseLanguageModel):
        raise ConfigurationError(
            f"{key} ({archive_file}) holds a {type(model).__name__}, not a " "dense_language_model."
        )
    check_direction(model, key, archive_file, direction)
    config = archive.config["model"].as_dict(quiet=True)
    if config.get("type") == "dense_language_model_from_archive":
        config = load_dense_lm(config["archive_file"], key)[1]
    return model, config


def check_direction(
    model: DenseLanguageModel, key: str, where: str, direction: Optional[str]
) -> None:
    """A `ConfigurationError` naming `key` and `where` unless `model` reads in `direction`."""
    if direction is not None and model.direction != direction:
        swapped = " (swapped forward_lm_archive and backward_lm_archive?)"
        raise ConfigurationError(
            f"{key} ({where}) holds a {model.direction!r} language model, but {key} needs a "
            f"{direction!r} one{swapped if key in ARCHIVE_KEYS.values() else ''}."
        )


def lm_words(lm: DenseLanguageModel) -> List[str]:
    """The LM's `tokens` vocabulary in id order (padding and OOV first)."""
    index_to_token = lm.vocab.get_index_to_token_vocabulary("tokens")
    return [index_to_token[i] for i in range(len(index_to_token))]


class DenseLanguageModelFromArchive(DenseLanguageModel):
    """
    Registered as `"dense_language_model_from_archive"` (the LM fine-tuning configs use it):
    AllenNLP's `from_archive` model type, checked by `load_dense_lm`. Config keys:
    `archive_file` and `direction`. Never instantiated: `from_lm_archive` returns the
    `DenseLanguageModel` of the archive.
    """

    @classmethod
    def from_lm_archive(
        cls, archive_file: str, direction: Optional[str] = None, vocab: Optional[Vocabulary] = None
    ) -> DenseLanguageModel:
        """
        # Parameters

        archive_file : `str`
            The LM's `model.tar.gz` (or `"pretrained:<name>"`); errors name `model.archive_file`.
        direction : `str`, optional
            The direction the LM must read in.
        vocab : `Vocabulary`, optional
            Extends the LM's vocabulary and embedding, as `Model.from_archive` does.
        """
        model, _ = load_dense_lm(archive_file, "model.archive_file", direction)
        if vocab:  # as `Model.from_archive` does
            model.vocab.extend_from_vocab(vocab)
            model.extend_embedder_vocab()
        return model


Model.register("dense_language_model_from_archive", constructor="from_lm_archive")(
    DenseLanguageModelFromArchive
)


def check_matching_lms(
    forward_lm: DenseLanguageModel, backward_lm: DenseLanguageModel, archives: Dict[str, str]
) -> None:
    """Both LMs must share the `tokens` vocabulary (with `<S>`, `</S>`) and the number of layers."""
    forward, backward = lm_words(forward_lm), lm_words(backward_lm)
    if forward != backward:
        differing = next(
            (i for i, (a, b) in enumerate(zip(forward, backward)) if a != b),
            min(len(forward), len(backward)),
        )
        raise ConfigurationError(
            f"forward_lm_archive ({archives['forward']}) and backward_lm_archive "
            f"({archives['backward']}) have different vocabularies ({len(forward)} vs "
            f"{len(backward)} words, first difference at index {differing}): the two LMs read "
            "the same token ids, so they must be trained with the same vocabulary."
        )
    if forward_lm.num_layers != backward_lm.num_layers:
        raise ConfigurationError(
            f"forward_lm_archive has {forward_lm.num_layers} layers but backward_lm_archive has "
            f"{backward_lm.num_layers} layers: the biLM pairs the directions layer by layer (one "
            "(2, num_layers) layer_mask), so both LMs need the same number of layers."
        )
    for token in (BOS_TOKEN, EOS_TOKEN):
        if token not in forward:
            raise ConfigurationError(
                f"forward_lm_archive: the 'tokens' vocabulary has no sentence boundary {token!r}; "
                "train the LMs with the dense_lm_text reader, which adds <S> and </S>."
            )


# ---------------------------------------------------------------------- copies in the vocabulary


def stored_words(vocab: Vocabulary, namespace: str) -> List[str]:
    """The LM words stored in `vocab`'s `namespace`, in id order."""
    index_to_token = vocab.get_index_to_token_vocabulary(namespace)
    return [index_to_token[i] for i in range(len(index_to_token))]


def stored_config(direction: str, vocab: Optional[Vocabulary], namespace: str) -> Optional[Dict]:
    """The `direction` LM's model config stored in `vocab` next to `namespace`, if any."""
    if vocab is None or vocab.get_vocab_size(namespace) <= 2:
        return None
    for token in vocab.get_token_to_index_vocabulary(lm_config_namespace(namespace)):
        if token.startswith("{"):
            config = json.loads(token)
            if config.get("direction", "forward") == direction:
                return config
    return None


def load_or_rebuild_lm(
    direction: str, archive_file: str, vocab: Optional[Vocabulary], namespace: str
) -> Tuple[DenseLanguageModel, Dict, bool]:
    """
    The `direction` LM from `archive_file` when it exists (`load_dense_lm`), else rebuilt from
    the copy stored in `vocab` (its weights then come from the task model's state dict).

    # Returns

    `(lm, config, read_from_archive)`: `read_from_archive` is `False` for a rebuilt LM.
    """
    key = ARCHIVE_KEYS[direction]
    stored = stored_config(direction, vocab, namespace)
    try:
        path = resolve_archive(archive_file) if archive_file else archive_file
    except ConfigurationError:  # a shipped archive that is not here: the stored copy, if any
        path = None
    if path and os.path.exists(path) or "://" in str(path):
        return (*load_dense_lm(path, key, direction), True)
    if stored is None:
        raise ConfigurationError(
            f"{key} ({archive_file}) does not exist, and the vocabulary holds no stored copy "
            "of this LM (the archive of a model trained with this code has one)."
        )
    # a task archive whose LM files are gone: the LM from the stored copy, its weights
    # come from the task model's weights
    lm_vocab = Vocabulary(non_padded_namespaces=[])
    lm_vocab.add_tokens_to_namespace(stored_words(vocab, namespace)[2:], "tokens")
    logger.info("Rebuilding the %s LM from the copy stored in the vocabulary", direction)
    lm = Model.from_params(vocab=lm_vocab, params=Params(dict(stored)))
    if not isinstance(lm, DenseLanguageModel):
        raise ConfigurationError(
            f"{key}: the stored LM config is a {type(lm).__name__}, not a dense_language_model."
        )
    check_direction(lm, key, "the stored copy", direction)
    return lm, stored, False


def store_in_vocabulary(
    vocab: Vocabulary, namespace: str, words: List[str], configs: Dict[str, Dict]
) -> None:
    """
    Copies the LMs' `words` into `vocab`'s `namespace` (or checks an existing copy) and their
    model `configs` (by direction) into `lm_config_namespace(namespace)`.
    """
    if vocab.get_vocab_size(namespace) > 2:
        if stored_words(vocab, namespace) != words:
            raise ConfigurationError(
                f"The task vocabulary's namespace {namespace!r} does not match "
                "the LM archives' vocabulary: forward_lm_archive / backward_lm_archive are "
                "not the LMs this model was trained with."
            )
    else:
        if words[:2] != [vocab._padding_token, vocab._oov_token]:
            raise ConfigurationError(
                "The LM vocabulary must start with the padding and OOV tokens "
                f"({vocab._padding_token}, {vocab._oov_token}); got {words[:2]}."
            )
        vocab.add_tokens_to_namespace(words[2:], namespace)
    config_namespace = lm_config_namespace(namespace)
    if not any(t.startswith("{") for t in vocab.get_token_to_index_vocabulary(config_namespace)):
        for direction in DIRECTIONS:
            vocab.add_token_to_namespace(
                json.dumps(configs[direction], sort_keys=True), config_namespace
            )


# ---------------------------------------------------------------------- LM weights by reference


def lm_weights_sha256(lm: torch.nn.Module) -> str:
    """
    sha256 (hex) of `lm`'s state dict: names, shapes and fp32 values, in name order. Each
    `DenseLSTMStack` counts with the `<name>.layer_mask` of ones that it held as a buffer when
    the fingerprints of the shipped archives were taken, so that they still match.
    """
    state = dict(lm.state_dict())
    for name, module in lm.named_modules():
        if isinstance(module, DenseLSTMStack):
            state[f"{name}.layer_mask"] = torch.ones(module.num_layers)
    digest = hashlib.sha256()
    for name, value in sorted(state.items()):
        digest.update(f"{name}:{tuple(value.shape)}:".encode())
        digest.update(value.detach().to(torch.float32).contiguous().cpu().numpy().tobytes())
    return digest.hexdigest()


def leave_out_lm_weights(bilm: torch.nn.Module, state_dict, prefix, local_metadata) -> None:
    """
    State-dict hook of `DenseBiLm`: with `store_lm_weights` false, the LMs' entries are replaced
    by the sha256 of their weights, `(2, 32)` uint8 under `lm_weights_sha256` (row 0 forward,
    row 1 backward).
    """
    if bilm.store_lm_weights:
        return
    rows = []
    for direction in DIRECTIONS:
        lm_prefix = f"{prefix}{direction}_lm."
        for key in [k for k in state_dict if k.startswith(lm_prefix)]:
            del state_dict[key]
        rows.append(list(bytes.fromhex(lm_weights_sha256(bilm.lm(direction)))))
    state_dict[prefix + FINGERPRINT_KEY] = torch.tensor(rows, dtype=torch.uint8)


def fill_in_lm_weights(
    lms: Dict[str, DenseLanguageModel],
    archives: Dict[str, str],
    read_from_archive: Dict[str, bool],
    state_dict: Dict[str, torch.Tensor],
    prefix: str,
) -> None:
    """
    Load pre-hook of `DenseBiLm`: a state dict saved with `store_lm_weights` false has no
    `forward_lm.*` / `backward_lm.*` entries but a `lm_weights_sha256`; the weights of `lms`,
    read from their `archives` at construction, fill them in once their fingerprint matches.

    # Parameters

    lms : `Dict[str, DenseLanguageModel]`
        The biLM's LMs by direction, still holding the weights read from their archives (a
        pre-hook runs before the submodules load theirs).
    archives : `Dict[str, str]`
        The LM archives by direction, for the errors.
    read_from_archive : `Dict[str, bool]`
        By direction, whether the LM was read from its archive (not rebuilt from the copy in
        the vocabulary): only those can stand in for weights a state dict leaves out.
    state_dict : `Dict[str, torch.Tensor]`
        Changed in place.
    prefix : `str`
        The biLM's prefix in `state_dict`.
    """
    stored = state_dict.pop(prefix + FINGERPRINT_KEY, None)
    for row, direction in enumerate(DIRECTIONS):
        lm_prefix = f"{prefix}{direction}_lm."
        if any(key.startswith(lm_prefix) for key in state_dict):
            continue  # the weights are in the state dict: loaded as usual
        if stored is None:
            continue  # not written by a biLM: torch reports the missing keys
        key = ARCHIVE_KEYS[direction]
        if not read_from_archive[direction]:
            raise ConfigurationError(
                f"{key} ({archives[direction]}) does not exist, and this model was "
                "saved without the LM weights (store_lm_weights false): it needs that LM "
                "archive (the shipped LMs: `pretrained:lm_forward` / `pretrained:lm_backward`)."
            )
        expected = bytes(stored[row].tolist()).hex()
        found = lm_weights_sha256(lms[direction])
        if found != expected:
            raise ConfigurationError(
                f"{key} ({archives[direction]}) is not the LM this model was trained "
                f"with: the sha256 of its weights is {found}, "
                f"the model was saved with {expected} (store_lm_weights false keeps only "
                "this fingerprint of the LM weights)."
            )
        for name, value in lms[direction].state_dict().items():
            state_dict[lm_prefix + name] = value
