"""
The dense language models. Writes benchmarks/results/lm.json.

    python -m benchmarks lm --stage pretrain      # CPU pre-training into runs/lm_* (resumable)
    python -m benchmarks lm --stage throughput    # dense LM vs allennlp-models' LM, tokens/s
    python -m benchmarks lm --stage pretrained    # perplexity of the shipped pretrained/lm_*
    python -m benchmarks lm --stage more_text --more-text-runs runs/lm_more_text_shipped \
        runs/lm_cpu_more

- `pretrain`: the forward and backward LMs pre-trained on CPU into runs/lm_forward and
  runs/lm_backward (git-ignored), side by side with `--threads` each, ending with model.tar.gz
  (what the LD-Net tagger loads). A run left by an interrupted one is continued (`allennlp
  train --recover`), and `--epochs` may differ from the first run's. An "epoch" is 250 batches
  of ~64 sentences (~360k tokens); the configs' own 16 epochs are one pass over the corpus.
- `throughput` (`lm_throughput`): training tokens/s of the dense LM against allennlp-models'.
- `pretrained`: `allennlp evaluate` of the shipped LMs on the LM corpus's dev split and on
  WikiText-2 valid as converted by scripts/prepare_lm_corpus.py (perplexity over our vocabulary,
  so not comparable with published WikiText-2 results), with what
  `scripts/pretrain_lms_accelerated.py train` logged per stage (committed under
  benchmarks/results/lm_pretraining/). The shipped LMs were trained by that script
  (pack/train/archive) on an accelerator.
- `more_text` (`more_text`): the shipped LMs continued on the larger corpus by that script,
  each run beside the shipped LMs, on the dev split and each source's held-out slice, with the
  NER probes of their LMs (`--more-text-probes`, `ner_probes`).
- `more_text_test` (`more_text_test` and the goal keys): the test F1 of the taggers on one set
  of those LMs (`--more-text-label`), chosen on dev, read once at the end.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Dict, List

from benchmarks.harness import allennlp
from benchmarks.harness.data import LM_DIRECTIONS, ROOT
from benchmarks.harness.results import (
    RESULTS_DIR,
    command_line,
    load_results,
    utc_date,
    write_results,
)
from benchmarks.harness.runs import trained
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import lm_throughput
from benchmarks.studies.pruning import budget_record
from benchmarks.studies.tagging import RUNS as TAGGING_RUNS
from benchmarks.studies.tagging_results import FINAL_RECIPES, late_mean, run_key, seed_runs

RESULTS = "lm"
DIRECTIONS = LM_DIRECTIONS
PRETRAINING_LOGS = RESULTS_DIR / "lm_pretraining"
STAGE_NOTES = {
    1: "from scratch, lr 0.002; corpus pack_stage1_2.json, which by mistake read CoNLL-00's "
    "train.txt as LM text (each token line a 3-word sentence: ~1.06M of its 7.73M tokens)",
    2: "continued from stage 1 at lr 0.001, same corpus",
    3: "continued from stage 2 (weights sent in fp16) at lr 0.0005 on the corrected corpus "
    "pack_stage3.json (LM text + CoNLL-03/CoNLL-00 train words, same vocabulary)",
}
COMMAND = (
    "the shipped LMs (pretrained/lm_*.tar.gz): scripts/pretrain_lms_accelerated.py "
    "pack/train/archive (commands per stage under pretrain_accelerated_*), then "
    "python -m benchmarks lm --stage pretrained; the CPU path: python -m benchmarks lm --stage "
    "pretrain, python -m benchmarks lm --stage throughput"
)
RATIO_GOAL = 1.0  # the dense LM trains at least as fast as AllenNLP's
TITLE = "Dense language models: throughput and perplexity"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    runs = ROOT / "runs"
    parser.add_argument("--data", default=str(runs / "lm_data/train.txt"))
    parser.add_argument("--vocabulary", default=str(runs / "lm_forward/vocabulary"))
    parser.add_argument("--wikitext", default=str(runs / "lm_data/wikitext2_valid.txt"))
    parser.add_argument("--lm-dev", default=str(runs / "lm_data/dev.txt"))
    parser.add_argument("--sentences", type=int, default=6400)
    parser.add_argument("--threads", type=int, default=1, help="torch threads; per LM: pretrain")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the config's")
    parser.add_argument("--cutoffs", default=None, help="e.g. 10,20 for a tiny smoke test")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS)
    parser.add_argument("--batches", type=int, default=8)
    pretrain = "pretrain: the corpus folder, relative to the project root"
    parser.add_argument("--lm-data", default="runs/lm_data", help=pretrain)
    parser.add_argument("--epochs", type=int, default=5, help="pretrain: 250 batches each")
    more = "more_text: the run folders of the LMs continued on the larger corpus"
    parser.add_argument("--more-text-runs", nargs="+", default=[], help=more)
    probes = (
        "more_text: FOLDER=LABEL, the NER probe of a run folder's LMs (tagging.json's lm_study "
        f"run {PROBE_TAGGER}_lm-LABEL; LABEL shipped: the recipe's own runs on the shipped LMs)"
    )
    parser.add_argument("--more-text-probes", nargs="*", default=[], help=probes)
    final = (
        "more_text_test: the --lm-label of the LMs whose taggers' test F1 is read, once, at the "
        "end (tagging.json's and pruning_budget.json's lm_study runs of that label)"
    )
    parser.add_argument("--more-text-label", default=None, help=final)
    parser.add_argument(
        "--more-text-pruning-out",
        default=None,
        help="more_text_test: the --out of those pruning_budget runs (their pruned archives)",
    )


def pretrain(args: argparse.Namespace) -> None:
    """Both directions of `training_configs/lm/dense_lm_*.jsonnet` into
    runs/lm_<direction> (`train_pair`, `--threads` each); the corpus is prepared into
    `--lm-data` first if it is not there."""
    data = args.lm_data  # relative to the project root, as the runs' saved configs have it
    if not (ROOT / data / "train.txt").exists():
        prepare = [sys.executable, "scripts/prepare_lm_corpus.py", "--output", data]
        subprocess.run(prepare, cwd=ROOT, check=True)
    env = {"LM_TRAIN_DATA_PATH": f"{data}/train.txt", "LM_VALIDATION_DATA_PATH": f"{data}/dev.txt"}
    config = "training_configs/lm/dense_lm_{}.jsonnet"
    train_pair(config, ROOT / "runs" / "lm", args.epochs, env, args.threads)


def train_pair(
    config: str, prefix: Path, epochs: int, env: Dict[str, str], threads: int
) -> Dict[str, Path]:
    """`config.format(direction)` trained for `epochs` epochs (`trainer.num_epochs`) into
    `<prefix>_<direction>` for both directions side by side, `threads` each, with the
    environment variables `env`; the archives by direction. A finished run is skipped (`trained`);
    any other is trained, or resumed with its saved `trainer.num_epochs` set to `epochs`, after
    a `<date> start` line in `<prefix>_<direction>.log`."""

    def train(direction: str) -> Path:
        out = prefix.with_name(f"{prefix.name}_{direction}")
        where = os.path.relpath(out, ROOT)
        if trained(out):
            print(f"{where}/model.tar.gz exists; skipping {direction}")
            return out / "model.tar.gz"
        saved = out / "config.json"
        if saved.exists():  # trainer.num_epochs is the one key a resumed run may change
            resumed = json.loads(saved.read_text())
            resumed["trainer"]["num_epochs"] = epochs
            saved.write_text(json.dumps(resumed, indent=4))
        line = f"{utc_date()} start {direction} -> {where} "
        line += "--recover" if saved.exists() else ""
        print(line, flush=True)
        log = out.with_suffix(".log")
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a") as handle:
            handle.write(line + "\n")
        allennlp.train(config.format(direction), out, log, num_epochs(epochs), env, threads)
        return out / "model.tar.gz"

    return side_by_side(train)


def num_epochs(epochs: int) -> Dict[str, int]:
    """The override of a config's epochs: a dotted key, as AllenNLP replaces a nested override's
    whole object ({"trainer": {...}} would drop the config's optimizer, clipping and validation
    metric for the trainer's defaults)."""
    return {"trainer.num_epochs": epochs}


def side_by_side(train: Callable[[str], Any]) -> Dict:
    """{direction: `train(direction)`} for both directions, run at once in threads; a failure is
    raised once both have ended."""
    with ThreadPoolExecutor(max_workers=len(DIRECTIONS)) as pool:
        return dict(zip(DIRECTIONS, pool.map(train, DIRECTIONS)))


def accelerated_stage(stage: int, direction: str) -> Dict[str, Any]:
    """One stage of `scripts/pretrain_lms_accelerated.py train`, from its committed log."""
    log = json.loads((PRETRAINING_LOGS / f"stage{stage}_{direction}.json").read_text())
    run = log["passes"]
    options = " ".join(
        f"--{key.replace('_', '-')} {value}"
        for key, value in log["args"].items()
        if key != "command" and value is not None
    )
    return {
        "stage": stage,
        "note": STAGE_NOTES[stage],
        "command": f"python scripts/pretrain_lms_accelerated.py train {options}",
        "device": log["device"],
        "passes": len(run),
        "tokens": sum(entry["tokens"] for entry in run),
        "seconds": round(sum(entry["seconds"] for entry in run), 1),
        "tokens_per_sec_median": statistics.median(entry["tokens_per_sec"] for entry in run),
        "dev_perplexity_first_pass": round(run[0]["dev_perplexity"], 2),
        "dev_perplexity_last_pass": round(run[-1]["dev_perplexity"], 2),
        "best_dev_perplexity": round(log["best_dev_perplexity"], 2),
    }


def accelerated_pretraining(direction: str) -> Dict[str, Any]:
    """What `scripts/pretrain_lms_accelerated.py train` logged, stage by stage."""
    stages = [accelerated_stage(stage, direction) for stage in sorted(STAGE_NOTES)]
    seconds = sum(stage["seconds"] for stage in stages)
    return {
        "stages": stages,
        "passes": sum(stage["passes"] for stage in stages),
        "tokens_seen": sum(stage["tokens"] for stage in stages),
        "wall_clock_minutes": round(seconds / 60, 1),
        "best_dev_perplexity": stages[-1]["best_dev_perplexity"],
    }


def pretrained_lms(args: argparse.Namespace) -> Dict[str, Any]:
    """Perplexity of the shipped LMs (pretrained/lm_*.tar.gz) on the LM corpus's dev split and
    on WikiText-2 valid, with their pre-training record."""
    results: Dict[str, Any] = {}
    for direction in DIRECTIONS:
        archive = ROOT / "pretrained" / f"lm_{direction}.tar.gz"
        for name, path in (("dev", args.lm_dev), ("wikitext2_valid", args.wikitext)):
            output = ROOT / "runs" / f"pretrained_lm_{direction}_{name}.json"
            evaluate = ["evaluate", str(archive), path, "--output-file", str(output)]
            allennlp.run_allennlp(evaluate, output.with_suffix(".log"))
            ppl = round(json.loads(output.read_text())["perplexity"], 2)
            results[f"pretrained_{direction}_ppl_{name}"] = ppl
        summary = accelerated_pretraining(direction)
        summary["shipped_archive_dev_perplexity"] = results[f"pretrained_{direction}_ppl_dev"]
        results[f"pretrain_accelerated_{direction}"] = summary
    return results


def more_text(args: argparse.Namespace) -> Dict[str, Any]:
    """
    LMs continued on the larger LM corpus by `scripts/pretrain_lms_accelerated.py train
    --resume` (on a pack with the shipped vocabulary; docs/training.md): per run folder of
    `--more-text-runs` and direction it trained (one or both), what the script logged in
    `lm_<direction>.json` (its command, tokens seen, training hours, dev perplexity against
    tokens seen, the best LM's perplexity on each held-out set, the texts of those sets), and
    the first run's corpus. The
    shipped LMs' figures on the same sets are a run of no passes (`train --passes 0 --resume
    <their weights.th>`), as are any LMs' scores on a pack of more held-out sets.
    """
    folders = [Path(folder) for folder in args.more_text_runs]
    logs = []
    for folder in folders:  # a run may train one direction only
        paths = [folder / f"lm_{direction}.json" for direction in DIRECTIONS]
        if not any(path.exists() for path in paths):
            raise SystemExit(f"--more-text-runs {folder}: no lm_forward.json or lm_backward.json")
        logs += [(folder, json.loads(path.read_text())) for path in paths if path.exists()]
    facts = json.loads((ROOT / logs[0][1]["args"]["pack"] / "pack.json").read_text())
    corpus = {key: facts[key] for key in ("train_files", "train_tokens_with_boundaries")}
    section = {"pack": corpus, "runs": [continued_run(*log) for log in logs]}
    section["ner_probes"] = ner_probes(args.more_text_probes)
    return {"more_text": section}


# the goal keys of the taggers on the LMs continued on more text (test F1), by task: the final
# recipe's (un-pruned) and its pruned tagger's
MORE_TEXT_GOALS = {
    "ner": ("conll03_test_f1_ldnet_more_text", "conll03_test_f1_pruned_more_text"),
    "chunk": ("conll00_test_f1_ldnet_more_text", "conll00_test_f1_pruned_more_text"),
}
# the goals of those keys: the figure's name and the least test F1
MORE_TEXT_F1_GOALS = {
    "conll03_test_f1_ldnet_more_text": ("more-text LMs: CoNLL-03", 91.0),
    "conll03_test_f1_pruned_more_text": ("more-text LMs: CoNLL-03, pruned", 91.0),
    "conll00_test_f1_pruned_more_text": ("more-text LMs: CoNLL-00, pruned", 95.0),
}


def run_archive(run: str) -> Path:
    """The archive of the tagging study's run `run` (in its folder under `tagging.RUNS`)."""
    return TAGGING_RUNS / run / "model.tar.gz"


def more_text_test(args: argparse.Namespace) -> Dict[str, Any]:
    """
    The test F1 of the taggers on the LMs of `--more-text-label`, read once, at the end, after
    every choice was made on dev: per task, the final recipe's run of that label with the best
    dev F1 over its seeds (tagging.json's `lm_study`) and the pruned tagger of the run
    pruning_budget.json's `lm_study.<task>_lm-<label>` chose on dev, or of its best run on dev
    where none kept within the loss allowed (`<out>/<run>_pruned.tar.gz` under
    `--more-text-pruning-out`); its keys (`MORE_TEXT_GOALS`) at the top level.
    """
    from benchmarks.studies import pruning_phase2

    label, out = args.more_text_label, args.more_text_pruning_out
    if not label or not out:
        raise SystemExit("more_text_test: give --more-text-label and --more-text-pruning-out")
    tagging, budget = load_results("tagging"), load_results("pruning_budget")
    figures: Dict[str, Any] = {"label": label, "taggers": []}
    keys: Dict[str, float] = {}
    for task, recipe in FINAL_RECIPES.items():
        section = tagging.get("lm_study", {})
        runs = list(seed_runs(section, run_key(recipe, None, label)).values())
        pruning = budget_record(budget, task, label)
        if not runs or not pruning.get("rows"):
            raise SystemExit(f"more_text_test: no {task} runs of {label!r} to choose from yet")
        best = max(runs, key=lambda run: section[run]["best_dev_f1"])
        dev_f1s = {row["run"]: row["dev_f1_pruned"] for row in pruning["rows"]}
        # the run chosen on dev, or where none kept within the loss allowed, the best on dev
        chosen = pruning.get("chosen_run_on_dev") or max(dev_f1s, key=dev_f1s.__getitem__)
        dev = dev_f1s[chosen]
        archives = [
            ("un-pruned", best, section[best]["best_dev_f1"], run_archive(best)),
            ("pruned", chosen, dev, Path(out) / f"{chosen}_pruned.tar.gz"),
        ]
        for (kind, run, dev_f1, archive), key in zip(archives, MORE_TEXT_GOALS[task]):
            log = ROOT / "runs" / f"more_text_test_{task}.log"
            test_f1 = round(pruning_phase2.evaluated_f1(archive, task, "test", log), 2)
            keys[key] = test_f1
            record = {"task": task, "kind": kind, "run": run, "archive": str(archive)}
            figures["taggers"].append({**record, "dev_f1": dev_f1, "test_f1": test_f1})
    return {"more_text_test": figures, **keys}


PROBE_TAGGER = FINAL_RECIPES["ner"]  # the final NER recipe, as lm_passes probes LMs with it
PROBE_EPOCHS = 8


def ner_probes(pairs: List[str]) -> Dict[str, List[Dict[str, Any]]]:
    """
    Per run folder name, the NER probes of its LMs (`FOLDER=LABEL`, `--more-text-probes`): the
    final NER recipe for `PROBE_EPOCHS` epochs, dev only (`python -m benchmarks tagging --runs
    ner_ldnet_glove_sgd --epochs 8 --lm-label LABEL --dev-only ...`, every `--seed` run),
    from tagging.json: each run's dev F1 by epoch and its mean over the late epochs
    (`tagging_results.late_mean`, as the lm_passes table has it). LABEL `shipped`: the
    recipe's own runs on the shipped LMs, every seed, cut to the same epochs.
    """
    tagging = load_results("tagging")
    probes: Dict[str, List[Dict[str, Any]]] = {}
    for pair in pairs:
        folder, _, label = pair.partition("=")
        if not label:
            raise SystemExit(f"--more-text-probes {pair!r}: give FOLDER=LABEL")
        shipped = label == "shipped"  # the recipe's own runs, else the study's of the label
        section = tagging if shipped else tagging.get("lm_study", {})
        key = PROBE_TAGGER if shipped else run_key(PROBE_TAGGER, None, label)
        runs = {name: section[name] for name in seed_runs(section, key).values()}
        if not runs and not shipped:
            raise SystemExit(f"--more-text-probes {pair!r}: tagging.json has no lm_study.{key}")
        probes[Path(folder).name] = [
            {
                "run": name,
                "command": record.get("command"),
                "dev_f1_by_epoch": record["dev_f1_by_epoch"][:PROBE_EPOCHS],
                "late_mean_dev_f1": late_mean(record["dev_f1_by_epoch"], PROBE_EPOCHS),
            }
            for name, record in runs.items()
        ]
    return probes


def continued_run(folder: Path, log: Dict[str, Any]) -> Dict[str, Any]:
    """One direction's record of one run (`more_text`), from its log: the command of each of
    its processes (a run continued with `--recover` has several), first to last."""
    return {
        "run": folder.name,
        "direction": log["direction"],
        "commands": [script_command(args) for args in log.get("args_history", [log["args"]])],
        "tokens_seen": sum(entry["tokens"] for entry in log["passes"]),
        "hours": round(sum(entry["seconds"] for entry in log["passes"]) / 3600, 2),
        "device": log["device"],
        "dev_perplexity_start": round(log["dev_perplexity_start"], 2),
        "best_dev_perplexity": round(log["best_dev_perplexity"], 2),
        "curve": log["curve"],
        "held_out_perplexity": {
            name: round(value, 2) for name, value in log.get("extra_dev_perplexity", {}).items()
        },
        "held_out_files": held_out_files(ROOT / log["args"]["pack"]),
    }


def held_out_files(pack: Path) -> Dict[str, str]:
    """The texts a pack's held-out perplexities are of: `dev` (`best_dev_perplexity`), then
    each of its `extra_dev` sets (`held_out_perplexity`); {} if the pack is gone."""
    path = pack / "pack.json"
    if not path.exists():
        return {}
    facts = json.loads(path.read_text())
    return {"dev": facts["dev_file"], **facts.get("extra_dev", {})}


def script_command(args: Dict[str, Any]) -> str:
    """The `pretrain_lms_accelerated.py train` command line of a log's arguments."""
    settings = {
        k: v for k, v in args.items() if k != "command" and v is not None and v is not False
    }
    flags = [
        f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in settings.items()
    ]
    return " ".join(["python scripts/pretrain_lms_accelerated.py train"] + flags)


def measured(name: str, measure: Callable[[argparse.Namespace], Dict[str, Any]]) -> Callable:
    """A stage that adds `measure(args)` to lm.json with its `<name>_command`."""

    def run(args: argparse.Namespace) -> None:
        figures = measure(args)
        figures.update({f"{name}_command": command_line(), "command": COMMAND, "title": TITLE})
        print(json.dumps(write_results(RESULTS, figures), indent=2, sort_keys=True))

    return run


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The training throughput against its goal, and the shipped LMs' perplexities."""
    lines = [
        headline(results, "dense LM training, tokens/s (1 thread)", "tokens_per_sec_dense"),
        headline(results, "AllenNLP LM training, tokens/s", "tokens_per_sec_allennlp_lstm"),
        headline(
            results,
            "training throughput, dense / AllenNLP LM",
            "throughput_ratio_dense_over_allennlp_lstm",
            *at_least(RATIO_GOAL, "x"),
        ),
    ]
    for direction in DIRECTIONS[:1]:  # the forward LM's (lm.json has the backward LM's too)
        shipped = f"shipped {direction} LM"
        key = f"pretrained_{direction}_ppl"
        lines.append(headline(results, f"{shipped}, LM-corpus dev perplexity", f"{key}_dev"))
        figure = f"{shipped}, WikiText-2 valid perplexity (our vocab)"
        lines.append(headline(results, figure, f"{key}_wikitext2_valid"))
    for key, (figure, goal) in MORE_TEXT_F1_GOALS.items():
        if key in results:
            lines.append(headline(results, figure, key, *at_least(goal)))
    return lines


STUDY = Study(
    name="lm",
    description="Dense LMs: CPU pre-training, training throughput vs AllenNLP's LM, perplexity.",
    results_file="lm.json",
    stages=[
        Stage("pretrain", pretrain, "both LMs on CPU (runs/)"),
        Stage("throughput", measured("throughput", lm_throughput.throughput), "tokens/s"),
        Stage("pretrained", measured("pretrained", pretrained_lms), "shipped LMs' perplexity"),
        Stage("more_text", measured("more_text", more_text), "LMs continued on more text"),
        Stage(
            "more_text_test",
            measured("more_text_test", more_text_test),
            "test F1 of the taggers on those LMs chosen on dev, read once at the end",
        ),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
