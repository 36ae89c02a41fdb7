"""
Records a teacher of scripts/train_teacher.sh in pretrained/teachers/teachers.json: its file,
sha256, config, seed, the training run's best dev F1 and the dev F1 of the shipped (fp16) archive.

    python scripts/record_teacher.py TASK SEED DEV_METRICS_JSON
"""

import json
import os
import sys

from ldnet_allennlp.common.file_utils import file_sha256

task, seed, dev_eval = sys.argv[1], sys.argv[2], sys.argv[3]
run = f"runs/teachers/{task}_seed{seed}"
m = json.load(open(f"{run}/metrics.json"))
ev = json.load(open(dev_eval))
path = f"pretrained/teachers/{task}_seed{seed}.tar.gz"
rec_path = "pretrained/teachers/teachers.json"
recs = json.load(open(rec_path)) if os.path.exists(rec_path) else {}
recs[f"{task}_seed{seed}"] = {
    "file": os.path.basename(path),
    "size_bytes": os.path.getsize(path),
    "sha256": file_sha256(path),
    "config": f"training_configs/tagging/recipe/{task}_ldnet_glove_sgd.jsonnet",
    "seed": int(seed),
    "test_file_read_at_training": False,
    "commands": [
        f"bash scripts/train_teacher.sh {task} {seed}",
        f"allennlp evaluate {path} <dev> --include-package ldnet_allennlp",
        f"python scripts/record_teacher.py {task} {seed} <metrics>",
    ],
    "best_epoch": m["best_epoch"],
    "epochs_trained": m["epoch"] + 1,
    "dev_f1_fp32": 100 * m["best_validation_f1-measure-overall"],
    "dev_f1_fp16_archive": 100 * ev["f1-measure-overall"],
    "training_wallclock": m["training_duration"],
    "note": "one torch thread; the wall-clock was measured while a second training job and "
    "other work shared the machine's 2 cores",
}
json.dump(recs, open(rec_path, "w"), indent=1, sort_keys=True)
open(rec_path, "a").write("\n")
print(json.dumps(recs[f"{task}_seed{seed}"], indent=1))
