from collections import Counter
from typing import Dict, List

import torch
import torch.distributed as dist

from allennlp.nn.util import dist_reduce_sum, is_distributed
from allennlp.training.metrics import Metric, SpanBasedF1Measure


@Metric.register("distributed_span_f1")
class DistributedSpanBasedF1Measure(SpanBasedF1Measure):
    """
    AllenNLP's `SpanBasedF1Measure`, which raises under DDP ("Distributed aggregation for
    SpanBasedF1Measure is currently not supported" in AllenNLP 2.10.1), made to aggregate: the
    per-tag true-positive / false-positive / false-negative counts are summed over all workers
    before precision, recall and F1 are computed, so every worker reports the value a single
    process would report on all the predictions. Outside DDP it is `SpanBasedF1Measure` exactly.
    Constructor arguments: those of `SpanBasedF1Measure`.
    """

    def get_metric(self, reset: bool = False) -> Dict[str, float]:
        true_positives, false_positives, false_negatives = self._summed_counts()
        all_metrics: Dict[str, float] = {}
        tags = set(true_positives) | set(false_positives) | set(false_negatives)
        for tag in tags:
            precision, recall, f1_measure = self._compute_metrics(
                true_positives[tag], false_positives[tag], false_negatives[tag]
            )
            all_metrics["precision-" + tag] = precision
            all_metrics["recall-" + tag] = recall
            all_metrics["f1-measure-" + tag] = f1_measure
        precision, recall, f1_measure = self._compute_metrics(
            sum(true_positives.values()),
            sum(false_positives.values()),
            sum(false_negatives.values()),
        )
        all_metrics["precision-overall"] = precision
        all_metrics["recall-overall"] = recall
        all_metrics["f1-measure-overall"] = f1_measure
        if reset:
            self.reset()
        return all_metrics

    def _summed_counts(self) -> List[Counter]:
        local = [Counter(self._true_positives), Counter(self._false_positives)]
        local.append(Counter(self._false_negatives))
        if not is_distributed():
            return local
        # Workers may have seen different tags: agree on the union, in one order, first.
        worker_tags: List[List[str]] = [[] for _ in range(dist.get_world_size())]
        dist.all_gather_object(worker_tags, sorted(set().union(*local)))
        tags = sorted(set().union(*worker_tags))
        counts = torch.tensor([[counter[tag] for tag in tags] for counter in local])
        summed = dist_reduce_sum(counts)
        return [Counter(dict(zip(tags, row.tolist()))) for row in summed]
