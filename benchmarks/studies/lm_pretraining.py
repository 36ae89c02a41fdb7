"""
The `lm` study's pre-training and perplexity stages (issue 3):

- `pretrain`: the forward and backward dense LMs pre-trained on CPU into runs/lm_forward and
  runs/lm_backward (git-ignored), side by side with one thread each; each ends with
  model.tar.gz, which the LD-Net tagger loads. Resumable: a run directory left by an
  interrupted run is continued (`allennlp train --recover`), and `--epochs` may differ from the
  first run's (the run's saved config.json gets the new trainer.num_epochs, the only key
  allowed to change). Logs: runs/lm_forward.log, runs/lm_backward.log. Budget: an "epoch" is
  250 batches of ~64 sentences (~360k tokens; see the configs); the default 5 epochs (about a
  third of the 5.9M-token corpus per direction) fit both directions in about an hour on a
  shared 2-core CPU. The configs' own default (16 epochs) is one full pass.
- `ppl`: `allennlp evaluate` of those LMs on WikiText-2 valid as converted by
  scripts/prepare_lm_corpus.py (perplexity over our vocabulary; WikiText's <unk> counts as our
  unknown token, so not comparable with published WikiText-2 results), with each run's
  pre-training wall-clock and batches.
- `pretrained`: the same for the shipped LMs (pretrained/lm_*.tar.gz), on the LM corpus's dev
  split too, with what `scripts/pretrain_lms_accelerated.py train` logged per stage (committed
  under benchmarks/results/lm_pretraining/).
"""

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict

from benchmarks.harness import allennlp
from benchmarks.harness.data import ROOT
from benchmarks.harness.results import RESULTS_DIR
from benchmarks.harness.runs import trained

PRETRAINING_LOGS = RESULTS_DIR / "lm_pretraining"
STAGE_NOTES = {
    1: "from scratch, lr 0.002; corpus pack_stage1_2.json, which by mistake read CoNLL-00's "
    "train.txt as LM text (each token line a 3-word sentence: ~1.06M of its 7.73M tokens)",
    2: "continued from stage 1 at lr 0.001, same corpus",
    3: "continued from stage 2 (weights sent in fp16) at lr 0.0005 on the corrected corpus "
    "pack_stage3.json (LM text + CoNLL-03/CoNLL-00 train words, same vocabulary)",
}
DIRECTIONS = ("forward", "backward")


def pretrain(args: argparse.Namespace) -> None:
    """Both directions (`--directions`) side by side, `--threads` each; the corpus is prepared
    into `--lm-data` first if it is not there."""
    data = args.lm_data  # relative to the project root, as the runs' saved configs have it
    if not (ROOT / data / "train.txt").exists():
        prepare = [sys.executable, "scripts/prepare_lm_corpus.py", "--output", data]
        subprocess.run(prepare, cwd=ROOT, check=True)
    env = {"LM_TRAIN_DATA_PATH": f"{data}/train.txt", "LM_VALIDATION_DATA_PATH": f"{data}/dev.txt"}
    with ThreadPoolExecutor(max_workers=len(args.directions)) as pool:
        runs = [
            pool.submit(pretrain_direction, direction, args.epochs, env, args.threads)
            for direction in args.directions
        ]
    failed = [str(run.exception()) for run in runs if run.exception() is not None]
    print(f"{utc_now()} done (status {int(bool(failed))})")
    if failed:
        raise SystemExit("; ".join(failed))


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def pretrain_direction(direction: str, epochs: int, env: Dict[str, str], threads: int) -> None:
    """One direction into runs/lm_<direction>: skipped when finished, else trained or resumed,
    after a `<date> start` line in runs/lm_<direction>.log (`pretraining_summary` reads it)."""
    out, log = ROOT / "runs" / f"lm_{direction}", ROOT / "runs" / f"lm_{direction}.log"
    # finished = an archive and metrics.json; a run stopped before its last epoch leaves the
    # archive of its best epoch so far without metrics.json: `trained` moves it aside
    if trained(out):
        print(f"runs/lm_{direction}/model.tar.gz exists; skipping {direction}")
        return
    config = out / "config.json"
    if config.exists():
        saved = json.loads(config.read_text())
        saved["trainer"]["num_epochs"] = epochs
        config.write_text(json.dumps(saved, indent=4))
    line = f"{utc_now()} start {direction} -> runs/lm_{direction} "
    line += "--recover" if config.exists() else ""
    print(line, flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(line + "\n")
    jsonnet = ROOT / "training_configs" / "lm" / f"dense_lm_{direction}.jsonnet"
    allennlp.train(jsonnet, out, log, {"trainer.num_epochs": epochs}, env, threads)


def pretraining_summary(run_dir: Path, direction: str) -> Dict[str, Any]:
    """Batches, wall-clock and dev perplexity of a (possibly stopped and resumed) LM run: read
    from the last `metrics_epoch_N.json` and, for the wall-clock, from the first start line in
    runs/lm_<direction>.log (written by the `pretrain` stage) to that file's mtime."""
    epochs = sorted(int(p.stem[len("metrics_epoch_") :]) for p in run_dir.glob("metrics_epoch_*"))
    last = run_dir / f"metrics_epoch_{epochs[-1]}.json"
    training = json.loads(last.read_text())
    config = json.loads((run_dir / "config.json").read_text())
    batches_per_epoch = config["data_loader"]["batches_per_epoch"]
    summary = {
        "epochs_completed": epochs[-1] + 1,
        "batches": (epochs[-1] + 1) * batches_per_epoch,
        "batches_per_epoch": batches_per_epoch,
        "batch_size_sentences": config["data_loader"]["batch_sampler"]["batch_size"],
        "best_dev_perplexity": round(training["best_validation_perplexity"], 2),
        "best_epoch": training["best_epoch"],
    }
    log = ROOT / "runs" / f"lm_{direction}.log"
    starts = []
    if log.exists():
        with open(log, errors="replace") as log_file:
            starts = [line.split()[0] for line in log_file if " start " in line[:40]]
    if starts:
        started = datetime.datetime.strptime(starts[0], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc
        )
        ended = datetime.datetime.fromtimestamp(last.stat().st_mtime, datetime.timezone.utc)
        summary["started_utc"] = started.isoformat()
        summary["last_epoch_finished_utc"] = ended.isoformat(timespec="seconds")
        summary["wall_clock_minutes"] = round((ended - started).total_seconds() / 60, 1)
    return summary


def perplexity(args: argparse.Namespace) -> Dict[str, Any]:
    """lm.json's keys of the CPU-trained LMs: WikiText-2 valid perplexity, pre-training record."""
    corpus = json.loads((Path(args.wikitext).parent / "report.json").read_text())
    files = corpus["files"]
    results: Dict[str, Any] = {
        "lm_corpus": {
            "train_tokens": files["train.txt"]["tokens"],
            "train_sentences": files["train.txt"]["sentences"],
            "sources": sorted(corpus["sources"]),
            "wikitext2_valid_tokens": files["wikitext2_valid.txt"]["tokens"],
            "wikitext2_valid_sentences": files["wikitext2_valid.txt"]["sentences"],
        },
        "ppl_note": (
            "Token-weighted perplexity over our 40k vocabulary (each sentence wrapped in <S> "
            "</S>; WikiText's <unk> and any word outside our vocabulary count as @@UNKNOWN@@), so "
            "not comparable with published WikiText-2 numbers. The LMs were trained on news/Brown/"
            "SOTU text, not Wikipedia, for only the batches given under pretrain_*."
        ),
    }
    for direction in DIRECTIONS:
        run_dir = ROOT / "runs" / f"lm_{direction}"
        archive = run_dir / "model.tar.gz"
        if not archive.exists():
            print(f"{archive} does not exist yet; skipping {direction}", file=sys.stderr)
            continue
        output = run_dir / "wikitext2_valid_metrics.json"
        start = time.time()
        if output.exists() and output.stat().st_mtime > archive.stat().st_mtime:
            print(f"reusing {output} (newer than the archive)", file=sys.stderr)
        else:
            evaluate = ["evaluate", str(archive), args.wikitext, "--output-file", str(output)]
            allennlp.run_allennlp(evaluate, run_dir / "wikitext2_valid_evaluate.log")
            results[f"eval_seconds_{direction}"] = round(time.time() - start, 1)
        metrics = json.loads(output.read_text())
        results[f"ppl_{direction}_wikitext2_valid"] = round(metrics["perplexity"], 2)
        results[f"pretrain_{direction}"] = tokens_seen(
            pretraining_summary(run_dir, direction), files["train.txt"]
        )
    return results


def tokens_seen(summary: Dict[str, Any], train: Dict[str, int]) -> Dict[str, Any]:
    """`summary` with the tokens seen: batches x sentences per batch x mean sentence length
    (+ <S>, </S>), the fraction of the corpus, and tokens/s over the wall-clock."""
    tokens_per_sentence = train["tokens"] / train["sentences"] + 2
    sentences = summary["batches"] * summary["batch_size_sentences"]
    summary["tokens_seen_approx"] = int(sentences * tokens_per_sentence)
    summary["fraction_of_corpus_approx"] = round(sentences / train["sentences"], 3)
    if "wall_clock_minutes" in summary:
        summary["tokens_per_sec_approx"] = round(
            summary["tokens_seen_approx"] / (summary["wall_clock_minutes"] * 60), 1
        )
    return summary


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
        # the perplexity table of BENCHMARKS.md shows the shipped LMs from now on
        results[f"ppl_{direction}_wikitext2_valid"] = results[
            f"pretrained_{direction}_ppl_wikitext2_valid"
        ]
        results[f"pretrain_{direction}"] = {
            "best_dev_perplexity": results[f"pretrained_{direction}_ppl_dev"],
            "tokens_seen_approx": summary["tokens_seen"],
            "wall_clock_minutes": summary["wall_clock_minutes"],
            "passes": summary["passes"],
            "where": "accelerator (pretrain_accelerated_*), fp16 archive in pretrained/",
        }
    return results
