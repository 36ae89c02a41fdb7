"""
Tang et al. (2019)'s BiLSTM student, trained on gold labels and/or a teacher's logits.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import TextFieldTensors, Vocabulary
from allennlp.models.model import Model
from allennlp.modules import Seq2VecEncoder, TextFieldEmbedder
from allennlp.nn import InitializerApplicator, util
from allennlp.training.metrics import CategoricalAccuracy, F1Measure


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

    logits, teacher_logits : `(batch_size, num_labels)`; labels : `(batch_size,)`.
    """
    cross_entropy = torch.nn.functional.cross_entropy(logits, labels)
    if teacher_logits is None:
        return cross_entropy
    squared_distance = ((teacher_logits - logits) ** 2).sum(dim=-1).mean()
    return alpha * cross_entropy + (1.0 - alpha) * squared_distance


def pair_features(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """
    `[h1; h2; h1 * h2; |h1 - h2|]` (Tang et al., sentence-pair student).
    first, second : `(batch_size, dim)` → `(batch_size, 4 * dim)`.
    """
    return torch.cat([first, second, first * second, (first - second).abs()], dim=-1)


@Model.register("distillation_student")
class DistillationModel(Model):
    """
    The student of Tang et al. (2019): a single-layer BiLSTM over word embeddings whose sentence
    vector is the last forward and last backward hidden state (padding masked), followed by a
    ReLU fully-connected layer and a linear layer to the logits. For sentence pairs the same
    encoder reads both sentences (siamese) and the classifier sees `[h1; h2; h1*h2; |h1-h2|]`.

    Loss: `alpha * CE + (1 - alpha) * ||z_teacher - z_student||^2` when the batch has
    `teacher_logits` (a transfer set), plain cross-entropy otherwise (the "BiLSTM" baseline).
    A hard label missing from a batch with teacher logits is the teacher's argmax.

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
        tokens : single-sentence input; or premise and hypothesis : a pair.
        label : `(batch_size,)`; teacher_logits : `(batch_size, num_teacher_labels)`, in the
        order `metadata[i]["teacher_labels"]`, reordered here to the student's label vocabulary.
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
            teacher_logits = teacher_logits[:, self.teacher_order(teacher_labels).to(logits.device)]
            if label is None:
                label = teacher_logits.argmax(dim=-1)
        if label is not None:
            output["loss"] = distillation_loss(logits, label.long(), teacher_logits, self.alpha)
            self.accuracy(logits, label)
            if self.f1 is not None:
                self.f1(logits, label)
        return output

    def teacher_order(self, teacher_labels: Sequence[str]) -> torch.LongTensor:
        """
        Index `i` of the result is the teacher column of the student's label `i`. An error if the
        two label sets differ (e.g. a transfer set from a teacher trained on another task).
        """
        key = tuple(teacher_labels)
        if key not in self._teacher_order_cache:
            student_labels = [
                self.vocab.get_token_from_index(i, self.label_namespace)
                for i in range(self.num_labels)
            ]
            if sorted(student_labels) != sorted(key):
                raise ConfigurationError(
                    f"The teacher's label vocabulary {list(key)} (transfer-set header) differs "
                    f"from the student's label vocabulary {student_labels}"
                )
            order = [key.index(label) for label in student_labels]
            self._teacher_order_cache[key] = torch.tensor(order, dtype=torch.long)
        return self._teacher_order_cache[key]

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
