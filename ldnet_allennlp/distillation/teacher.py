"""
What every distillation teacher is (`Teacher`), and how a trained model's labels are read in
the order of its outputs (`label_order`). Both tasks' teachers implement `Teacher`:

- `classification.teacher.ClassifierTeacher`: a fine-tuned classifier's logits (Tang et al.);
- `tagging.teacher.CrfEnsembleTeacher` (`"crf_ensemble"`): the averaged CRF posterior marginals
  of one or more taggers.
"""

from typing import Any, List, Optional, Sequence

from allennlp.common import Registrable
from allennlp.models import Model


class Teacher(Registrable):
    """
    A trained model that gives a student its soft targets: for each input of a batch, scores
    over `labels`, in that order. A transfer set's header records `labels` as `teacher_labels`,
    and its rows the soft targets, so that a student can map them onto its own label order.

    # Attributes

    labels : `List[str]`
        The teacher's labels, in the order of the soft targets' last dimension.
    label_encoding : `str`, optional
        The span encoding of a tagger's labels (`"BIO"`, `"BIOUL"`, ...); `None` otherwise.

    # Parameters (of `soft_targets`)

    inputs : `Sequence[Any]`
        A batch of the task's inputs: the texts of an example, `(sentence,)` or
        `(premise, hypothesis)`, for a classifier; a sentence's tokens for a tagger.

    # Returns (of `soft_targets`)

    One entry per input, its last dimension `len(labels)`: a classifier's logits
    `(len(inputs), num_labels)` (a `torch.Tensor`); a tagger's `(num_tokens, num_labels)` float32
    marginals per sentence (a list of `numpy.ndarray`, rows summing to 1).
    """

    labels: List[str]
    label_encoding: Optional[str] = None

    def soft_targets(self, inputs: Sequence[Any]) -> Sequence[Any]:
        raise NotImplementedError


def label_order(model: Model, namespace: str) -> List[str]:
    """The labels of `model` in the order of its output columns: the tokens of its vocabulary's
    `namespace`, by index."""
    return [
        model.vocab.get_token_from_index(i, namespace)
        for i in range(model.vocab.get_vocab_size(namespace))
    ]
