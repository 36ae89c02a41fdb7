"""
A CRF tagger's soft targets for distillation into a student tagger: per token, the posterior
marginals `p(y_t = k | x)` of one or more trained taggers (`crf_marginals`), averaged over an
ensemble (`CrfEnsembleTeacher`, the `Teacher` registered as `"crf_ensemble"`), and a silver tag
sequence decoded from them (`silver_tags`).
"""

from typing import List, Optional, Sequence

import numpy
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.modules.conditional_random_field import allowed_transitions
from allennlp.nn.util import move_to_device

from ldnet_allennlp.distillation.teacher import Teacher, label_order
from ldnet_allennlp.pretrained import resolve_archive
from ldnet_allennlp.tagging.crf_marginals import crf_marginals
from ldnet_allennlp.tagging.models.crf_tagger import crf_tagger_emissions
from ldnet_allennlp.tagging.viterbi import viterbi_tags, viterbi_transitions


@Teacher.register("crf_ensemble")
class CrfEnsembleTeacher(Teacher):
    """
    The average of the CRF posterior marginals of one or more tagger archives (`crf_tagger` or
    `ldnet_crf_tagger`), each run batched on its own indexers and vocabulary. The output's tags
    are the first archive's, in its order, then any tag only a later archive has; a tagger gives
    probability 0 to a tag it lacks (e.g. a rare tag its training file never showed). The
    archives must share their label encoding and all but a few tags.

    Its `labels` and `label_encoding` are the ensemble's tags and their span encoding.

    # Parameters

    archives : `List[str]`
        Tagger archives, or `"pretrained:<name>"`.
    cuda_device : `int`, optional (default = `-1`)
    """

    def __init__(self, archives: List[str], cuda_device: int = -1) -> None:
        if not archives:
            raise ConfigurationError("crf_ensemble: give at least one tagger archive")
        self.archive_files = list(archives)
        self.models: List[Model] = []
        self.readers = []
        self.labels: List[str] = []
        own_labels: List[List[str]] = []
        for archive_file in archives:
            archive = load_archive(resolve_archive(archive_file), cuda_device=cuda_device)
            model = archive.model.eval()
            namespace = getattr(model, "label_namespace", None)
            if namespace is None or not hasattr(model, "crf"):
                raise ConfigurationError(f"{archive_file}: not a CRF tagger archive")
            labels = label_order(model, namespace)
            encoding = getattr(model, "label_encoding", None)
            if not self.models:
                self.label_encoding = encoding
            elif encoding != self.label_encoding or len(set(labels) & set(self.labels)) < 0.9 * max(
                len(labels), len(self.labels)
            ):
                raise ConfigurationError(
                    f"{archive_file}: its tags {sorted(labels)} ({encoding}) are not those of "
                    f"{archives[0]} {sorted(self.labels)} ({self.label_encoding}); an ensemble "
                    "needs one tag set"
                )
            self.labels += [tag for tag in labels if tag not in self.labels]
            own_labels.append(labels)
            self.models.append(model)
            self.readers.append(archive.validation_dataset_reader)
        # output column j is the model's column columns[j], or 0 where the model lacks the tag
        self.columns = [
            torch.tensor([labels.index(t) if t in labels else len(labels) for t in self.labels])
            for labels in own_labels
        ]

    def _instances(self, reader, sentences: Sequence[Sequence[str]]) -> List[Instance]:
        instances = [
            reader.text_to_instance([Token(word) for word in words]) for words in sentences
        ]
        for instance in instances:
            reader.apply_token_indexers(instance)
        return instances

    def soft_targets(self, inputs: Sequence[Sequence[str]]) -> List[numpy.ndarray]:
        """The `marginals` of each sentence (`Teacher.soft_targets`)."""
        return self.marginals(inputs)

    @torch.inference_mode()
    def marginals(self, sentences: Sequence[Sequence[str]]) -> List[numpy.ndarray]:
        """
        The averaged marginals of each tokenized sentence: one `(len(sentence), len(labels))`
        float32 array per sentence, rows summing to 1.
        """
        total: Optional[torch.Tensor] = None
        mask = None
        for model, reader, columns in zip(self.models, self.readers, self.columns):
            batch = Batch(self._instances(reader, sentences))
            batch.index_instances(model.vocab)
            device = next(model.parameters()).device
            tensors = move_to_device(batch.as_tensor_dict(), device)
            logits, mask = crf_tagger_emissions(model, tensors["tokens"])
            own = crf_marginals(model.crf, logits, mask)
            padded = torch.cat([own, own.new_zeros(own.shape[:2] + (1,))], dim=2)
            probabilities = padded[:, :, columns.to(device)]
            total = probabilities if total is None else total + probabilities
        assert total is not None and mask is not None
        average = (total / len(self.models)).float().cpu().numpy()
        lengths = mask.sum(dim=1).tolist()
        return [average[i, :length] for i, length in enumerate(lengths)]


def silver_tags(
    marginals: Sequence[numpy.ndarray], labels: List[str], label_encoding: Optional[str]
) -> List[List[str]]:
    """
    The tag sequence of each sentence with the largest sum of log marginals among the sequences
    `label_encoding` allows (Viterbi over `log p(y_t = k | x)` with only the allowed transitions):
    a valid span sequence that agrees with the teacher's per-token beliefs. With one teacher it is
    close to, not always equal to, that teacher's own Viterbi path.

    # Parameters

    marginals : `Sequence[numpy.ndarray]`
        `(length, num_tags)` per sentence, columns in the order of `labels`.
    labels : `List[str]`
    label_encoding : `str`, optional
        `"BIO"`, `"BIOUL"`, `"IOB1"` or `"BMES"`; `None` allows every transition.
    """
    if not marginals:
        return []
    num_tags = len(labels)
    if label_encoding is None:
        constraint_mask = torch.ones(num_tags + 2, num_tags + 2)
    else:
        constraint_mask = torch.zeros(num_tags + 2, num_tags + 2)
        for i, j in allowed_transitions(label_encoding, dict(enumerate(labels))):
            constraint_mask[i, j] = 1.0
    transitions = viterbi_transitions(torch.zeros(num_tags, num_tags), constraint_mask)
    longest = max(len(m) for m in marginals)
    emissions = torch.full((len(marginals), max(longest, 1), num_tags), 0.0)
    mask = torch.zeros(len(marginals), max(longest, 1), dtype=torch.bool)
    for row, sentence in enumerate(marginals):
        emissions[row, : len(sentence)] = torch.from_numpy(numpy.log(sentence + 1e-12))
        mask[row, : len(sentence)] = True
    decoded = viterbi_tags(emissions, mask, transitions)
    return [[labels[k] for k in tags] for tags, _ in decoded]
