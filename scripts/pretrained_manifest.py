#!/usr/bin/env python
"""
Writes `pretrained/MANIFEST.json`: one entry per shipped archive, with what it is, the data it
was trained on and the commands that made it (from `ENTRIES` below), and the figures measured
from the files themselves (size, sha256, parameters, multiply-adds per token) or read from the
benchmark results (perplexity, F1). No figure is typed in by hand.

    python scripts/pretrained_manifest.py
"""

import json
from pathlib import Path
from typing import Any, Dict

from ldnet_allennlp.common.file_utils import file_sha256

ROOT = Path(__file__).resolve().parent.parent
PRETRAINED = ROOT / "pretrained"
RESULTS = ROOT / "benchmarks" / "results"

LM_COMMANDS = [
    "python scripts/prepare_lm_corpus.py --output runs/lm_data",
    "python scripts/pretrain_lms_accelerated.py pack ... (pack_stage*.json under "
    "benchmarks/results/lm_pretraining/ record the files)",
    "python scripts/pretrain_lms_accelerated.py train ... (three stages; each stage's command "
    "is under pretrain_accelerated_<direction>.stages in benchmarks/results/lm.json)",
    "python scripts/pretrain_lms_accelerated.py archive --pack .lm_pack2 --weights "
    "lm_<direction>.th --direction <direction> --fp16 --train-data-path "
    "runs/lm_data/train_with_tasks_clean.txt --output pretrained/lm_<direction>.tar.gz",
    "python benchmarks/lm_benchmark.py --part pretrained",
]

ENTRIES = {
    f"lm_{direction}": {
        "file": f"lm_{direction}.tar.gz",
        "what": f"{direction} dense LSTM language model (LD-Net): 6 dense layers x 128 over "
        "128-d words, projection 256, adaptive softmax over a 40k cased word vocabulary; "
        "`dense_language_model` archive, weights stored in fp16",
        "kind": "dense_language_model",
        "direction": direction,
        "data": "scripts/prepare_lm_corpus.py's train.txt (Reuters-21578, BBC News, NLTK "
        "ABC/Brown/State of the Union; 5.92M tokens) + the words of CoNLL-03 eng.train and "
        "CoNLL-00 train.txt (never dev or test)",
        "commands": LM_COMMANDS,
    }
    for direction in ("forward", "backward")
}

# The taggers behind the tagging study's final figures (tagging.json `final`), shipped
# un-pruned: the run's `model_fp16.tar.gz` written by `python -m benchmarks tagging --ship` (fp16
# weights, the LMs by reference), copied in when its test F1 is within 0.05 of the fp32 one (both
# in tagging.json).
FULL_TAGGERS = {
    "ner": {
        "task": "ner",
        "file": "ner_ldnet.tar.gz",
        "run": "ner_ldnet_glove_sgd",
        "what": "LD-Net NER tagger for English (CoNLL-03 PER/LOC/ORG/MISC, BIOUL): GloVe 6B 50d "
        "+ char CNN + the features of all 12 layers of the shipped LMs, word BiLSTM, CRF, trained "
        "with LD-Net's SGD recipe (training_configs/tagging/recipe/ner_ldnet_glove_sgd.jsonnet); "
        "weights stored in fp16; the frozen LM weights are not in the archive: it refers to "
        "pretrained:lm_forward / pretrained:lm_backward and checks the sha256 of their weights "
        "when loaded",
        "data": "CoNLL-03 eng.train (model picked on eng.testa; F1 on eng.testb)",
    },
    "chunk": {
        "task": "chunk",
        "file": "chunk_ldnet.tar.gz",
        "run": "chunk_ldnet_glove_sgd",
        "what": "LD-Net chunker for English (CoNLL-00 phrase chunks, BIOUL): GloVe 6B 50d + char "
        "CNN + the features of all 12 layers of the shipped LMs, word BiLSTM, CRF, trained with "
        "LD-Net's SGD recipe (training_configs/tagging/recipe/chunk_ldnet_glove_sgd.jsonnet); "
        "weights stored in fp16; the LMs by reference, as for ner",
        "data": "CoNLL-00 train.txt less one sentence in ten (i % 10 == 9; the model is picked on "
        "those 893 sentences; F1 on test.txt)",
    },
}
for _name, _tagger in FULL_TAGGERS.items():
    ENTRIES[_name] = {
        "file": _tagger["file"],
        "what": _tagger["what"],
        "kind": "tagger",
        "task": _tagger["task"],
        "predictor": "ldnet_tagger",
        "data": _tagger["data"],
        "commands": [
            f"python benchmarks/tagging_benchmark.py --runs {_tagger['run']} ... (its command: "
            f"{_tagger['run']}.command in benchmarks/results/tagging.json)",
            f"python benchmarks/tagging_benchmark.py --runs {_tagger['run']} --skip-train --ship "
            f"... (ldnet-prune --keep-all-layers --fp16 --reference-lms; the command: "
            f"{_tagger['run']}.ship_command in benchmarks/results/tagging.json)",
            f"cp runs/tagging/{_tagger['run']}/model_fp16.tar.gz pretrained/{_tagger['file']}",
            "python scripts/pretrained_manifest.py",
        ],
    }

# The pruned taggers: the pruning study's fp16 archive (python -m benchmarks pruning), copied in
# when its test F1 is within 0.05 of the fp32 one (both measured by that run, keys in
# pruning.json).
PRUNED_TAGGERS = {
    "ner_pruned": {
        "task": "ner",
        "what": "LD-Net NER tagger for English (CoNLL-03 PER/LOC/ORG/MISC, BIOUL): ner (LD-Net's "
        "SGD recipe) pruned to a budget of 2 LM layers by "
        "training_configs/tagging/recipe/ner_ldnet_glove_sgd_prune_sticky_lr.jsonnet (LD-Net's "
        "penalty, masks that reach 0 stay at 0, the tagger's SGD restarted at lr 0.006 where "
        "phase 1 ended), word BiLSTM, CRF; weights stored in fp16; the LMs by reference, as for "
        "ner",
        "data": "CoNLL-03 eng.train (model picked on eng.testa; F1 on eng.testb)",
        "f1_key": "conll03_f1",
        "results_prefix": "",
        "prune_flags": "--fp16 --reference-lms",
        # phase 1 = the shipped ner tagger, laid out as a serialization dir by
        # the pruning_budget study (phase1_from_archive) in runs/pruning_budget/ner_phase1
        "phase1_run": "ner_phase1",
        "phase1_command": "python benchmarks/pruning_budget_benchmark.py --task ner --budgets 2 "
        "--epochs 10 --tagger-lr 0.006 --no-speed (phase 1 from pretrained/ner_ldnet.tar.gz into "
        "runs/pruning_budget/ner_phase1, phase 2 into "
        "runs/pruning_budget/ner_budget2_lr0.006_ep10; its dev/test figures in "
        "benchmarks/results/pruning_budget.json)",
        "pruned_fp16": "runs/pruning_ep10/ner_ldnet_glove_sgd_pruned_sticky_lr_fp16.tar.gz",
    },
    "chunk_pruned": {
        "task": "chunk",
        "what": "LD-Net chunker for English (CoNLL-00 phrase chunks, BIOUL): chunk (LD-Net's SGD "
        "recipe) pruned to a budget of 4 LM layers by "
        "training_configs/tagging/recipe/chunk_ldnet_glove_sgd_prune_sticky_lr_budget4.jsonnet "
        "(LD-Net's penalty, masks that reach 0 stay at 0, the tagger's SGD restarted at lr 0.0077 "
        "where phase 1 ended; the smallest budget within 0.3 dev F1), word BiLSTM, CRF; weights "
        "stored in fp16; the LMs by reference, as for "
        "ner",
        "data": "CoNLL-00 train.txt less one sentence in ten (i % 10 == 9; the model is picked on "
        "those 893 sentences; F1 on test.txt)",
        "f1_key": "conll00_f1",
        "results_prefix": "conll00_",
        "prune_flags": "--fp16 --reference-lms",
        # phase 1 = the shipped chunk tagger, laid out as for ner_pruned
        "phase1_run": "chunk_phase1",
        "phase1_command": "python benchmarks/pruning_budget_benchmark.py --task chunk --budgets 4 "
        "--epochs 10 --tagger-lr 0.0077 --no-speed (phase 1 from pretrained/chunk_ldnet.tar.gz "
        "into runs/pruning_budget/chunk_phase1, phase 2 into "
        "runs/pruning_budget/chunk_budget4_lr0.0077_ep10, chosen on dev over budgets 2 and 3; its "
        "dev/test figures in benchmarks/results/pruning_budget.json)",
        "pruned_fp16": "runs/pruning_ep10/"
        "chunk_ldnet_glove_sgd_pruned_sticky_lr_budget4_fp16.tar.gz",
    },
}
for _name, _tagger in PRUNED_TAGGERS.items():
    _task = _tagger["task"]
    ENTRIES[_name] = {
        "file": f"{_task}_ldnet_pruned.tar.gz",
        "what": _tagger["what"],
        "kind": "tagger",
        "task": _task,
        "predictor": "ldnet_tagger",
        "data": _tagger["data"],
        "commands": [
            _tagger.get(
                "phase1_command",
                f"python benchmarks/tagging_benchmark.py --runs {_tagger['phase1_run']} ... (phase "
                f"1; its command: {_tagger['phase1_run']}.command in "
                "benchmarks/results/tagging.json)",
            ),
            "python benchmarks/pruning_benchmark.py --task "
            f"{_task} ... (phase 2 + ldnet-prune {_tagger['prune_flags']}; the commands are under "
            f"{_tagger['results_prefix']}commands in benchmarks/results/pruning.json)",
            f"cp {_tagger['pruned_fp16']} pretrained/{_task}_ldnet_pruned.tar.gz",
            "python scripts/pretrained_manifest.py",
        ],
    }


# The runtime exports (`ldnet_runtime` tags with them without torch, by the tagger's name): the
# default `ldnet-export` of a shipped tagger (int8 graph and word tables), packed into one file.
# Test F1 and tag agreement with AllenNLP: the export study's speed stage, whose `default`
# export has the same graph, tables and vocabularies (the exporter is deterministic; only
# tagger.json's `made_by.archive` names the archive as it was given).
RUNTIME_EXPORTS = {
    "ner_pruned_runtime": {
        "of": "ner_pruned",
        "what": "ner_pruned exported for ldnet_runtime (numpy + onnxruntime, no torch): "
        "ldnet-export's default, the graph's MatMul and LSTM weights in int8 and the word tables "
        "(LM input embeddings, word embeddings, character-CNN outputs for every word of the "
        "vocabularies) in int8 with one scale per row; packed as .tar.xz; ldnet-tag and "
        "ldnet_runtime.Tagger find it by the name ner_pruned and unpack it into their cache",
    },
}
for _name, _export in RUNTIME_EXPORTS.items():
    _of = _export["of"]
    ENTRIES[_name] = {
        "file": f"{_name}.tar.xz",
        "what": _export["what"],
        "kind": "runtime_export",
        "of": _of,
        "data": f"as {_of}",
        "commands": [
            f"allennlp ldnet-export pretrained:{_of} -o runs/{_name}",
            'python -c "from ldnet_runtime.shipped_exports import pack_export; '
            f"pack_export('runs/{_name}', 'pretrained/{_name}.tar.xz')\"",
            "python -m benchmarks export --stage speed (test F1, tag agreement)",
            "python scripts/pretrained_manifest.py",
        ],
    }


def pruning_record(results: Dict[str, Any], prefix: str, phase1_run: str) -> Dict[str, Any]:
    """The keys of pruning.json for the pruning of `phase1_run`: the task's current keys, or the
    ones kept under `<prefix>earlier_phase1` when another phase-1 tagger was pruned since."""
    for record in (results, results.get(f"{prefix}earlier_phase1", {})):
        if Path(record.get(f"{prefix}phase1_dir", "")).name == phase1_run:
            return record
    raise SystemExit(f"benchmarks/results/pruning.json has no pruning of {phase1_run}")


def main() -> None:
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401
    from ldnet_allennlp.pruning.cut_layers import layer_selection_embedders
    from ldnet_allennlp.tagging.flops import flops_per_token

    lm_results = json.loads((RESULTS / "lm.json").read_text())
    all_pruning = json.loads((RESULTS / "pruning.json").read_text())
    tagging = json.loads((RESULTS / "tagging.json").read_text())
    speed = json.loads((RESULTS / "export.json").read_text()).get("runtime_speed", {})
    manifest = {}
    for name, entry in ENTRIES.items():
        path = PRETRAINED / entry["file"]
        if not path.exists():
            print(f"{name}: {path} is not there; left out")
            continue
        facts = dict(entry)
        facts["size_bytes"] = path.stat().st_size
        facts["sha256"] = file_sha256(str(path))
        if entry["kind"] == "runtime_export":
            facts["test_f1"] = speed.get("f1_default_export")
            facts["tag_agreement_with_allennlp"] = speed.get("tag_agreement_default")
            manifest[name] = facts
            continue
        model = load_archive(str(path)).model
        facts["parameters"] = sum(p.numel() for p in model.parameters())
        if entry["kind"] == "dense_language_model":
            direction = entry["direction"]
            # what a tagger runs of it: the dense LSTM stack (the softmax is dropped)
            facts["flops_per_token_features"] = float(flops_per_token(model.encoder))
            facts["dev_perplexity"] = lm_results[f"pretrained_{direction}_ppl_dev"]
            facts["wikitext2_valid_perplexity"] = lm_results[
                f"pretrained_{direction}_ppl_wikitext2_valid"
            ]
            pretraining = lm_results[f"pretrain_accelerated_{direction}"]
            facts["passes_over_corpus"] = pretraining["passes"]
            facts["tokens_seen"] = pretraining["tokens_seen"]
        if name in FULL_TAGGERS:
            run = tagging[FULL_TAGGERS[name]["run"]]
            facts["test_f1"] = run["test_f1_fp16"]
            facts["test_f1_fp32"] = run["test_f1"]
            facts["dev_f1"] = run["dev_f1"]
            ((_, embedder),) = layer_selection_embedders(model)
            facts["kept_layers"] = embedder.kept_layers()  # every layer: not pruned
            facts["flops_per_token"] = float(flops_per_token(model))
        if name in PRUNED_TAGGERS:
            tagger = PRUNED_TAGGERS[name]
            prefix, f1_key = tagger["results_prefix"], tagger["f1_key"]
            pruning = pruning_record(all_pruning, prefix, tagger["phase1_run"])
            facts["test_f1"] = pruning[f"{f1_key}_pruned_fp16"]
            facts["test_f1_fp32"] = pruning[f"{f1_key}_pruned"]
            facts["test_f1_unpruned"] = pruning[f"{f1_key}_unpruned"]
            facts["kept_layers"] = {
                "forward": pruning[f"{prefix}kept_layers_forward"],
                "backward": pruning[f"{prefix}kept_layers_backward"],
            }
            facts["flops_per_token"] = float(flops_per_token(model))
        manifest[name] = facts
    (PRETRAINED / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest, indent=2))


if __name__ == "__main__":
    main()
