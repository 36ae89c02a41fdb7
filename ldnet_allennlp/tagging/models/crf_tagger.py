from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors
from allennlp.models import Model
from allennlp.nn import util
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp_models.tagging.models.crf_tagger import CrfTagger

from ldnet_allennlp.lm.modules.mask_projection import ReportsLayerMasks
from ldnet_allennlp.tagging.crf_marginals import crf_distillation_kl
from ldnet_allennlp.tagging.viterbi_crf import BatchedViterbiCrf
from ldnet_allennlp.tagging.metrics import DistributedSpanBasedF1Measure

DISTILLATION_LOSSES = ("kl", "silver")


@Model.register("ldnet_crf_tagger")
class LdnetCrfTagger(CrfTagger, ReportsLayerMasks):
    """
    allennlp-models' `crf_tagger` with four differences, and the same config keys and weights:

    - its archives name our offline `ldnet_tagger` predictor as their default, so
      `allennlp predict model.tar.gz input.jsonl` needs no `--predictor` flag (`crf_tagger`'s
      default, `sentence_tagger`, loads spaCy's `en_core_web_sm`, which cannot be downloaded here);
    - its span F1 aggregates over DDP workers (`DistributedSpanBasedF1Measure`), where
      `crf_tagger`'s raises under `"distributed"` training in AllenNLP 2.10.1;
    - while the `layer_pruning` callback trains its layer masks, its metrics report them
      (`ReportsLayerMasks`: `live_layers`, each mask, and the within-budget metric that chooses
      the best checkpoint);
    - its CRF decodes the whole batch at once (`BatchedViterbiCrf`, `tagging/viterbi.py`), with
      exactly the tags and scores of AllenNLP's per-sentence Viterbi, in `forward` and so in
      `allennlp predict`, `evaluate`, validation and the benchmarks. The CRF keeps its class's
      parameters and state-dict keys, so every archive loads as before. (A CRF with
      `label_weights` is one of AllenNLP's weighted subclasses and keeps AllenNLP's decoder.)

    And it can learn from a teacher (a pruned student, `ldnet_tagging_distillation` reader):
    given batches whose instances have `teacher_marginals` and `transfer`, its loss is the CRF
    negative log-likelihood of the gold sentences plus `distillation_weight` times a
    distillation term on the transfer sentences, both summed over the batch:

    - `"kl"`: `Σ_t KL(q_t || p_t)`, from the teacher's marginals `q_t` to the student's CRF
      marginals `p_t` (`crf_distillation_kl`);
    - `"silver"`: the CRF negative log-likelihood of the teacher's silver tag sequence.

    Without those fields (validation, evaluation, prediction, any other reader) it is the plain
    tagger. Span F1 during training counts the gold sentences only.

    # Parameters

    Those of `crf_tagger`, plus:

    distillation_loss : `str`, optional (default = `"kl"`)
        `"kl"` or `"silver"`.
    distillation_weight : `float`, optional (default = `1.0`)
    """

    default_predictor = "ldnet_tagger"

    def __init__(
        self,
        *args,
        distillation_loss: str = "kl",
        distillation_weight: float = 1.0,
        **kwargs,
    ) -> None:
        if distillation_loss not in DISTILLATION_LOSSES:
            raise ConfigurationError(
                f"distillation_loss: one of {DISTILLATION_LOSSES}, got {distillation_loss!r}"
            )
        if distillation_weight < 0:
            raise ConfigurationError(f"distillation_weight must be >= 0, got {distillation_weight}")
        super().__init__(*args, **kwargs)
        self.distillation_loss = distillation_loss
        self.distillation_weight = distillation_weight
        self._teacher_columns: Dict[Tuple[str, ...], torch.Tensor] = {}
        if type(self.crf) is ConditionalRandomField:
            self.crf = BatchedViterbiCrf.copy_of(self.crf)
        if self.calculate_span_f1:
            self._f1_metric = DistributedSpanBasedF1Measure(
                self.vocab, tag_namespace=self.label_namespace, label_encoding=self.label_encoding
            )

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        metrics = super().get_metrics(reset=reset)
        metrics.update(self.layer_mask_metrics(metrics))
        return metrics

    def forward(  # type: ignore
        self,
        tokens: TextFieldTensors,
        tags: Optional[torch.LongTensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
        ignore_loss_on_o_tags: Optional[bool] = None,
        teacher_marginals: Optional[torch.Tensor] = None,
        transfer: Optional[torch.Tensor] = None,
        **kwargs,
    ) -> Dict[str, Any]:
        """
        `CrfTagger.forward`, with the same outputs, loss and metrics; with `teacher_marginals`
        `(batch, num_tokens, num_teacher_tags)` and `transfer` `(batch,)` (1 for a transfer
        sentence), the distillation loss of the class doc.

        The metrics are computed on the CPU from the decoded paths (which the decoder hands
        back as lists) and the gold tags, copied over once per batch: on a GPU that is one
        host-device copy where `CrfTagger` writes every token's tag into a device tensor and
        its metrics sync once per sentence.
        """
        logits, mask = crf_tagger_emissions(self, tokens)
        best_paths = self.crf.viterbi_tags(logits, mask, top_k=self.top_k)
        predicted = [paths[0][0] for paths in best_paths]
        output: Dict[str, Any] = {"logits": logits, "mask": mask, "tags": predicted}
        if self.top_k > 1:
            output["top_k_tags"] = best_paths
        if tags is not None:
            distilling = transfer is not None and teacher_marginals is not None
            if distilling:
                output["loss"] = self._distillation_loss(
                    logits, mask, tags, metadata, teacher_marginals, transfer, predicted
                )
            else:
                output["loss"] = -self.crf(
                    logits, tags, self._crf_mask(tags, mask, ignore_loss_on_o_tags)
                )
                self._update_metrics(predicted, logits, tags, mask)
        if metadata is not None:
            output["words"] = [x["words"] for x in metadata]
        return output

    def _crf_mask(
        self, tags: torch.Tensor, mask: torch.BoolTensor, ignore_loss_on_o_tags: Optional[bool]
    ) -> torch.BoolTensor:
        if ignore_loss_on_o_tags is None:
            ignore_loss_on_o_tags = self.ignore_loss_on_o_tags
        if not ignore_loss_on_o_tags:
            return mask
        o_tag_index = self.vocab.get_token_index("O", namespace=self.label_namespace)
        return mask & (tags != o_tag_index)

    def _update_metrics(
        self,
        paths: List[List[int]],
        logits: torch.Tensor,
        tags: torch.Tensor,
        mask: torch.BoolTensor,
    ) -> None:
        """`CrfTagger`'s metrics of the decoded `paths` against `tags`, on the CPU."""
        gold = torch.stack([tags.long(), mask.long()]).cpu()
        predicted = _one_hot_paths(paths, gold.size(2), logits.size(2), logits.dtype)
        gold_tags, gold_mask = gold[0], gold[1].bool()
        for metric in self.metrics.values():
            metric(predicted, gold_tags, gold_mask)
        if self.calculate_span_f1:
            self._f1_metric(predicted, gold_tags, gold_mask)
        elif self._verbose_metrics:
            self._f_beta_measure(predicted, gold_tags, gold_mask)

    def _distillation_loss(
        self,
        logits: torch.Tensor,
        mask: torch.BoolTensor,
        tags: torch.Tensor,
        metadata: Optional[List[Dict[str, Any]]],
        teacher_marginals: torch.Tensor,
        transfer: torch.Tensor,
        predicted: List[List[int]],
    ) -> torch.Tensor:
        """The class doc's loss; the metrics count the gold sentences only."""
        is_transfer = transfer > 0.5
        gold = ~is_transfer
        loss = logits.new_zeros(())
        if gold.any():
            loss = loss - self.crf(logits[gold], tags[gold], mask[gold])
            rows = gold.nonzero().view(-1).tolist()
            self._update_metrics([predicted[row] for row in rows], logits, tags[gold], mask[gold])
        if is_transfer.any() and self.distillation_weight > 0:
            if self.distillation_loss == "kl":
                assert metadata is not None
                columns = self._teacher_order(metadata[0]["teacher_labels"])
                targets = teacher_marginals[is_transfer][:, :, columns]
                term = crf_distillation_kl(
                    self.crf, logits[is_transfer], mask[is_transfer], targets
                )
            else:
                term = -self.crf(logits[is_transfer], tags[is_transfer], mask[is_transfer])
            loss = loss + self.distillation_weight * term
        return loss

    def _teacher_order(self, teacher_labels: List[str]) -> torch.Tensor:
        """Column j: the position of this model's tag j in the teacher's tag order."""
        key = tuple(teacher_labels)
        if key not in self._teacher_columns:
            size = self.vocab.get_vocab_size(self.label_namespace)
            own = [self.vocab.get_token_from_index(i, self.label_namespace) for i in range(size)]
            missing = sorted(set(own) ^ set(teacher_labels))
            if missing:
                raise ConfigurationError(
                    f"the teacher's tags and this tagger's differ in {missing}; a transfer set "
                    "must come from a teacher with the student's tag set"
                )
            self._teacher_columns[key] = torch.tensor([teacher_labels.index(t) for t in own])
        return self._teacher_columns[key]


def crf_tagger_emissions(
    model: CrfTagger, tokens: TextFieldTensors
) -> Tuple[torch.Tensor, torch.BoolTensor]:
    """
    A `CrfTagger`'s network, as its `forward` runs it (dropout in training): the CRF's input
    `(batch, num_tokens, num_tags)` and the mask `(batch, num_tokens)`. For any `crf_tagger`,
    ours or allennlp-models'.
    """
    embedded = model.text_field_embedder(tokens)
    mask = util.get_text_field_mask(tokens)
    if model.dropout:
        embedded = model.dropout(embedded)
    encoded = model.encoder(embedded, mask)
    if model.dropout:
        encoded = model.dropout(encoded)
    if model._feedforward is not None:
        encoded = model._feedforward(encoded)
    return model.tag_projection_layer(encoded), mask


def _one_hot_paths(
    paths: List[List[int]], num_tokens: int, num_tags: int, dtype: torch.dtype
) -> torch.Tensor:
    """
    The decoded `paths` as "class probabilities" `(len(paths), num_tokens, num_tags)` on the
    CPU: 1 at each path's tag, 0 elsewhere and past its end (what `CrfTagger` feeds its metrics).
    """
    ids = torch.tensor([path + [0] * (num_tokens - len(path)) for path in paths], dtype=torch.long)
    kept = torch.tensor([[True] * len(path) + [False] * (num_tokens - len(path)) for path in paths])
    one_hot = torch.nn.functional.one_hot(ids, num_tags).to(dtype)
    return one_hot * kept.unsqueeze(2).to(dtype)
