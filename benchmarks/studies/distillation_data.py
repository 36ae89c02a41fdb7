"""
The distillation study's data: its configs, the splits (the dev carved from SST-2's train.tsv,
the training subsets) and the students a run dir holds, with the one chosen on dev per variant.
"""

import argparse
import json
import os
import random
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from benchmarks.harness.data import ROOT, data_path
from benchmarks.harness.runs import pin_settings

CONFIGS = ROOT / "training_configs" / "distillation"
VARIANTS = ("teacher", "bilstm", "distilled", "distilled_aug")
STUDENT_VARIANTS = VARIANTS[1:]
# the students' word vectors (--student-word-vectors): trained random vectors (`<task>_<variant>`
# configs), or those plus a frozen GloVe channel (`<task>_<variant>_glove`); per student, the
# one with the better dev accuracy is kept (ties: the first listed here)
WORD_VECTORS = ("random", "glove")


def sst2_dir() -> str:
    return str(data_path("SST2_DATA_DIR", "sst2", must_exist=False))


def sick_path() -> str:
    return str(data_path("SICK_DATA_PATH", "sick/SICK.txt", must_exist=False))


def sick_split(name: str) -> str:
    return f"{sick_path()}#SemEval_set={name}"


def read_tsv(file_path: str) -> Tuple[str, List[str]]:
    """
    The header line and the data lines (line ends kept) of a TSV file; a `#column=value` suffix
    keeps the rows whose `column` is `value`, as the `distillation_tsv` reader does.
    """
    path, _, selector = file_path.partition("#")
    # lines are split at "\n" only (read_text makes "\r\n" one); each row gets its "\n"
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    header, rows = lines[0] + "\n", [line + "\n" for line in lines[1:] if line.strip()]
    if selector:
        column, value = selector.split("=", 1)
        rows = [r for r in rows if cell(header, r, column) == value]
    return header, rows


def write_tsv(target: Path, header: str, rows: Sequence[str]) -> None:
    """Written whole or not at all (a temporary file renamed), so a stopped run leaves no half."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(header + "".join(rows), encoding="utf-8")
    os.replace(partial, target)


def cell(header: str, row: str, column: str) -> str:
    return row.rstrip("\n").split("\t")[header.rstrip("\n").split("\t").index(column)]


def carve_dev(
    header: str, rows: Sequence[str], column: str, dev_size: int, seed: int
) -> Tuple[List[str], List[str]]:
    """
    `(dev, pool)`: the dev holds `dev_size` distinct sentences (`column`, whitespace-stripped)
    drawn with `random.Random(seed)` from the distinct sentences of `rows`, one row each (the
    first in file order); the pool holds every row whose sentence is not in the dev (duplicates
    of a dev sentence go with it). Both keep file order: the same rows and seed, the same split.
    """
    keys = [cell(header, row, column).strip() for row in rows]
    distinct = list(dict.fromkeys(keys))
    if not 0 < dev_size < len(distinct):
        raise SystemExit(f"dev size {dev_size}: must be between 1 and {len(distinct) - 1}")
    chosen = set(random.Random(seed).sample(distinct, dev_size))
    dev, pool, seen = [], [], set()
    for key, row in zip(keys, rows):
        if key not in chosen:
            pool.append(row)
        elif key not in seen:
            seen.add(key)
            dev.append(row)
    return dev, pool


def choose_rows(rows: Sequence[str], size: Optional[int], seed: int) -> List[str]:
    """A seeded random subset of `size` rows in file order; `None` (`all`) = every row."""
    if size is None or size >= len(rows):
        return list(rows)
    chosen = sorted(random.Random(seed).sample(range(len(rows)), size))
    return [rows[i] for i in chosen]


def task_files(task: str, run_dir: Path) -> Dict[str, Any]:
    """A task's split files: `train` and `dev` (what training and selection read) and `test`
    (SST-2: GLUE dev.tsv; only the final evaluation step asks for it)."""
    data_dir = run_dir / "data" / task
    train = data_dir / ("train.tsv" if task == "sst2" else "SICK_train_subset.txt")
    files = {"record": data_dir / "split.json", "train_file": train, "train": str(train)}
    if task == "sst2":
        return {
            **files,
            "dev": str(data_dir / "dev.tsv"),
            "test": os.path.join(sst2_dir(), "dev.tsv"),
        }
    return {**files, "dev": sick_split("TRIAL"), "test": sick_split("TEST")}


def split_once(task: str, args: argparse.Namespace, run_dir: Path) -> bool:
    """
    The split files of a task in `<run_dir>/data/<task>/`, then `split.json` (what was written;
    its presence marks the step done), the settings they depend on pinned in
    `<run_dir>/<task>_settings.json`. Reads only the training source: SST-2's train.tsv, the
    TRAIN rows of SICK.txt. Returns whether it wrote them now.
    """
    if task == "sst2":
        size = args.sst2_train_size or "all"
        settings = {"seed": args.seed, "train_size": size, "dev_size": args.sst2_dev_size}
    else:
        settings = {"seed": args.seed, "train_size": args.pair_train_size or "all"}
    pin_settings(run_dir, settings, name=f"{task}_settings")
    files = task_files(task, run_dir)
    if files["record"].exists():
        return False
    if task == "sst2":
        source = os.path.join(sst2_dir(), "train.tsv")
        header, rows = read_tsv(source)
        dev, pool = carve_dev(header, rows, "sentence", args.sst2_dev_size, args.seed)
        train = choose_rows(pool, args.sst2_train_size, args.seed)
        write_tsv(Path(files["dev"]), header, dev)
        record = {"source": source, "source_rows": len(rows), "dev_rows": len(dev)}
        record["train_pool_rows"] = len(pool)
        record["rows_dropped_as_duplicates_of_dev_sentences"] = len(rows) - len(dev) - len(pool)
    else:
        source = sick_split("TRAIN")
        header, pool = read_tsv(source)
        train = choose_rows(pool, args.pair_train_size, args.seed)
        record = {"source": source, "train_pool_rows": len(pool), "dev": files["dev"]}
        record["dev_rows"] = len(read_tsv(files["dev"])[1])
    write_tsv(files["train_file"], header, train)
    record.update(train_rows=len(train), seed=args.seed)
    files["record"].write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return True


def split_note(task: str, args: argparse.Namespace, split: Dict[str, Any]) -> str:
    """The results file's `data.<task>` note."""
    if task == "sst2":
        size = "all" if args.sst2_train_size is None else args.sst2_train_size
        return (
            f"train = {split['train_rows']} rows ({size}) of GLUE SST-2 train.tsv minus the dev; "
            f"dev = {split['dev_rows']} distinct sentences carved from train.tsv with seed "
            f"{args.seed} (<run dir>/data/sst2/dev.tsv; {split['train_pool_rows']} rows left in "
            "the training pool), on which every choice is made (teacher and student best epochs, "
            "n_iter); test = GLUE dev.tsv, evaluated once per final model after all training "
            "(sst2_test_acc_*)"
        )
    return (
        f"train = {split['train_rows']} of the {split['train_pool_rows']} SemEval_set TRAIN "
        f"pairs of SICK.txt; dev = TRIAL ({split['dev_rows']} pairs), on which every choice is "
        "made (best epochs, n_iter); test = TEST, evaluated once per final model after all "
        "training (pair_test_acc_*)"
    )


def train_size(value: str) -> Optional[int]:
    """argparse type of the train sizes: a positive number of rows, or `all` (None)."""
    if value == "all":
        return None
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'all', got {value!r}")
    return int(value)


def best_dev_accuracy(serialization_dir: Path) -> float:
    metrics = json.loads((serialization_dir / "metrics.json").read_text())
    return round(100.0 * metrics["best_validation_accuracy"], 2)


def student_name(variant: str, n_iter: Optional[int], vectors: str) -> str:
    """A student's run name (its directory: `<task>_<name>`): e.g. `bilstm`, `distilled_aug_n20`,
    `glove_distilled_aug_n20`."""
    name = variant if n_iter is None else f"{variant}_n{n_iter}"
    return name if vectors == "random" else f"{vectors}_{name}"


def student_config(task: str, variant: str, vectors: str) -> str:
    """The config of a student: `<task>_<variant>.jsonnet`, `<task>_<variant>_glove.jsonnet`."""
    return f"{task}_{variant}{'' if vectors == 'random' else '_' + vectors}.jsonnet"


def trained_students(task: str, run_dir: Path) -> Dict[str, Dict[str, Any]]:
    """Every finished student of the run dir, also those of earlier invocations: directory name
    -> variant, word vectors, n_iter (distilled_aug) and best dev accuracy; ordered by variant,
    then word vectors (random first), then n_iter."""
    found = []
    for archive in run_dir.glob(f"{task}_*/model.tar.gz"):
        name = archive.parent.name[len(task) + 1 :]
        vectors = "glove" if name.startswith("glove_") else "random"
        variant, _, n_iter = name.removeprefix("glove_").partition("_n")
        if variant in STUDENT_VARIANTS and (variant == "distilled_aug") == bool(n_iter):
            order = (STUDENT_VARIANTS.index(variant), WORD_VECTORS.index(vectors))
            found.append((*order, int(n_iter or 0), archive.parent))
    return {
        path.name: {"variant": STUDENT_VARIANTS[v], "vectors": WORD_VECTORS[w]}
        | {"n_iter": n_iter or None, "dev": best_dev_accuracy(path)}
        for v, w, n_iter, path in sorted(found)
    }


def chosen_students(candidates: Dict[str, Dict[str, Any]]) -> Dict[str, str]:
    """Per student variant, the directory name with the best dev accuracy (ties: the first, in
    the order of `trained_students`)."""
    chosen: Dict[str, str] = {}
    for name, found in candidates.items():
        best = chosen.get(found["variant"])
        if best is None or found["dev"] > candidates[best]["dev"]:
            chosen[found["variant"]] = name
    return chosen
