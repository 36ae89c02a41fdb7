from allennlp.models import Model
from allennlp_models.tagging.models.crf_tagger import CrfTagger


@Model.register("ldnet_crf_tagger")
class LdnetCrfTagger(CrfTagger):
    """
    allennlp-models' `crf_tagger`, unchanged, except that its archives name our offline
    `ldnet_tagger` predictor as their default, so `allennlp predict model.tar.gz input.jsonl`
    needs no `--predictor` flag. (`crf_tagger`'s default, `sentence_tagger`, loads spaCy's
    `en_core_web_sm`, which is not installed and cannot be downloaded here.)

    Config keys: exactly those of `crf_tagger`.
    """

    default_predictor = "ldnet_tagger"
