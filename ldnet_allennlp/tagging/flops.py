"""
Multiply-adds per token of a tagger (or any model), counted once, from the modules it holds.
LD-Net reports these as "FLOPs per token" (51M unpruned, 5M pruned on CoNLL-03).

What is counted, per token:
- a `torch.nn.LSTM`, per layer and direction (h hidden units, d inputs):
  - its matrix products, 4h·(d + h): the number of elements of its `weight_ih_*` and
    `weight_hh_*` (and `weight_hr_*`) matrices;
  - its gates' element-wise work, `LSTM_ELEMENTWISE_PER_UNIT` = 8 per hidden unit and step:
    the 5 non-linearities σ(i), σ(f), σ(o), tanh(g), tanh(c_t), one each, and the products of
    c_t = f ⊙ c_{t-1} + i ⊙ g (a multiply, then a multiply-add: 2) and h_t = o ⊙ tanh(c_t) (1);
    the bias additions are not counted, as for `Linear`;
- a `torch.nn.Linear`: in × out (e.g. LD-Net's `W_cr`, the CRF emissions `tag_projection_layer`);
- a `dense_lm_scalar_mix`'s mixes: per output representation, one multiply-add per feature of
  each layer half it mixes (`DenseLMScalarMixEmbedder.mix_multiply_adds`: the token layer and
  every kept LM layer, per direction), plus its optional projection (a `Linear`);
- a `torch.nn.Conv1d`: out × in × kernel per output position;
- a `ConditionalRandomField`'s Viterbi decode: num_tags² per token, the (max, +) product of the
  previous scores with the transition matrix (for each pair of tags an add and a max, counted
  as one multiply-add); the emission addition (like a bias), the START/END steps (once per
  sentence) and the back-tracking are not counted;
- modules inside a `TokenCharactersEncoder` run once per character: their count is multiplied
  by `chars_per_token` (default 4.37, the mean token length of CoNLL-03 eng.train, measured);
- embedding look-ups and other activations (ReLU, max-pooling, the dense LM's concatenations): 0.
Modules that are not run when the model tags (a dense LM's softmax after `drop_softmax()`) are not
held by the model, so not counted.
"""

from typing import Dict

import torch

from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp.modules.token_embedders import TokenCharactersEncoder

from ldnet_allennlp.lm.modules.dense_bilm import find_dense_bilms
from ldnet_allennlp.lm.token_embedders.scalar_mix import DenseLMScalarMixEmbedder

MEAN_CONLL03_TOKEN_LENGTH = 4.37

LSTM_ELEMENTWISE_PER_UNIT = 8
"""An LSTM's element-wise work per hidden unit and step (see the module's docstring)."""


def _module_macs(module: torch.nn.Module) -> float:
    if isinstance(module, torch.nn.LSTM):
        weights = sum(p.numel() for n, p in module.named_parameters() if n.startswith("weight_"))
        units = module.hidden_size * module.num_layers * (2 if module.bidirectional else 1)
        return float(weights + LSTM_ELEMENTWISE_PER_UNIT * units)
    if isinstance(module, torch.nn.Linear):
        return float(module.in_features * module.out_features)
    if isinstance(module, torch.nn.Conv1d):
        return float(
            module.out_channels * module.in_channels // module.groups * module.kernel_size[0]
        )
    return 0.0


def flops_breakdown(
    model: torch.nn.Module, chars_per_token: float = MEAN_CONLL03_TOKEN_LENGTH
) -> Dict[str, float]:
    """
    Multiply-adds per token by part: `"lm"` (the dense LMs of every `DenseBiLm`),
    `"lm_projection"` (what turns the biLM's layers into the embedder's output: the `projection`
    beside a biLM, `layer_selection`'s `W_cr`; a `dense_lm_scalar_mix`'s mixes and projection),
    `"char_encoder"`, `"word_encoder"` (the tagger's `encoder`), `"crf_emissions"`
    (`tag_projection_layer`), `"viterbi"` (the CRF's decode) and `"other"`. An LSTM's gate work
    is in its part (`"lm"`, `"char_encoder"`, `"word_encoder"`).
    """
    parts = {
        "lm": 0.0,
        "lm_projection": 0.0,
        "char_encoder": 0.0,
        "word_encoder": 0.0,
        "crf_emissions": 0.0,
        "viterbi": 0.0,
        "other": 0.0,
    }
    owners = {}
    for name, _ in find_dense_bilms(model):
        owners[name] = "lm"
        owner = name.rpartition(".")[0]
        owners[f"{owner}.projection" if owner else "projection"] = "lm_projection"
    for name, module in model.named_modules():
        if isinstance(module, TokenCharactersEncoder):
            owners[name] = "char_encoder"
        if isinstance(module, DenseLMScalarMixEmbedder):
            owners[f"{name}._projection" if name else "_projection"] = "lm_projection"
            parts["lm_projection"] += float(module.mix_multiply_adds())
    for name, module in model.named_modules():
        if isinstance(module, ConditionalRandomField):
            parts["viterbi"] += float(module.num_tags**2)
            continue
        macs = _module_macs(module)
        if macs == 0.0:
            continue
        owner = next((owners[o] for o in owners if name == o or name.startswith(o + ".")), None)
        if owner in ("lm", "lm_projection"):
            parts[owner] += macs
        elif owner == "char_encoder":
            parts["char_encoder"] += macs * chars_per_token
        elif name == "encoder" or name.startswith("encoder."):
            parts["word_encoder"] += macs
        elif name == "tag_projection_layer" or name.startswith("tag_projection_layer."):
            parts["crf_emissions"] += macs
        else:
            parts["other"] += macs
    return parts


def flops_per_token(
    model: torch.nn.Module, chars_per_token: float = MEAN_CONLL03_TOKEN_LENGTH
) -> float:
    """Total multiply-adds per token (the sum of `flops_breakdown`)."""
    return sum(flops_breakdown(model, chars_per_token).values())
