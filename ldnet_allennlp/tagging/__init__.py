from ldnet_allennlp.tagging.dataset_readers import *  # noqa: F401,F403
from ldnet_allennlp.tagging.models import *  # noqa: F401,F403
from ldnet_allennlp.tagging.predictors import *  # noqa: F401,F403
from ldnet_allennlp.tagging.commands import *  # noqa: F401,F403
