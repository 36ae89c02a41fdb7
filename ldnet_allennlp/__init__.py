"""
ldnet-allennlp: cheap contextual representations for AllenNLP.

Importing this package registers every component with AllenNLP (`--include-package
ldnet_allennlp`, or automatically through `.allennlp_plugins`) and applies the patches in
`ldnet_allennlp.patches` (every change to AllenNLP's behaviour, one module each; docs/components.md,
"What importing ldnet_allennlp changes", lists them). This is the only place they are applied.
"""

from ldnet_allennlp import patches
from ldnet_allennlp.distillation.classification.teacher import (
    TEACHER_MODEL_PATH_VARIABLE,
    installed_teacher_path,
)
from ldnet_allennlp.training.exact_resume import ExactResumeCallback

patches.apply_all(
    default_callbacks=(ExactResumeCallback,),
    environment_defaults={TEACHER_MODEL_PATH_VARIABLE: installed_teacher_path},
)

from ldnet_allennlp.version import VERSION as __version__  # noqa: E402,F401
import ldnet_allennlp.modules  # noqa: E402,F401
import ldnet_allennlp.tagging  # noqa: E402,F401
import ldnet_allennlp.lm  # noqa: E402,F401
import ldnet_allennlp.distillation.classification  # noqa: E402,F401
import ldnet_allennlp.distillation.tagging  # noqa: E402,F401
import ldnet_allennlp.pruning  # noqa: E402,F401
import ldnet_allennlp.glove  # noqa: E402,F401
import ldnet_allennlp.training  # noqa: E402,F401
import ldnet_allennlp.onnx_export  # noqa: E402,F401
import ldnet_allennlp.serving  # noqa: E402,F401
from ldnet_allennlp.pretrained import load_pretrained  # noqa: E402,F401
