"""
Sentence boundaries `<S> ... </S>` around LM token ids, put in and taken out for a whole batch at
once: what AllenNLP's `add_sentence_boundary_token_ids` / `remove_sentence_boundaries` compute,
without their per-sentence Python loops (two small tensor writes and a host sync per sentence,
which dominate a training step on a GPU), and in operations that trace into an ONNX graph with
dynamic shapes. Used by the dense biLM, the dense LM and the ONNX export alike.
"""

import torch
from torch.nn import functional


def add_sentence_boundaries(ids: torch.Tensor, bos: int, eos: int) -> torch.Tensor:
    """
    # Parameters

    ids : `torch.Tensor`, `(batch_size, num_tokens)`
        Token ids, 0 = padding, left-aligned.
    bos, eos : `int`
        The ids of `<S>` and `</S>`.

    # Returns

    `(batch_size, num_tokens + 2)`: `bos`, the sentence's ids, `eos`, then padding (a sentence
    of no tokens becomes `bos eos`); its mask is `!= 0`.
    """
    lengths = (ids != 0).sum(dim=1, keepdim=True)
    positions = torch.arange(ids.size(1) + 2, device=ids.device).unsqueeze(0)
    padded = functional.pad(ids, (1, 1))
    return torch.where(
        positions == 0,
        torch.full_like(padded, bos),
        torch.where(positions == lengths + 1, torch.full_like(padded, eos), padded),
    )


def remove_sentence_boundaries(tensor: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """
    # Parameters

    tensor : `torch.Tensor`, `(batch_size, num_tokens + 2, dim)`
        Computed over `add_sentence_boundaries`' ids.
    mask : `torch.Tensor`, `(batch_size, num_tokens)`
        The mask of the ids without boundaries.

    # Returns

    `(batch_size, num_tokens, dim)`: each sentence's positions without `<S>` and `</S>`, zero
    at padding.
    """
    return tensor[:, 1:-1] * mask.unsqueeze(-1).to(tensor.dtype)
