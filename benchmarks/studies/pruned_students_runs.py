"""
The `pruned_students` study's runs (`pruned_students.py`): its tasks and paths, the news text,
the transfer sets, the student runs and their test F1, through the shared `Pipeline`.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT, hardware
from benchmarks.harness.results import command_line, results_path, run_record, write_results
from benchmarks.studies.distillation_pipeline import Pipeline

OUT = ROOT / "runs" / "students"
TRANSFER = ROOT / "runs" / "transfer"
NEWS = TRANSFER / "news.txt"
RESULTS = "pruned_students.json"
LMS = {
    "FORWARD_LM_ARCHIVE": "pretrained/lm_forward.tar.gz",
    "BACKWARD_LM_ARCHIVE": "pretrained/lm_backward.tar.gz",
}
TASKS: Dict[str, Dict[str, Any]] = {
    task: {
        "start": f"pretrained/{task}_ldnet_pruned.tar.gz",
        "teachers": [f"pretrained:{task}", f"pretrained/teachers/{task}_seed2.tar.gz"],
        "data": {k: v for k, v in paths.items() if not k.endswith("_TEST_DATA_PATH")},
        "test": paths[f"{prefix}_TEST_DATA_PATH"],
        # chunking's dev: the held-out tenth of train.txt, as the validation reader reads it
        "dev": paths.get("CONLL03_DEV_DATA_PATH") or paths["CONLL00_TRAIN_DATA_PATH"],
        "config": f"training_configs/tagging/student/{task}_pruned_student.jsonnet",
    }
    for task, prefix, paths in (("ner", "CONLL03", CONLL03), ("chunk", "CONLL00", CONLL00))
}
KEYS = {"ner": "conll03", "chunk": "conll00"}


def record(path: List[str], value: Any) -> None:
    """Sets results[path[0]]...[path[-1]] = value in the shared results file, appends the
    running command (its date and hardware, and the key it wrote) to `commands`, and sets
    `hardware` to the machine of this latest run."""

    def updates(results: Dict[str, Any]) -> Dict[str, Any]:
        node = results
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value
        entry = run_record(wrote=".".join(path))
        results.setdefault("commands", []).append(entry)
        results["hardware"] = entry["hardware"]
        return results

    write_results(results_path(RESULTS), updates, replace=True)


def stage_text(args: argparse.Namespace) -> None:
    if NEWS.exists():
        return
    command = [sys.executable, "-m", "scripts.prepare_transfer_text", "--output", str(NEWS)]
    command += ["--data-dir", args.lm_text] if args.lm_text else []
    report = json.loads(subprocess.run(command, cwd=ROOT, check=True, capture_output=True).stdout)
    record(["news_text"], {**report, "command": " ".join(command[1:]), "file": str(NEWS)})


def transfer_file(task: str, size: int) -> Path:
    return TRANSFER / f"{task}_news{size // 1000}k.jsonl"


def stage_transfer(args: argparse.Namespace) -> None:
    """The task's teachers' marginals over the first `--transfer-size` news sentences."""
    teachers, output = TASKS[args.task]["teachers"], transfer_file(args.task, args.transfer_size)
    arguments = ["ldnet-tagging-transfer-set", *teachers, "--input", str(NEWS.relative_to(ROOT))]
    arguments += ["--output", str(output.relative_to(ROOT))]
    arguments += ["--max-sentences", str(args.transfer_size), "--threads", "1"]
    pipe = Pipeline(TRANSFER, output.with_suffix(".log"))
    if not pipe.label(output.stem, arguments, output):
        return
    figures = json.loads(pipe.log.read_text().strip().splitlines()[-1])  # the command's summary
    figures.update(wall_seconds=pipe.seconds[output.stem], teachers=teachers)
    figures["path"] = "batched AllenNLP (ldnet_crf_tagger forward + crf_marginals), 1 thread"
    figures.update(command=command_line(), allennlp_command="allennlp " + " ".join(arguments))
    record([args.task, "transfer_set"], {**figures, "hardware": hardware()})


def run_name(args: argparse.Namespace) -> str:
    return (
        f"{args.task}_{args.loss}_w{args.weight:g}_n{args.sentences}"
        f"_e{args.epochs}_lr{args.lr:g}_seed{args.seed}"
    )


def start_dir(task: str) -> Path:
    """The serialization dir (vocabulary/ + best.th) a student starts from: the shipped pruned
    tagger, for chunking with its training-file vocabulary (`pruned_students_vocab`)."""
    from benchmarks.studies.pruned_students_vocab import restricted_start
    from benchmarks.studies.pruning_phase2 import phase1_from_archive

    start = phase1_from_archive(ROOT / TASKS[task]["start"], OUT / f"start_{task}_pruned")
    if task != "chunk":
        return start
    restricted = OUT / "start_chunk_pruned_train_vocabulary"
    dropped = restricted_start(start, restricted, CONLL00["CONLL00_TRAIN_DATA_PATH"])
    if dropped:
        record(["chunk", "start_vocabulary_dropped"], dropped)
    return restricted


def stage_train(args: argparse.Namespace) -> None:
    """One student run: `--loss`, `--weight`, `--sentences` of the transfer set, `--epochs`,
    `--lr`, `--seed`; its dev F1 per epoch and its CPU seconds."""
    task, name = TASKS[args.task], run_name(args)
    env = {**task["data"], **LMS, "STUDENT_START_DIR": str(start_dir(args.task))}
    env["TRANSFER_SET_PATH"] = str(transfer_file(args.task, args.transfer_size))
    env["DISTILLATION_LOSS"] = args.loss
    for variable, value in (("DISTILLATION_WEIGHT", args.weight), ("STUDENT_LR", args.lr)):
        env[variable] = json.dumps(value)
    env["TRANSFER_SENTENCES"], env["STUDENT_EPOCHS"] = str(args.sentences), str(args.epochs)
    overrides = {"random_seed": args.seed, "numpy_seed": args.seed, "pytorch_seed": args.seed}
    pipe = Pipeline(OUT, OUT / f"{name}.log", env=env)
    pipe.train(name, task["config"], OUT / name, overrides)
    f1 = [100 * m["validation_f1-measure-overall"] for m in allennlp.epoch_metrics(OUT / name)]
    settings = ("loss", "weight", "epochs", "lr", "seed")
    figures = {key: getattr(args, key) for key in settings}
    figures.update(transfer_sentences=args.sentences, dev_f1_by_epoch=f1, best_dev_f1=max(f1))
    figures.update(training_seconds=allennlp.training_seconds(OUT / name))
    figures.update(wall_seconds_this_call=pipe.seconds.get(name), threads=1, command=command_line())
    figures.update(config=task["config"], environment=env, overrides=overrides)
    record([args.task, "runs", name], {**figures, "hardware": hardware()})


def run_archive(name: str) -> Path:
    if not name:
        raise SystemExit("stages test, speed and ship need --run <student run name>")
    archive = OUT / name / "model.tar.gz"
    if not archive.exists():
        raise SystemExit(f"--run {name}: no finished student run at {OUT / name}")
    return archive


def stage_test(args: argparse.Namespace) -> None:
    """Test F1 of the students `--run` (each once, after every choice was made on dev)."""
    for name in args.run:
        pipe = Pipeline(OUT, OUT / f"{name}.log")
        metrics = pipe.test(f"{name}_test", {name: run_archive(name)}, TASKS[args.task]["test"])
        figures = {"test_f1": 100 * metrics[name]["f1-measure-overall"], "command": command_line()}
        record([args.task, "runs", name, "test"], figures)


def stage_vocabulary(args: argparse.Namespace) -> None:
    """The shipped chunkers' test F1 with a training-file vocabulary (`pruned_students_vocab`)."""
    from benchmarks.harness.timing import set_threads
    from benchmarks.studies.pruned_students_vocab import evaluate_with_training_vocabulary

    set_threads(1)
    for name in ("chunk", "chunk_pruned"):
        archive = str(ROOT / "pretrained" / f"{name.replace('chunk', 'chunk_ldnet')}.tar.gz")
        figures = evaluate_with_training_vocabulary(
            archive, TASKS["chunk"]["test"], CONLL00["CONLL00_TRAIN_DATA_PATH"]
        )
        record(
            ["test_vocabulary", name],
            {**figures, "command": command_line(), "hardware": hardware(1)},
        )
        print(name, json.dumps(figures), flush=True)


def stage_ship(args: argparse.Namespace) -> None:
    """The student `--run` as `pretrained/<task>_ldnet_pruned.tar.gz`: ldnet-prune
    --keep-all-layers --fp16 --reference-lms, its training reader replaced by the gold reader
    (the archive is an ordinary tagger's), its test F1 measured; then the manifest."""
    name = args.run[0] if args.run else ""
    run, archive = OUT / name, run_archive(name)
    fp16, shipped = run / "model_fp16.tar.gz", run / "model_shipped.tar.gz"
    flags = ["--fp16", "--reference-lms", "--keep-all-layers"]
    pipe = Pipeline(OUT, OUT / f"{name}.log")
    allennlp.run_allennlp(["ldnet-prune", str(archive), "-o", str(fp16)] + flags, pipe.log)
    with tarfile.open(fp16) as source, tempfile.TemporaryDirectory() as staging:
        source.extractall(staging, filter="data")
        config_file = Path(staging) / "config.json"
        config = json.loads(config_file.read_text())
        config["dataset_reader"] = config["dataset_reader"]["gold_reader"]
        config_file.write_text(json.dumps(config, indent=2))
        with tarfile.open(shipped, "w:gz") as target:
            for member in sorted(Path(staging).rglob("*")):
                if member.is_file():
                    target.add(member, arcname=str(member.relative_to(staging)))
    output = run / "test_metrics_shipped.json"
    metrics = allennlp.evaluate(shipped, TASKS[args.task]["test"], output, pipe.log, threads=1)
    target = ROOT / TASKS[args.task]["start"]
    shutil.copyfile(shipped, target)
    prune = f"allennlp ldnet-prune {archive.relative_to(ROOT)} -o {fp16.relative_to(ROOT)} "
    commands = [command_line(), prune + " ".join(flags), "python scripts/pretrained_manifest.py"]
    figures = {"run": name, "file": str(target.relative_to(ROOT)), "commands": commands}
    record([args.task, "shipped"], {**figures, "test_f1_fp16": 100 * metrics["f1-measure-overall"]})
    subprocess.run([sys.executable, "scripts/pretrained_manifest.py"], cwd=ROOT, check=True)
