"""
The dense language models (issue 3). Writes benchmarks/results/lm.json.

    python -m benchmarks lm --stage pretrain      # CPU pre-training into runs/lm_* (resumable)
    python -m benchmarks lm --stage throughput    # dense LM vs allennlp-models' LM, tokens/s
    python -m benchmarks lm --stage ppl           # WikiText-2 valid perplexity of runs/lm_*
    python -m benchmarks lm --stage pretrained    # the same for the shipped pretrained/lm_*
    python -m benchmarks lm --stage report        # only the derived keys (summary tables)

`lm_throughput.py` holds the throughput stage, `lm_pretraining.py` the others. `--part` (the
earlier spelling, in the commands lm.json records) picks stages too: `all` = throughput + ppl.
The shipped LMs were trained on an accelerator by scripts/pretrain_lms_accelerated.py
(pack/train/archive); `--stage pretrain` is the CPU path.
"""

import argparse
import json
import os
from typing import Any, Callable, Dict, List

from benchmarks.harness.data import ROOT
from benchmarks.harness.results import command_line, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline
from benchmarks.harness.timing import MIN_ROUNDS
from benchmarks.studies import lm_pretraining, lm_throughput

RESULTS = "lm"
PARTS = {"throughput": ("throughput",), "ppl": ("ppl",), "pretrained": ("pretrained",)}
PARTS.update(all=("throughput", "ppl"), report=("report",))
COMMAND = (
    "the shipped LMs (pretrained/lm_*.tar.gz): scripts/pretrain_lms_accelerated.py "
    "pack/train/archive (commands per stage under pretrain_accelerated_*), then "
    "python -m benchmarks lm --stage pretrained; the CPU path: python -m benchmarks lm --stage "
    "pretrain, python -m benchmarks lm --stage ppl|throughput"
)
RATIO_GOAL = 1.0  # issue 3: the dense LM trains at least as fast as AllenNLP's


def add_arguments(parser: argparse.ArgumentParser) -> None:
    runs = ROOT / "runs"
    parser.add_argument("--part", choices=list(PARTS), help="the earlier spelling of --stage")
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
    parser.add_argument(
        "--lm-data", default=os.environ.get("LM_DATA", "runs/lm_data"), help=pretrain
    )
    epochs = int(os.environ.get("LM_EPOCHS", 5))
    parser.add_argument("--epochs", type=int, default=epochs, help="pretrain: 250 batches each")
    directions = os.environ.get("LM_DIRECTIONS", "forward backward").split()
    parser.add_argument(
        "--directions", nargs="+", choices=lm_pretraining.DIRECTIONS, default=directions
    )


def part(name: str, run: Callable[[argparse.Namespace], None]) -> Callable:
    """`run` as a stage, skipped when `--part` names other stages."""

    def stage(args: argparse.Namespace) -> None:
        if args.part is None or name in PARTS[args.part]:
            run(args)

    return stage


def measured(name: str, measure: Callable[[argparse.Namespace], Dict[str, Any]]) -> Callable:
    """A stage that adds `measure(args)` to lm.json with its `<name>_command`."""

    def run(args: argparse.Namespace) -> None:
        figures = measure(args)
        figures.update({f"{name}_command": command_line(), "command": COMMAND})
        results = write_results(RESULTS, figures, finish=finish)
        print(json.dumps(results, indent=2, sort_keys=True))

    return part(name, run)


def report(args: argparse.Namespace) -> None:
    """Recomputes the derived keys of lm.json (`finish`)."""
    write_results(RESULTS, {}, finish=finish)


def finish(results: Dict[str, Any]) -> None:
    """The keys derived from the figures: one corpus pass's hours, the title, the tables."""
    corpus_tokens = results.get("lm_corpus", {}).get("train_tokens")
    if corpus_tokens and results.get("tokens_per_sec_dense"):
        # what one pass over the LM corpus costs one direction at the measured training rate
        hours = corpus_tokens / results["tokens_per_sec_dense"] / 3600
        results["full_corpus_pass_hours_per_direction"] = round(hours, 2)
    results["title"] = "Dense language models: throughput and perplexity (issue 3)"
    results["summary"] = tables(results)


THROUGHPUT_CAPTION = (
    "Training throughput, tokens/s (goal from issue 3: dense / AllenNLP >= 1.0). Dense: 6 x 128 "
    "dense LSTM + adaptive softmax; AllenNLP: allennlp-models' language_model, stacked LSTM of "
    "the same parameter count, its sampled softmax. Setup under `throughput_setup`."
)
PPL_COLUMNS = ["LM", "WikiText-2 valid ppl", "LM-corpus dev ppl", "tokens seen", "wall-clock min"]


def tables(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """lm.json's `summary`: the throughput and perplexity tables, from its keys."""
    found = []
    if "tokens_per_sec_dense" in results:
        rows = []
        for timed, suffix in (("whole LM (training step)", ""), ("encoder only", "_encoder_only")):
            dense = results.get(f"tokens_per_sec_dense{suffix}")
            lstm = results.get(f"tokens_per_sec_allennlp_lstm{suffix}")
            if dense and lstm:
                rows.append([timed, dense, lstm, round(dense / lstm, 2)])
        columns = ["timed", "dense LM", "AllenNLP LM", "ratio"]
        found.append({"caption": THROUGHPUT_CAPTION, "columns": columns, "rows": rows})
    rows = []
    for direction in lm_pretraining.DIRECTIONS:
        pretrain = results.get(f"pretrain_{direction}", {})
        if f"ppl_{direction}_wikitext2_valid" in results:
            row = [direction, results[f"ppl_{direction}_wikitext2_valid"]]
            keys = ("best_dev_perplexity", "tokens_seen_approx", "wall_clock_minutes")
            rows.append(row + [pretrain.get(key) for key in keys])
    if rows:
        caption = "Pre-trained LMs: perplexity (see `ppl_note`) and pre-training budget."
        found.append({"caption": caption, "columns": PPL_COLUMNS, "rows": rows})
    return found


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The training throughput against issue 3's goal, and the shipped LMs' perplexities."""
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
    for direction in lm_pretraining.DIRECTIONS:
        lines.append(
            headline(
                results,
                f"shipped {direction} LM, LM-corpus dev perplexity",
                f"pretrained_{direction}_ppl_dev",
            )
        )
        lines.append(
            headline(
                results,
                f"shipped {direction} LM, WikiText-2 valid perplexity (our vocabulary)",
                f"pretrained_{direction}_ppl_wikitext2_valid",
            )
        )
    return lines


STUDY = Study(
    name="lm",
    description="Dense LMs: CPU pre-training, training throughput vs AllenNLP's LM, perplexity.",
    results_file="lm.json",
    stages=[
        Stage("pretrain", part("pretrain", lm_pretraining.pretrain), "both LMs on CPU (runs/)"),
        Stage("throughput", measured("throughput", lm_throughput.throughput), "tokens/s"),
        Stage("ppl", measured("ppl", lm_pretraining.perplexity), "perplexity of runs/lm_*"),
        Stage("pretrained", measured("pretrained", lm_pretraining.pretrained_lms), "shipped LMs"),
        Stage("report", part("report", report), "only recompute lm.json's derived keys"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
