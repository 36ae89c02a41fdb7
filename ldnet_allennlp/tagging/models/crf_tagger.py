from typing import Callable, Dict, List

from allennlp.models import Model
from allennlp.modules.conditional_random_field import ConditionalRandomField
from allennlp_models.tagging.models.crf_tagger import CrfTagger

from ldnet_allennlp.tagging.viterbi_crf import BatchedViterbiCrf
from ldnet_allennlp.tagging.metrics import DistributedSpanBasedF1Measure


@Model.register("ldnet_crf_tagger")
class LdnetCrfTagger(CrfTagger):
    """
    allennlp-models' `crf_tagger` with four differences, and the same config keys and weights:

    - its archives name our offline `ldnet_tagger` predictor as their default, so
      `allennlp predict model.tar.gz input.jsonl` needs no `--predictor` flag (`crf_tagger`'s
      default, `sentence_tagger`, loads spaCy's `en_core_web_sm`, which cannot be downloaded here);
    - its span F1 aggregates over DDP workers (`DistributedSpanBasedF1Measure`), where
      `crf_tagger`'s raises under `"distributed"` training in AllenNLP 2.10.1;
    - `metric_extensions`: functions from its metrics to more metrics, which `get_metrics` adds
      (empty unless a trainer callback adds one: `layer_pruning` reports the layer masks and the
      within-budget metric this way);
    - its CRF decodes the whole batch at once (`BatchedViterbiCrf`, `tagging/viterbi.py`), with
      exactly the tags and scores of AllenNLP's per-sentence Viterbi, in `forward` and so in
      `allennlp predict`, `evaluate`, validation and the benchmarks. The CRF keeps its class's
      parameters and state-dict keys, so every archive loads as before. (A CRF with
      `label_weights` is one of AllenNLP's weighted subclasses and keeps AllenNLP's decoder.)
    """

    default_predictor = "ldnet_tagger"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if type(self.crf) is ConditionalRandomField:
            BatchedViterbiCrf.adopt(self.crf)
        if self.calculate_span_f1:
            self._f1_metric = DistributedSpanBasedF1Measure(
                self.vocab, tag_namespace=self.label_namespace, label_encoding=self.label_encoding
            )
        self.metric_extensions: List[Callable[[Dict[str, float]], Dict[str, float]]] = []

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        metrics = super().get_metrics(reset=reset)
        for extension in self.metric_extensions:
            metrics.update(extension(metrics))
        return metrics
