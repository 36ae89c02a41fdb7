// Fine-tunes the forward dense LM on the tagging task's training sentences (see lm_finetune.libsonnet).
//   python scripts/conll_to_lm_text.py ../shared/data/conll2003/eng.train runs/lm_finetune/conll03_train.txt
//   python scripts/conll_to_lm_text.py ../shared/data/conll2003/eng.testa runs/lm_finetune/conll03_dev.txt
//   FORWARD_LM_ARCHIVE=runs/lm_forward/model.tar.gz LM_FINETUNE_TRAIN_PATH=runs/lm_finetune/conll03_train.txt \
//   LM_FINETUNE_DEV_PATH=runs/lm_finetune/conll03_dev.txt \
//   allennlp train training_configs/tagging/lm_finetune_forward.jsonnet -s runs/lm_finetune/forward --include-package ldnet_allennlp
// then train ner_ldnet.jsonnet with FORWARD_LM_ARCHIVE=runs/lm_finetune/forward/model.tar.gz.
// Only the tagging data's *training* (and dev, for perplexity) text is used, never its test set.
local finetune = import "lm_finetune.libsonnet";
finetune(std.extVar("FORWARD_LM_ARCHIVE"), "forward")
