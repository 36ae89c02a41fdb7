"""
Step (3) of LD-Net's pruning: turn a tagger whose layer masks were trained to 0/1 into a smaller,
ordinary AllenNLP archive. Layers whose mask is 0 are removed, the input columns of every later
layer and of `W_cr` that read them are sliced away, surviving masks stay as fixed multipliers.
The taggers it prunes have a `layer_selection` or a `dense_lm_scalar_mix` embedder (both
`LayerMaskedEmbedder`s over a `DenseBiLm`); a scalar mix has nothing to slice beyond the LMs (its
`s` keeps one value per loaded layer, and it renormalises its weights over the layers that remain).

AllenNLP's archive contract is kept: an archive is a config + vocabulary + weights, and
`load_archive` rebuilds the model from the config. So the pruned archive's config describes the
pruned shape (`forward_kept_layers` / `backward_kept_layers` of the embedder), and its weights
are the original weights, sliced to that shape.
"""

import copy
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple

import torch

from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.meta import META_NAME, Meta
from allennlp.models import Model
from allennlp.models.archival import CONFIG_NAME, archive_model, load_archive

from ldnet_allennlp.lm.models.dense_language_model import DIRECTIONS
from ldnet_allennlp.lm.modules.dense_bilm import (
    LayerMaskedEmbedder,
    find_dense_bilms,
    lm_weights_stored,
)
from ldnet_allennlp.pretrained import shipped_name
from ldnet_allennlp.lm.token_embedders import LayerSelectionTokenEmbedder
from ldnet_allennlp.tagging.flops import flops_per_token


@dataclass
class PruneReport:
    kept_layers_before: Dict[str, Dict[str, List[int]]] = field(default_factory=dict)
    kept_layers_after: Dict[str, Dict[str, List[int]]] = field(default_factory=dict)
    parameters_before: int = 0
    parameters_after: int = 0
    flops_per_token_before: float = 0.0
    flops_per_token_after: float = 0.0

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def prunable_embedders(model: Model) -> List[Tuple[str, LayerMaskedEmbedder]]:
    """
    The embedders that hold the model's dense biLMs (`layer_selection`, `dense_lm_scalar_mix`:
    `LayerMaskedEmbedder`s), by module name.
    """
    bilms = [bilm for _, bilm in find_dense_bilms(model)]
    return [
        (name, module)
        for name, module in model.named_modules()
        if isinstance(module, LayerMaskedEmbedder) and any(module.bilm is b for b in bilms)
    ]


def layer_selection_embedders(model: Model) -> List[Tuple[str, LayerSelectionTokenEmbedder]]:
    """The `layer_selection` embedders among `prunable_embedders`, by module name."""
    return [
        (name, embedder)
        for name, embedder in prunable_embedders(model)
        if isinstance(embedder, LayerSelectionTokenEmbedder)
    ]


def _config_block(model_config: Dict[str, Any], module_name: str) -> Dict[str, Any]:
    """
    The config dict of the embedder at `module_name`, e.g. `text_field_embedder.token_embedder_lm`
    → `model_config["text_field_embedder"]["token_embedders"]["lm"]` (a `basic` text field
    embedder names its token embedders `token_embedder_<key>`).
    """
    block: Any = model_config
    for part in module_name.split("."):
        if part.startswith("token_embedder_") and "token_embedders" in block:
            block = block["token_embedders"][part[len("token_embedder_") :]]
        elif part in block:
            block = block[part]
        else:
            raise ConfigurationError(
                f"cannot find the config of the embedder {module_name!r} in the archive's model "
                "config"
            )
    return block


def layers_to_keep(embedder: LayerMaskedEmbedder) -> Dict[str, List[int]]:
    """
    Per direction, the layers of `embedder`'s biLM that survive (`DenseBiLm.surviving_layers`:
    mask > 0, among the kept layers); a `ConfigurationError` when no layer survives at all.
    """
    surviving = embedder.bilm.surviving_layers()
    # One direction may lose every layer (its LM then contributes its token embeddings, exactly
    # what the masked model computes); both cannot: the tagger would have no LM layer left.
    if not any(surviving.values()):
        raise ConfigurationError(
            "every layer mask of both LMs is 0: nothing of the LMs but their token embeddings "
            "would be left. Prune with a budget >= 1 or a smaller lambda0, or train a tagger "
            "without LM features (e.g. ner_vanilla)."
        )
    return surviving


def _pruned_state(
    old: Model, new: Model, surviving: Dict[str, Dict[str, List[int]]]
) -> Dict[str, torch.Tensor]:
    """The weights of `new` (pruned shape), taken from `old` and sliced."""
    state = dict(old.state_dict())
    bilm_names = {id(bilm): bilm_name for bilm_name, bilm in find_dense_bilms(old)}
    for name, embedder in prunable_embedders(old):
        kept = embedder.kept_layers()
        projection_columns: List[int] = []
        offset = 0
        for direction in DIRECTIONS:
            lm = embedder.forward_lm if direction == "forward" else embedder.backward_lm
            positions = [kept[direction].index(layer) for layer in surviving[name][direction]]
            smaller = lm.encoder.pruned(positions)
            bilm_name = bilm_names[id(embedder.bilm)]
            prefix = f"{bilm_name}.{direction}_lm.{_encoder_attribute(lm)}."
            for key in [k for k in state if k.startswith(prefix)]:
                del state[key]
            for key, value in smaller.state_dict().items():
                state[prefix + key] = value
            columns = lm.encoder.input_columns(lm.encoder.num_layers, positions)
            projection_columns.extend(offset + c for c in columns)
            offset += lm.encoder.get_output_dim()
        if isinstance(embedder, LayerSelectionTokenEmbedder):  # W_cr reads the LMs' outputs
            weight_key = f"{name}.projection.weight"
            state[weight_key] = state[weight_key][:, projection_columns]
    expected = new.state_dict()
    for key, value in expected.items():
        if key not in state or state[key].shape != value.shape:
            raise RuntimeError(f"pruned weights do not fit the pruned model at {key}")
    return {key: state[key] for key in expected}


def _encoder_attribute(lm: Model) -> str:
    for attribute, module in lm.named_children():
        if module is lm.encoder:
            return attribute
    raise RuntimeError("the dense LM's encoder is not one of its submodules")


def prune_archive(
    archive_path: str,
    output_path: str,
    fp16: bool = False,
    reference_lms: bool = False,
    keep_all_layers: bool = False,
) -> PruneReport:
    """
    Writes the physically pruned version of the tagger in `archive_path` to `output_path`
    (atomically: a failed run leaves no partial file, and never replaces a good one). With
    `fp16`, its parameters are stored in half precision (half the size; loading
    copies them into the model's fp32 parameters). With `reference_lms`, the frozen LM weights
    are left out of the archive (`store_lm_weights: false`, see `DenseBiLm`): it refers to the
    LM archives, named `pretrained:<name>` when they are the shipped ones (else by absolute
    path), and keeps only the sha256 of their weights. With `keep_all_layers`, no layer is
    removed (masks are ignored): what changes is only what `fp16` and `reference_lms` change, e.g.
    to ship an un-pruned tagger small; one of them must then be set.
    """
    if keep_all_layers and not (fp16 or reference_lms):
        raise ConfigurationError(
            "--keep-all-layers without --fp16 or --reference-lms would write the same tagger "
            f"again as {output_path}; add one of them (or prune: leave --keep-all-layers out)."
        )
    if os.path.isdir(output_path):
        raise ConfigurationError(f"--output-file {output_path} is a directory; name a file.")
    archive = _load_archive(archive_path)
    model = archive.model
    model.eval()
    embedders = prunable_embedders(model)
    if not embedders:
        raise ConfigurationError(
            f"{archive_path}: the model has no layer_selection embedder (nor a "
            "dense_lm_scalar_mix one); there is nothing to prune."
        )
    config = archive.config.duplicate()
    model_config = config.as_dict(quiet=True)["model"]
    report = PruneReport()
    surviving = _pruned_config(model_config, embedders, report, keep_all_layers, reference_lms)
    if report.kept_layers_after == report.kept_layers_before and not keep_all_layers:
        raise ConfigurationError(
            f"{archive_path}: no layer has a mask of 0, so there is nothing to remove (kept "
            f"layers: {report.kept_layers_before}). Is this archive pruned already, or was it "
            "trained without the layer_pruning callback and the layer_selection regularizer?"
        )

    # the pruned model's weights come from the masked model, sliced: not from an initializer
    # (the phase-2 config initialises from the un-pruned phase-1 weights)
    model_config.pop("initializer", None)
    pruned = Model.from_params(vocab=model.vocab, params=Params(copy.deepcopy(model_config)))
    with lm_weights_stored(model), lm_weights_stored(pruned):  # slice the full weights
        pruned.load_state_dict(_pruned_state(model, pruned, surviving))
    report.parameters_before = sum(p.numel() for p in model.parameters())
    report.parameters_after = sum(p.numel() for p in pruned.parameters())
    report.flops_per_token_before = float(flops_per_token(model))
    report.flops_per_token_after = float(flops_per_token(pruned))

    full_config = config.as_dict(quiet=True)
    full_config["model"] = model_config
    if reference_lms:
        for key in ("dataset_reader", "validation_dataset_reader"):
            if key in full_config:
                _name_lm_archives(full_config[key])
    write_archive(full_config, pruned, output_path, fp16=fp16)
    return report


def _load_archive(archive_path: str) -> Any:
    try:
        return load_archive(archive_path)
    except (OSError, EOFError, tarfile.TarError) as error:  # missing, not a tar.gz, truncated
        raise ConfigurationError(
            f"{archive_path} could not be loaded as an AllenNLP model archive: {error}"
        ) from error


def _pruned_config(
    model_config: Dict[str, Any],
    embedders: List[Tuple[str, LayerMaskedEmbedder]],
    report: PruneReport,
    keep_all_layers: bool,
    reference_lms: bool,
) -> Dict[str, Dict[str, List[int]]]:
    """
    Sets, in `model_config` (in place), each embedder's kept layers, its fixed masks and (with
    `reference_lms`) its LM archives by reference; records the kept layers in `report`.

    # Returns

    The layers each embedder keeps, by embedder name and direction.
    """
    surviving: Dict[str, Dict[str, List[int]]] = {}
    for name, embedder in embedders:
        report.kept_layers_before[name] = embedder.kept_layers()
        surviving[name] = embedder.kept_layers() if keep_all_layers else layers_to_keep(embedder)
        report.kept_layers_after[name] = surviving[name]
        block = _config_block(model_config, name)
        block["forward_kept_layers"] = surviving[name]["forward"]
        block["backward_kept_layers"] = surviving[name]["backward"]
        block["trainable_layer_mask"] = False
        if reference_lms:
            block["store_lm_weights"] = False
    if reference_lms:
        _name_lm_archives(model_config)
    return surviving


def _name_lm_archives(block: Any) -> None:
    """
    Rewrites, in place, every LM archive path in a config block (`forward_lm_archive`,
    `backward_lm_archive`, `lm_archive`) as the archive a by-reference tagger can find anywhere:
    `pretrained:<name>` for a shipped LM (same sha256), else the absolute path.
    """
    if isinstance(block, dict):
        for key, value in block.items():
            if key in ("forward_lm_archive", "backward_lm_archive", "lm_archive") and isinstance(
                value, str
            ):
                block[key] = _portable_archive(value)
            else:
                _name_lm_archives(value)
    elif isinstance(block, list):
        for value in block:
            _name_lm_archives(value)


def _portable_archive(path: str) -> str:
    if path.startswith("pretrained:") or "://" in path:
        return path
    name = shipped_name(path) if os.path.exists(path) else None
    if name is not None:
        return f"pretrained:{name}"
    if not os.path.exists(path):
        raise ConfigurationError(
            f"--reference-lms: the LM archive {path} does not exist here, so the pruned tagger "
            "could not refer to it; run from where the tagger was trained or pass the LMs."
        )
    return os.path.abspath(path)


def fp16_state_dict(module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """
    `module.state_dict()` with its parameters in half precision; buffers keep their dtype (a
    count such as the 400,000 words in GloVe's fingerprint is `inf` in fp16).
    """
    weights = {name for name, _ in module.named_parameters()}
    return {k: v.half() if k in weights else v for k, v in module.state_dict().items()}


def write_archive(
    config: Dict[str, Any], model: Model, output_path: str, fp16: bool = False
) -> None:
    """
    Writes `model` (its vocabulary and weights) with `config` as an ordinary AllenNLP archive, the
    way `allennlp train` does (`archive_model`); with `fp16`, its parameters are stored in half
    precision (buffers keep their dtype). Atomic: the archive is staged next to
    `output_path` and moved into place only when complete, so an interrupted or failed run never
    leaves a partial file, nor replaces a good one.
    """
    with tempfile.TemporaryDirectory() as serialization_dir:
        Params(config).to_file(os.path.join(serialization_dir, CONFIG_NAME))
        Meta.new().to_file(os.path.join(serialization_dir, META_NAME))
        model.vocab.save_to_files(os.path.join(serialization_dir, "vocabulary"))
        state = fp16_state_dict(model) if fp16 else model.state_dict()
        torch.save(state, os.path.join(serialization_dir, "best.th"))
        partial = os.path.join(serialization_dir, "model.tar.gz")
        archive_model(serialization_dir, archive_path=partial)
        os.makedirs(os.path.dirname(os.path.abspath(output_path)), exist_ok=True)
        staged = f"{output_path}.partial"  # same folder as the output: os.replace is atomic
        try:
            shutil.copyfile(partial, staged)
            os.replace(staged, output_path)
        finally:
            if os.path.exists(staged):  # the copy failed (e.g. disk full): leave no debris
                os.remove(staged)
