"""
Tang et al. (2019) distillation benchmark on real data: SST-2 and SICK (3-way pair task).

Per task: fine-tune the MiniLM-L6 teacher (`<task>_teacher.jsonnet`), build the augmented
transfer set (`allennlp distill-transfer-set`), train the three students (`<task>_bilstm`,
`<task>_distilled`, `<task>_distilled_aug`), read each model's best dev accuracy. Plus the speed
of teacher vs student (sentences/s on CPU, batch 1 and 64, same process, same threads) and the
parameter counts. Writes benchmarks/results/distillation.json after every stage (partial results
are kept), outputs under runs/distillation/. Re-running skips finished stages (judged by their
output files, not their settings: use a fresh --run-dir after changing a setting) and resumes an
interrupted transfer set.

The committed JSON comes from one invocation per part, each in its own run dir (`commands`,
`run_dirs`): `--stage speed`, `--stage sst2` and `--stage sick`. Re-running a finished part in
its run dir skips every stage and rewrites that part's keys (stage times come back from the run
dir's stage_seconds.json). Runs at several n_iter: `<task>_dev_acc_distilled_aug_by_n_iter`
(SST-2 at n_iter 4 and 16, SICK at 2 and 8: each pair shares the teacher and the training
subset, the second run dir got a copy of the first run's teacher). A first run with 1-epoch
teachers is kept under "earlier_run_weaker_teachers".

The CPU is shared, so the run is sized down (all sizes are recorded in the JSON "sizes"):
SST-2: teacher fine-tuned for 2 epochs on a seeded 4,000-sentence subset of train, max_length 64,
transfer set from the same subset with n_iter 16 (Tang et al. used 20); SICK: all 4,439 TRAIN
pairs, teacher 3 epochs, n_iter 8. Students: 8 epochs (patience 3), best dev epoch. The
un-augmented transfer set is the original rows of the augmented one (same teacher, same logits),
so the teacher labels each original once.

    SST2_DATA_DIR=/work/shared/data/sst2 SICK_DATA_PATH=/work/shared/data/sick/SICK.txt \\
        .venv/bin/python benchmarks/distillation_benchmark.py [--stage speed]
"""

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import DATA, ROOT, hardware, run_allennlp  # noqa: E402
from benchmarks.common import load_results as _load, save_results as _save  # noqa: E402

CONFIGS = ROOT / "training_configs" / "distillation"
# Threads for the training / labelling subprocesses. On the shared 2-core machine one thread was
# faster than two for both models (thread contention), see "speed_by_threads".
THREADS = 1
REPEATS = 3  # speed measurements: best of this many passes

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


# name of the results file under benchmarks/results/ (--results changes it)
RESULTS_NAME = "distillation"


def load_results() -> Dict[str, Any]:
    return _load(RESULTS_NAME)


def save_results(results: Dict[str, Any]) -> None:
    _save(RESULTS_NAME, results)


def write_subset(source: str, target: Path, size: int, seed: int, row_filter=None) -> int:
    """A seeded random subset of a TSV file's data rows (header kept, order kept)."""
    lines = Path(source).read_text(encoding="utf-8").splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    if row_filter is not None:
        column = header.rstrip("\r\n").split("\t").index(row_filter[0])
        rows = [r for r in rows if r.rstrip("\r\n").split("\t")[column] == row_filter[1]]
    chosen = sorted(random.Random(seed).sample(range(len(rows)), min(size, len(rows))))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(header + "".join(rows[i] for i in chosen), encoding="utf-8")
    return len(chosen)


def best_dev_accuracy(serialization_dir: Path) -> float:
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return round(100.0 * metrics["best_validation_accuracy"], 2)


def train(config: str, serialization_dir: Path, overrides: Dict[str, Any], env, log) -> None:
    if (serialization_dir / "model.tar.gz").exists():
        return
    args = ["train", str(CONFIGS / config), "-s", str(serialization_dir), "-f"]
    args += ["-o", json.dumps(overrides)]
    run_allennlp(args, log, env, threads=THREADS)


def timed(results: Dict[str, Any], name: str, function, run_dir: Path) -> None:
    """
    Runs a stage and saves. Its wall time is recorded when the stage did work, also in
    `<run_dir>/stage_seconds.json`, from which a re-run that skips the finished stage takes it.
    """
    record = run_dir / "stage_seconds.json"
    recorded = json.loads(record.read_text()) if record.exists() else {}
    start = time.time()
    did_work = function()
    if did_work:
        recorded[name] = round(time.time() - start, 1)
        record.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    if name in recorded:
        results.setdefault("stage_seconds", {})[name] = recorded[name]
    save_results(results)


def only_originals(aug_path: Path, target: Path) -> None:
    """The un-augmented transfer set: header (n_iter set to 0) + the original rows."""
    with open(aug_path, encoding="utf-8") as source, open(target, "w", encoding="utf-8") as out:
        header = json.loads(source.readline())
        header["transfer_set"]["n_iter"] = 0
        header["transfer_set"]["derived_from"] = str(aug_path)
        out.write(json.dumps(header) + "\n")
        for line in source:
            if not json.loads(line)["augmented"]:
                out.write(line)


def task_pipeline(task: str, args, results: Dict[str, Any], run_dir: Path) -> None:
    prefix = "sst2" if task == "sst2" else "pair"
    data_dir = run_dir / "data" / task
    sst2 = os.environ.get("SST2_DATA_DIR", str(DATA / "sst2"))
    env = {
        "SST2_TRAIN_DATA_PATH": os.path.join(sst2, "train.tsv"),
        "SST2_DEV_DATA_PATH": os.path.join(sst2, "dev.tsv"),
        "SICK_DATA_PATH": os.environ.get("SICK_DATA_PATH", str(DATA / "sick" / "SICK.txt")),
    }
    if task == "sst2":
        source = env["SST2_TRAIN_DATA_PATH"]
        subset_file = data_dir / "train.tsv"
        size = args.sst2_train_size
        row_filter = None
        train_path = str(subset_file)
    else:
        source = env["SICK_DATA_PATH"]
        subset_file = data_dir / "SICK_train_subset.txt"
        size = args.pair_train_size
        row_filter = ("SemEval_set", "TRAIN")
        train_path = str(subset_file)
    log = run_dir / "logs" / f"{task}.log"
    pair = task != "sst2"
    teacher_epochs = (args.pair_teacher_epochs if pair else None) or args.teacher_epochs
    n_iter = args.pair_n_iter if pair and args.pair_n_iter is not None else args.n_iter
    results.setdefault("run_dirs", {})[task] = str(run_dir)
    results.setdefault("sizes", {})[task] = {}
    sizes = results["sizes"][task]

    def subset():
        if subset_file.exists():
            return False
        write_subset(source, subset_file, size, args.seed, row_filter)
        return True

    timed(results, f"{task}_subset", subset, run_dir)
    sizes["train_examples"] = sum(1 for _ in open(subset_file, encoding="utf-8")) - 1

    teacher_dir = run_dir / f"{task}_teacher"

    def teacher():
        if (teacher_dir / "model.tar.gz").exists():
            return False
        overrides = {
            "train_data_path": train_path,
            "trainer.num_epochs": teacher_epochs,
            "trainer.optimizer.lr": args.teacher_lr,
        }
        train(f"{task}_teacher.jsonnet", teacher_dir, overrides, env, log)
        return True

    timed(results, f"{task}_teacher_finetune", teacher, run_dir)
    results[f"{prefix}_dev_acc_teacher"] = best_dev_accuracy(teacher_dir)
    save_results(results)

    transfer_aug = run_dir / "transfer" / f"{task}_aug.jsonl"
    transfer_plain = run_dir / "transfer" / f"{task}.jsonl"
    done_marker = transfer_aug.with_suffix(".done")

    def transfer_set():
        if done_marker.exists():
            return False
        transfer_aug.parent.mkdir(parents=True, exist_ok=True)
        run_allennlp(
            [
                "distill-transfer-set",
                str(teacher_dir / "model.tar.gz"),
                train_path,
                str(transfer_aug),
                "--n-iter",
                str(n_iter),
                "--seed",
                str(args.seed),
                "--batch-size",
                "64",
            ],
            log,
            env,
            threads=THREADS,
        )
        only_originals(transfer_aug, transfer_plain)
        done_marker.write_text("done\n")
        return True

    timed(results, f"{task}_transfer_set", transfer_set, run_dir)
    sizes["transfer_set_rows_aug"] = sum(1 for _ in open(transfer_aug)) - 1
    sizes["transfer_set_rows_plain"] = sum(1 for _ in open(transfer_plain)) - 1
    sizes["n_iter"] = n_iter
    sizes["teacher_epochs"] = teacher_epochs
    save_results(results)

    upper = "SST2" if task == "sst2" else "SICK"
    env[f"{upper}_TRANSFER_SET"] = str(transfer_plain)
    env[f"{upper}_TRANSFER_SET_AUG"] = str(transfer_aug)
    for variant in ("bilstm", "distilled", "distilled_aug"):
        student_dir = run_dir / f"{task}_{variant}"
        overrides: Dict[str, Any] = {"trainer.num_epochs": args.student_epochs}
        if variant == "bilstm":
            overrides["train_data_path"] = train_path

        def student(student_dir=student_dir, variant=variant, overrides=overrides):
            if (student_dir / "model.tar.gz").exists():
                return False
            train(f"{task}_{variant}.jsonnet", student_dir, overrides, env, log)
            return True

        timed(results, f"{task}_student_{variant}", student, run_dir)
        results[f"{prefix}_dev_acc_{variant}"] = best_dev_accuracy(student_dir)
        if variant == "distilled_aug":  # every n_iter this results file has seen
            by_n_iter = results.setdefault(f"{prefix}_dev_acc_distilled_aug_by_n_iter", {})
            by_n_iter[str(n_iter)] = results[f"{prefix}_dev_acc_{variant}"]
        save_results(results)


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def speed(results: Dict[str, Any], run_dir: Path) -> None:
    """
    Sentences/s of teacher vs student on SST-2 dev, model forward only (instances tensorised
    beforehand), torch.inference_mode, the same process and thread count for both. Untrained
    weights of the same architectures (speed does not depend on the weights); parameter
    counts are for the SST-2 configs (student vocabulary = SST-2 dev + the training subset).
    """
    import torch
    from allennlp.common import Params
    from allennlp.data import Batch, Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model
    from allennlp.nn import util as nn_util

    import ldnet_allennlp  # noqa: F401

    data = os.environ.get("SST2_DATA_DIR", str(DATA / "sst2"))
    os.environ.setdefault("SST2_TRAIN_DATA_PATH", os.path.join(data, "train.tsv"))
    os.environ.setdefault("SST2_DEV_DATA_PATH", os.path.join(data, "dev.tsv"))
    dev = os.path.join(data, "dev.tsv")
    train_subset = run_dir / "data" / "sst2" / "train.tsv"
    vocab_source = str(train_subset) if train_subset.exists() else dev

    def build(config: str):
        params = Params.from_file(str(CONFIGS / config))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        if "validation_dataset_reader" in params:
            reader = DatasetReader.from_params(params.pop("validation_dataset_reader"))
        instances = list(reader.read(dev))
        vocab = Vocabulary.from_instances(instances + list(reader.read(vocab_source)))
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        model.eval()
        return model, instances

    measurements = {}
    by_threads: Dict[str, float] = {}
    models = {}
    for name, config in (("teacher", "sst2_teacher.jsonnet"), ("student", "sst2_bilstm.jsonnet")):
        models[name] = build(config)
        results[f"params_{name}"] = count_parameters(models[name][0])
    student = models["student"][0]
    results["params_student_without_embeddings"] = results["params_student"] - count_parameters(
        student.text_field_embedder
    )
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for name, (model, instances) in models.items():
            for batch_size, count in ((64, len(instances)), (1, 100)):
                chosen = instances[:count]
                batches = []
                for start in range(0, len(chosen), batch_size):
                    batch = Batch(chosen[start : start + batch_size])
                    batch.index_instances(model.vocab)
                    batches.append(batch.as_tensor_dict())
                elapsed = []
                with torch.inference_mode():
                    model(**batches[0])  # warm-up
                    # best of REPEATS passes on one thread (the CPU is shared); one pass on two
                    # threads, which is several times slower here
                    for _ in range(REPEATS if threads == 1 else 1):
                        start_time = time.perf_counter()
                        for tensors in batches:
                            model(**nn_util.move_to_device(tensors, -1))
                        elapsed.append(time.perf_counter() - start_time)
                rate = len(chosen) / min(elapsed)
                by_threads[f"{name}_b{batch_size}_threads{threads}"] = round(rate, 1)
                key = (name, batch_size)
                measurements[key] = max(measurements.get(key, 0.0), rate)
                results[f"sentences_per_sec_{name}_b{batch_size}"] = round(measurements[key], 1)
                results["speed_by_threads"] = by_threads
                save_results(results)
    torch.set_num_threads(1)
    for batch_size in (1, 64):
        ratio = measurements[("student", batch_size)] / measurements[("teacher", batch_size)]
        results[f"student_speedup_b{batch_size}"] = round(ratio, 1)
    results["speed_setup"] = {
        "data": "SST-2 dev (872 sentences at batch 64, first 100 at batch 1), best of "
        f"{REPEATS} passes on 1 thread, 1 pass on 2 threads",
        "what": "model forward only, torch.inference_mode, CPU; each model at its faster "
        "thread count of 1 and 2 (all settings in speed_by_threads)",
    }


def title() -> str:
    name = "" if RESULTS_NAME == "distillation" else f" ({RESULTS_NAME})"
    return f"Tang et al. distillation{name}: SST-2 and a pair task (issue 7)"


def summary(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The accuracy and speed tables of BENCHMARKS.md, from the keys of the results file."""
    tasks = [("SST-2", "sst2")]
    if "pair_task" in results:
        tasks.append((results["pair_task"].split(" (")[0], "pair"))
    accuracy = []
    for task, prefix in tasks:
        row = [task]
        for variant in ("teacher", "bilstm", "distilled", "distilled_aug"):
            row.append(results.get(f"{prefix}_dev_acc_{variant}"))
        row.append(results.get(f"{prefix}_gain_distilled_aug_over_bilstm"))
        accuracy.append(row)
    speed = []
    for name in ("teacher", "student"):
        speed.append(
            [
                name,
                results.get(f"params_{name}"),
                results.get(f"sentences_per_sec_{name}_b1"),
                results.get(f"sentences_per_sec_{name}_b64"),
            ]
        )
    speed.append(
        [
            "student / teacher",
            None,
            results.get("student_speedup_b1"),
            results.get("student_speedup_b64"),
        ]
    )
    return [
        {
            "caption": "Dev accuracy (%; goal from issue 7: distilled + augmentation >= plain "
            "BiLSTM + 3.0). Sizes and settings under `sizes` and `settings`.",
            "columns": [
                "task",
                "teacher (MiniLM-L6)",
                "BiLSTM, gold labels",
                "distilled",
                "distilled + augmentation",
                "gain over BiLSTM",
            ],
            "rows": accuracy,
        },
        {
            "caption": "Speed on CPU (sentences/s, model forward only; goal: student >= 20x "
            "faster). How it was timed: `speed_setup`.",
            "columns": ["model", "parameters", "sentences/s b1", "sentences/s b64"],
            "rows": speed,
        },
    ]


def main() -> None:
    global RESULTS_NAME, THREADS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", default=str(ROOT / "runs" / "distillation"))
    parser.add_argument(
        "--stage",
        choices=["all", "speed", "sst2", "sick", "report"],
        default="all",
        help="report: only recompute the summary tables from the results file",
    )
    parser.add_argument("--threads", type=int, default=THREADS, help="torch threads per stage")
    parser.add_argument("--sst2-train-size", type=int, default=4000)
    parser.add_argument("--pair-train-size", type=int, default=4439)  # all of SICK TRAIN
    parser.add_argument("--teacher-epochs", type=int, default=2)
    parser.add_argument("--teacher-lr", type=float, default=5e-5)
    parser.add_argument("--n-iter", type=int, default=16)
    parser.add_argument("--pair-teacher-epochs", type=int, default=3, help="SICK override")
    parser.add_argument("--pair-n-iter", type=int, default=8, help="SICK override")
    parser.add_argument("--student-epochs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--results",
        default=RESULTS_NAME,
        help="results file name under benchmarks/results/ (without .json)",
    )
    args = parser.parse_args()
    THREADS = args.threads
    RESULTS_NAME = args.results
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)

    results = load_results()
    if args.stage == "report":
        results["title"] = title()
        results["summary"] = summary(results)
        save_results(results)
        return
    results["pair_task"] = (
        f"SICK 3-way (train = {args.pair_train_size} SemEval_set TRAIN pairs, "
        "dev = TRIAL, 495 pairs)"
    )
    if args.stage in ("all", "speed"):  # the speed figures are the ones the machine matters for
        results["hardware"] = hardware()
    # the settings every task shares; each task's own (n_iter, teacher epochs, train size) are
    # under "sizes", as the tasks may come from different invocations
    results["settings"] = {
        k: getattr(args, k) for k in ("seed", "student_epochs", "teacher_lr", "threads")
    }
    save_results(results)
    if args.stage in ("all", "speed"):
        timed(results, "speed", lambda: speed(results, run_dir) or True, run_dir)
    if args.stage in ("all", "sst2"):
        task_pipeline("sst2", args, results, run_dir)
    if args.stage in ("all", "sick"):
        task_pipeline("sick", args, results, run_dir)
    for prefix in ("sst2", "pair"):
        keys = [f"{prefix}_dev_acc_bilstm", f"{prefix}_dev_acc_distilled_aug"]
        if all(k in results for k in keys):
            gain = results[keys[1]] - results[keys[0]]
            results[f"{prefix}_gain_distilled_aug_over_bilstm"] = round(gain, 2)
    results["title"] = title()
    # the invocation behind each part of the file (tasks may come from different invocations)
    invocation = "python benchmarks/distillation_benchmark.py " + " ".join(sys.argv[1:])
    parts = results.setdefault("commands", {})
    for part in ("speed", "sst2", "sick"):
        if args.stage in ("all", part):
            parts[part] = invocation
    results["command"] = "; ".join(parts[part] for part in sorted(parts))
    results["summary"] = summary(results)
    save_results(results)
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
