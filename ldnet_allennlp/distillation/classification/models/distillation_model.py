"""
Tang et al. (2019)'s BiLSTM student, trained on gold labels and/or a teacher's logits.
"""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.archival import load_archive
from allennlp.models.model import Model
from allennlp.modules import Seq2VecEncoder, TextFieldEmbedder
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import CategoricalAccuracy, F1Measure

from ldnet_allennlp.distillation.classification.dataset_readers.distillation_readers import (
    DistillationTsvReader,
)
from ldnet_allennlp.distillation.classification.teacher import ClassifierTeacher
from ldnet_allennlp.distillation.teacher import label_order


def distillation_loss(
    logits: torch.Tensor,
    labels: torch.LongTensor,
    teacher_logits: Optional[torch.Tensor],
    alpha: float,
) -> torch.Tensor:
    """
    `alpha * CE(labels, softmax(logits)) + (1 - alpha) * ||teacher_logits - logits||^2`, both
    terms averaged over the batch; the squared distance is summed over the classes (Tang et al.,
    eq. 1). Without `teacher_logits` the loss is the cross-entropy alone.

    # Parameters

    logits : `torch.Tensor`, `(batch_size, num_labels)`
    labels : `torch.LongTensor`, `(batch_size,)`
    teacher_logits : `torch.Tensor`, optional, `(batch_size, num_labels)`
    alpha : `float`
        The weight of the cross-entropy.

    # Returns

    The loss, a scalar.
    """
    cross_entropy = torch.nn.functional.cross_entropy(logits, labels)
    if teacher_logits is None:
        return cross_entropy
    squared_distance = ((teacher_logits - logits) ** 2).sum(dim=-1).mean()
    return alpha * cross_entropy + (1.0 - alpha) * squared_distance


def pair_features(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """
    `[h1; h2; h1 * h2; |h1 - h2|]` (Tang et al., sentence-pair student).

    # Parameters

    first : `torch.Tensor`, `(batch_size, dim)`
    second : `torch.Tensor`, `(batch_size, dim)`

    # Returns

    `(batch_size, 4 * dim)`.
    """
    return torch.cat([first, second, first * second, (first - second).abs()], dim=-1)


@Model.register("distillation_student")
class DistillationModel(Model):
    """
    The student of Tang et al. (2019): a single-layer BiLSTM over word embeddings whose sentence
    vector is the last forward and last backward hidden state (padding masked), followed by a
    ReLU fully-connected layer and a linear layer to the logits. For sentence pairs the same
    encoder reads both sentences (siamese) and the classifier sees `[h1; h2; h1*h2; |h1-h2|]`.

    Loss: `alpha * CE + (1 - alpha) * ||z_teacher - z_student||^2` when the batch has teacher
    logits, plain cross-entropy otherwise (the "BiLSTM" baseline). The teacher logits come from
    the transfer set (`teacher_logits`), or, with `teacher_archive`, are computed online for a
    batch without them that carries its raw text (`metadata.texts`, a `distillation_tsv` reader
    with `keep_text: true`) and has gold labels or is a training batch. A hard label missing from
    a batch with teacher logits is the teacher's argmax.

    # Parameters

    vocab : `Vocabulary`
    text_field_embedder : `TextFieldEmbedder`
        Word embeddings.
    encoder : `Seq2VecEncoder`
        The BiLSTM: `{"type": "lstm", "bidirectional": true, "num_layers": 1, ...}` (AllenNLP's
        `LstmSeq2VecEncoder` returns the final states of both directions, masks respected).
    hidden_dim : `int`, optional (default = `200`)
        Width of the ReLU fully-connected layer.
    dropout : `float`, optional (default = `0.0`)
        Dropout on the embeddings and on the sentence vector.
    alpha : `float`, optional (default = `0.0`)
        Weight of the cross-entropy term; Tang et al.'s best setting is 0 (pure logit MSE).
    sentence_pair : `bool`, optional (default = `False`)
        Pair mode: inputs `premise` and `hypothesis` instead of `tokens`.
    label_namespace : `str`, optional (default = `"labels"`)
    positive_label : `str`, optional
        Also report precision/recall/F1 of this label (paraphrase tasks, e.g. MRPC's "1").
    teacher_archive : `str`, optional
        A fine-tuned teacher's `model.tar.gz` (`sst2_teacher.jsonnet`) for online teacher
        logits. Loaded once, at the first batch that needs it (so a trained student's archive
        loads, predicts and evaluates on plain TSV files without the teacher), on the student's
        device, in eval mode and frozen (`requires_grad=False`). It is kept out of the module
        tree: not in `state_dict()`, `parameters()` (the optimizer never sees it) or `train()`.
        Its instances are built by its own archive's reader from `metadata.texts`; its label
        set must equal the student's (its label order may differ).
    """

    default_predictor = "distillation_classifier"

    def __init__(
        self,
        vocab: Vocabulary,
        text_field_embedder: TextFieldEmbedder,
        encoder: Seq2VecEncoder,
        hidden_dim: int = 200,
        dropout: float = 0.0,
        alpha: float = 0.0,
        sentence_pair: bool = False,
        label_namespace: str = "labels",
        positive_label: Optional[str] = None,
        teacher_archive: Optional[str] = None,
        initializer: InitializerApplicator = InitializerApplicator(),
        **kwargs,
    ) -> None:
        super().__init__(vocab, **kwargs)
        if text_field_embedder.get_output_dim() != encoder.get_input_dim():
            raise ConfigurationError(
                f"encoder input dim {encoder.get_input_dim()} does not match "
                f"text_field_embedder output dim {text_field_embedder.get_output_dim()}"
            )
        if not 0.0 <= alpha <= 1.0:
            raise ConfigurationError(f"alpha must be in [0, 1], got {alpha}")
        self.text_field_embedder = text_field_embedder
        self.encoder = encoder
        self.alpha = alpha
        self.label_namespace = label_namespace
        self.num_labels = vocab.get_vocab_size(label_namespace)
        self.dropout = torch.nn.Dropout(dropout)
        self.hidden_dim = hidden_dim
        sentence_dim = encoder.get_output_dim()
        self.sentence_pair = sentence_pair
        self.hidden_layer = torch.nn.Linear((4 if sentence_pair else 1) * sentence_dim, hidden_dim)
        self.output_layer = torch.nn.Linear(hidden_dim, self.num_labels)
        self.accuracy = CategoricalAccuracy()
        self.f1: Optional[F1Measure] = None
        if positive_label is not None:
            index = vocab.get_token_index(positive_label, label_namespace)
            self.f1 = F1Measure(index)
        self._teacher_order_cache: Dict[Tuple[str, ...], torch.LongTensor] = {}
        self.teacher_archive = teacher_archive
        # [teacher model, its reader, teacher_order] once loaded: a plain list, so that the
        # teacher is no submodule (not saved, not trained, not switched to train mode).
        self._online_teacher: List[Any] = []
        initializer(self)

    def encode(self, tokens: TextFieldTensors) -> torch.Tensor:
        """Sentence vectors `(batch_size, encoder_output_dim)`: last fwd + last bwd states."""
        mask = util.get_text_field_mask(tokens)
        embedded = self.dropout(self.text_field_embedder(tokens))
        return self.dropout(self.encoder(embedded, mask))

    def forward(  # type: ignore
        self,
        tokens: Optional[TextFieldTensors] = None,
        premise: Optional[TextFieldTensors] = None,
        hypothesis: Optional[TextFieldTensors] = None,
        label: Optional[torch.LongTensor] = None,
        teacher_logits: Optional[torch.Tensor] = None,
        metadata: Optional[List[Dict[str, Any]]] = None,
    ) -> Dict[str, torch.Tensor]:
        """
        # Parameters

        tokens : `TextFieldTensors`, optional
            A single-sentence input.
        premise, hypothesis : `TextFieldTensors`, optional
            A pair.
        label : `torch.LongTensor`, optional, `(batch_size,)`
        teacher_logits : `torch.Tensor`, optional, `(batch_size, num_teacher_labels)`
            In the order `metadata[i]["teacher_labels"]`, reordered here to the student's label
            vocabulary.
        metadata : `List[Dict[str, Any]]`, optional
            Per instance, `teacher_labels` and `transfer_set` (transfer-set rows) or `texts`
            (the raw sentence(s), for the online teacher).
        """
        if self.sentence_pair:
            if premise is None or hypothesis is None:
                raise ConfigurationError(
                    "sentence_pair is true but the instances have no 'premise'/'hypothesis'"
                )
            features = pair_features(self.encode(premise), self.encode(hypothesis))
        else:
            if tokens is None:
                raise ConfigurationError(
                    "sentence_pair is false but the instances have no 'tokens' field"
                )
            features = self.encode(tokens)
        logits = self.output_layer(torch.relu(self.hidden_layer(features)))
        output = {"logits": logits, "probs": torch.softmax(logits, dim=-1)}

        if teacher_logits is not None:
            teacher_labels = metadata[0]["teacher_labels"] if metadata else ()
            path = metadata[0].get("transfer_set") if metadata else None
            source = f"header of transfer set {path}" if path else "transfer-set header"
            order = self.teacher_order(teacher_labels, source).to(logits.device)
            teacher_logits = teacher_logits[:, order]
        elif self.teacher_archive is not None and (label is not None or self.training):
            # online teacher; an evaluation batch without raw text (the plain validation
            # reader) keeps the cross-entropy alone, as with a transfer set
            if self.training or (metadata and "texts" in metadata[0]):
                teacher_logits = self.online_teacher_logits(metadata, logits.device)
        if teacher_logits is not None and label is None:
            label = teacher_logits.argmax(dim=-1)
        if label is not None:
            output["loss"] = distillation_loss(logits, label.long(), teacher_logits, self.alpha)
            self.accuracy(logits, label)
            if self.f1 is not None:
                self.f1(logits, label)
        return output

    def teacher_order(
        self, teacher_labels: Sequence[str], source: str = "transfer-set header"
    ) -> torch.LongTensor:
        """
        Index `i` of the result is the teacher column of the student's label `i`. An error naming
        `source` (where the teacher's labels come from: a transfer set's header, or
        `model.teacher_archive`) if the two label sets differ (e.g. a teacher trained on another
        task).
        """
        key = tuple(teacher_labels)
        if key not in self._teacher_order_cache:
            student_labels = label_order(self, self.label_namespace)
            if sorted(student_labels) != sorted(key):
                raise ConfigurationError(
                    f"The teacher's label vocabulary {list(key)} ({source}) differs "
                    f"from the student's label vocabulary {student_labels}"
                )
            order = [key.index(label) for label in student_labels]
            self._teacher_order_cache[key] = torch.tensor(order, dtype=torch.long)
        return self._teacher_order_cache[key]

    def online_teacher(
        self, device: torch.device
    ) -> Tuple[Model, DistillationTsvReader, torch.LongTensor]:
        """
        `(teacher model, its reader, order)` from `teacher_archive`, loaded at the first call,
        frozen and in eval mode, moved to `device`; `order` is `teacher_order` of its labels.
        Raises a `ConfigurationError` naming `model.teacher_archive` when the file is missing,
        its reader is not a `distillation_tsv` reader of the student's kind (single sentence or
        pair), or its label set differs from the student's.
        """
        where = f"model.teacher_archive {self.teacher_archive!r}"
        if not self._online_teacher:
            if not os.path.isfile(self.teacher_archive):
                raise ConfigurationError(
                    f"{where}: no such file (a fine-tuned teacher's model.tar.gz is needed to "
                    "compute the teacher logits of instances that have none)"
                )
            archive = load_archive(self.teacher_archive)
            teacher, reader = archive.model, archive.validation_dataset_reader
            if not isinstance(reader, DistillationTsvReader):
                raise ConfigurationError(
                    f"{where}: the teacher's dataset reader must be a 'distillation_tsv' "
                    f"reader, got {type(reader).__name__}"
                )
            if reader.is_pair != self.sentence_pair:
                kind = "sentence pairs" if reader.is_pair else "single sentences"
                raise ConfigurationError(
                    f"{where}: the teacher reads {kind}, but the student's sentence_pair is "
                    f"{str(self.sentence_pair).lower()}"
                )
            classifier = ClassifierTeacher(teacher, reader)
            order = self.teacher_order(classifier.labels, where)
            for parameter in teacher.parameters():
                parameter.requires_grad_(False)
            teacher.eval()
            self._online_teacher[:] = [classifier, order]
        classifier, order = self._online_teacher
        if next(classifier.model.parameters()).device != device:
            classifier.model.to(device)
        return classifier.model, classifier.reader, order.to(device)

    def online_teacher_logits(
        self, metadata: Optional[List[Dict[str, Any]]], device: torch.device
    ) -> torch.Tensor:
        """
        The online teacher's logits for a batch, `(batch_size, num_labels)` in the student's
        label order, from the raw texts in `metadata[i]["texts"]`; no gradients.
        """
        if not metadata or "texts" not in metadata[0]:
            raise ConfigurationError(
                f"model.teacher_archive {self.teacher_archive!r} is set but the batch has "
                "neither teacher_logits nor its raw text; read the training data with a "
                "'distillation_tsv' reader with keep_text: true (or a transfer set)"
            )
        _, _, order = self.online_teacher(device)  # loaded at the first call
        teacher: ClassifierTeacher = self._online_teacher[0]
        return teacher.soft_targets([m["texts"] for m in metadata])[:, order]

    def make_output_human_readable(
        self, output_dict: Dict[str, torch.Tensor]
    ) -> Dict[str, torch.Tensor]:
        predictions = output_dict["probs"].argmax(dim=-1).tolist()
        output_dict["label"] = [
            self.vocab.get_token_from_index(i, self.label_namespace) for i in predictions
        ]
        return output_dict

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        metrics = {"accuracy": self.accuracy.get_metric(reset)}
        if self.f1 is not None:
            metrics.update(self.f1.get_metric(reset))
        return metrics
