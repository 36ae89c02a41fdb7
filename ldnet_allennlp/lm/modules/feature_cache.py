"""
A per-sentence cache of a frozen biLM's layers, for training a task model over frozen LMs: the
LM features of a sentence do not change from epoch to epoch (the LMs run in eval mode, without
gradients, under fixed layer masks), so each sentence's are computed once. `DenseBiLm` uses it
while `cache_features(True)` (the `lm_feature_cache` trainer callback turns it on for a
training run and off at its end).
"""

from typing import Callable, Dict, List, Optional

import torch

LayersByDirection = Dict[str, List[torch.Tensor]]


class LmFeatureCache:
    """
    Per sentence, keyed by its LM token ids (sentence boundaries included), each direction's
    layers `[x, h_l for each kept l]` concatenated, `(num_tokens', sum of widths)`.

    A change of the layer masks empties the cache (the layers depend on them). `hits` and
    `misses` count sentences.
    """

    def __init__(self) -> None:
        self._rows: Dict[bytes, Dict[str, torch.Tensor]] = {}
        self._widths: Dict[str, List[int]] = {}
        self._layer_masks: Optional[Dict[str, torch.Tensor]] = None
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()
        self._widths.clear()
        self._layer_masks = None

    def layers(
        self,
        tokens: torch.LongTensor,
        mask: torch.BoolTensor,
        layer_masks: Dict[str, torch.Tensor],
        compute: Callable[[torch.LongTensor, torch.BoolTensor], LayersByDirection],
    ) -> LayersByDirection:
        """
        What `compute(tokens, mask)` returns, `{direction: [(batch_size, num_tokens, width)]}`,
        with each sentence's rows from the cache; `compute` runs only on the sentences not yet
        cached. Padding positions (`mask` false) are zeros.

        tokens : `(batch_size, num_tokens)`, right-padded (`mask` a prefix of each row).
        layer_masks : per direction, the masks the layers are computed under.
        """
        masks = {d: m.detach().clone() for d, m in layer_masks.items()}
        if self._layer_masks is None or any(
            not torch.equal(masks[d], self._layer_masks[d]) for d in masks
        ):
            self.clear()
            self._layer_masks = masks
        lengths = mask.sum(dim=-1)
        positions = torch.arange(mask.size(1), device=mask.device)
        if not torch.equal(mask, positions.unsqueeze(0) < lengths.unsqueeze(1)):
            return compute(tokens, mask)  # not right-padded: nothing to key on
        lengths_list = lengths.tolist()
        keys = [tokens[i, :n].cpu().numpy().tobytes() for i, n in enumerate(lengths_list)]
        missing: Dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in self._rows and key not in missing:
                missing[key] = i
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        if missing:
            rows = list(missing.values())
            width = max(lengths_list[i] for i in rows)
            computed = compute(tokens[rows, :width], mask[rows, :width])
            self._widths = {d: [piece.size(-1) for piece in computed[d]] for d in computed}
            joined = {d: torch.cat(computed[d], dim=-1) for d in computed}
            for j, (key, i) in enumerate(missing.items()):
                # clone: a slice would keep the whole batch's storage alive
                self._rows[key] = {d: joined[d][j, : lengths_list[i]].clone() for d in joined}
        result: LayersByDirection = {}
        for direction, widths in self._widths.items():
            stored = [self._rows[key][direction] for key in keys]
            padded = stored[0].new_zeros(len(keys), mask.size(1), sum(widths))
            for i, row in enumerate(stored):
                padded[i, : row.size(0)] = row
            result[direction] = list(torch.split(padded, widths, dim=-1))
        return result
