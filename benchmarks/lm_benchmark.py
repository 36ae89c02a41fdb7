#!/usr/bin/env python
"""
Benchmarks for the dense language models (issue 3). Writes benchmarks/results/lm.json.

(a) Training throughput (`--part throughput`): tokens/s of one full training step (forward,
    backward, Adam step) of our `dense_language_model` (configs: training_configs/lm/)
    versus allennlp-models' `language_model` with a stacked `lstm` contextualizer whose parameter
    count matches our dense LSTM stack (same 6 layers, hidden size solved for), same embedding
    size, same vocabulary, same batches, in the same process. allennlp-models' LM uses its
    sampled softmax (`num_samples` 8192, as in its own LM configs); ours its adaptive softmax.
    The two models alternate in rounds of `--batches` batches (after warm-up batches), and the
    median over rounds is reported, so load from other processes on this shared CPU hits both
    alike. Also reported: the same for the contextualizers alone (embedding + encoder, loss =
    sum of outputs), which isolates dense-LSTM-vs-stacked-LSTM cost from the softmax heads.
    Tokens = non-padding tokens of the batch, including <S> and </S>.

(b) Perplexity (`--part ppl`): `allennlp evaluate` of runs/lm_forward/model.tar.gz and
    runs/lm_backward/model.tar.gz on WikiText-2 valid as converted by
    scripts/prepare_lm_corpus.py (perplexity over our vocabulary; WikiText's <unk> counts as
    our unknown token, so the numbers are not comparable with published WikiText-2 results),
    plus each run's pre-training wall-clock and batches from its metrics.json.

    python benchmarks/lm_benchmark.py --part throughput
    python benchmarks/lm_benchmark.py --part ppl
"""

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Dict, List

import torch

from allennlp.common import Params
from allennlp.data import Batch, Vocabulary
from allennlp.models import Model

import ldnet_allennlp  # noqa: F401
from ldnet_allennlp.lm import DenseLMTextDatasetReader

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.common import ROOT, hardware, load_results, save_results  # noqa: E402


def lstm_parameters(input_size: int, hidden: int, layers: int) -> int:
    return sum(
        4 * hidden * ((input_size if i == 0 else hidden) + hidden) + 8 * hidden
        for i in range(layers)
    )


def matching_lstm_hidden(target: int, input_size: int, layers: int) -> int:
    return min(range(1, 4096), key=lambda h: abs(lstm_parameters(input_size, h, layers) - target))


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def throughput(args) -> Dict:
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    os.environ.setdefault("LM_TRAIN_DATA_PATH", args.data)
    os.environ.setdefault("LM_VALIDATION_DATA_PATH", args.data)
    config = Params.from_file(os.path.join(ROOT, "training_configs/lm/dense_lm_forward.jsonnet"))
    model_params = config.pop("model").as_dict(quiet=True)
    if args.cutoffs:  # only for smoke tests on tiny vocabularies
        model_params["cutoffs"] = [int(c) for c in args.cutoffs.split(",")]
    batch_size = args.batch_size or config["data_loader"]["batch_sampler"]["batch_size"]

    reader = DenseLMTextDatasetReader(max_sequence_length=100)
    instances = []
    for instance in reader.read(args.data):
        instances.append(instance)
        if len(instances) >= args.sentences:
            break
    if os.path.isdir(args.vocabulary):
        vocab = Vocabulary.from_files(args.vocabulary)
        vocab_source = args.vocabulary
    else:
        vocab = Vocabulary.from_instances(instances, max_vocab_size={"tokens": 40000})
        vocab_source = f"built from the first {len(instances)} sentences of {args.data}"
    # Batches of similar length (as the bucket sampler makes them), in a fixed random order.
    instances.sort(key=lambda i: len(i["source"].tokens))
    batches = []
    for start in range(0, len(instances) - batch_size + 1, batch_size):
        batch = Batch(instances[start : start + batch_size])
        batch.index_instances(vocab)
        batches.append(batch.as_tensor_dict())
    generator = torch.Generator().manual_seed(0)
    batches = [batches[i] for i in torch.randperm(len(batches), generator=generator)]

    dense = Model.from_params(vocab=vocab, params=Params(dict(model_params)))
    stack_parameters = count(dense.encoder)
    embedding_dim = dense.embedding_dim
    hidden = matching_lstm_hidden(stack_parameters, embedding_dim, dense.num_layers)
    allennlp_lm = Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "language_model",
                "text_field_embedder": {
                    "token_embedders": {
                        "tokens": {"type": "embedding", "embedding_dim": embedding_dim}
                    }
                },
                "contextualizer": {
                    "type": "lstm",
                    "input_size": embedding_dim,
                    "hidden_size": hidden,
                    "num_layers": dense.num_layers,
                },
                "dropout": 0.1,
                "num_samples": min(8192, vocab.get_vocab_size("tokens") // 2),
            }
        ),
    )
    models = {"dense": dense, "allennlp_lstm": allennlp_lm}
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=1e-3) for name, m in models.items()}

    def encoder_only_loss(name, model, batch):
        source = batch["source"]
        mask = source["tokens"]["tokens"] != 0
        if name == "dense":
            return model.contextual_embeddings(source, mask).sum()
        embedded = model._text_field_embedder(source)
        return model._contextualizer(embedded, mask).sum()

    def run(name: str, round_batches: List[Dict], encoder_only: bool) -> float:
        model, optimizer = models[name], optimizers[name]
        model.train()
        tokens = 0
        start = time.perf_counter()
        for batch in round_batches:
            optimizer.zero_grad()
            if encoder_only:
                loss = encoder_only_loss(name, model, batch)
            else:
                loss = model(**batch)["loss"]
            loss.backward()
            optimizer.step()
            tokens += int((batch["source"]["tokens"]["tokens"] != 0).sum())
        return tokens / (time.perf_counter() - start)

    load_at_start = list(os.getloadavg())
    results = {"full": {n: [] for n in models}, "encoder_only": {n: [] for n in models}}
    needed = args.warmup + args.rounds * args.batches
    if len(batches) < needed:
        raise SystemExit(f"need {needed} batches, have {len(batches)}: raise --sentences")
    start_time = time.time()
    for name in models:  # warm-up (allocations, first-call overheads)
        run(name, batches[: args.warmup], encoder_only=False)
    for r in range(args.rounds):
        round_batches = batches[args.warmup + r * args.batches :][: args.batches]
        order = list(models) if r % 2 == 0 else list(reversed(list(models)))
        for kind in ("full", "encoder_only"):
            for name in order:
                tokens_per_sec = run(name, round_batches, encoder_only=kind == "encoder_only")
                results[kind][name].append(tokens_per_sec)
                print(f"round {r} {kind:>12} {name:>13}: {tokens_per_sec:8.0f} tokens/s")
    median = {k: {n: statistics.median(v) for n, v in d.items()} for k, d in results.items()}
    tokens_per_batch = statistics.mean(
        int((b["source"]["tokens"]["tokens"] != 0).sum()) for b in batches[:needed]
    )
    return {
        "throughput_note": (
            "Median over interleaved rounds, one torch thread, on a 2-core CPU shared with other "
            "jobs (load averages under throughput_setup.hardware): absolute numbers depend on the "
            "load, the ratio is measured in one run."
        ),
        "tokens_per_sec_dense": round(median["full"]["dense"], 1),
        "tokens_per_sec_allennlp_lstm": round(median["full"]["allennlp_lstm"], 1),
        "throughput_ratio_dense_over_allennlp_lstm": round(
            median["full"]["dense"] / median["full"]["allennlp_lstm"], 3
        ),
        "tokens_per_sec_dense_encoder_only": round(median["encoder_only"]["dense"], 1),
        "tokens_per_sec_allennlp_lstm_encoder_only": round(
            median["encoder_only"]["allennlp_lstm"], 1
        ),
        "throughput_runs_tokens_per_sec": {
            k: {n: [round(x, 1) for x in v] for n, v in d.items()} for k, d in results.items()
        },
        "throughput_setup": {
            "batch_size_sentences": batch_size,
            "mean_tokens_per_batch": round(tokens_per_batch, 1),
            "warmup_batches": args.warmup,
            "rounds": args.rounds,
            "batches_per_round": args.batches,
            "data": args.data,
            "vocabulary": vocab_source,
            "vocab_size": vocab.get_vocab_size("tokens"),
            "dense_lm_parameters": count(dense),
            "dense_stack_parameters": stack_parameters,
            "dense_stack": f"{dense.num_layers} layers x {dense.hidden_size} hidden, "
            f"{embedding_dim}-d embeddings, output {dense.get_output_dim()}",
            "allennlp_lm_parameters": count(allennlp_lm),
            "allennlp_lstm_parameters": count(allennlp_lm._contextualizer),
            "allennlp_lstm": f"{dense.num_layers} layers x {hidden} hidden (stacked torch LSTM), "
            "sampled softmax with 8192 samples",
            "seconds": round(time.time() - start_time, 1),
            "hardware": {
                **hardware(),
                "load_average_at_start": load_at_start,
                "load_average_at_end": list(os.getloadavg()),
            },
        },
    }


def pretraining_summary(run_dir: str, direction: str) -> Dict:
    """Batches, wall-clock and dev perplexity of a (possibly stopped and resumed) LM run: read
    from the last `metrics_epoch_N.json` and, for the wall-clock, from the first start line in
    runs/lm_<direction>.log (written by benchmarks/pretrain_lms.sh) to that file's mtime."""
    epochs = sorted(
        int(name[len("metrics_epoch_") : -len(".json")])
        for name in os.listdir(run_dir)
        if name.startswith("metrics_epoch_")
    )
    last = os.path.join(run_dir, f"metrics_epoch_{epochs[-1]}.json")
    with open(last) as metrics_file:
        training = json.load(metrics_file)
    with open(os.path.join(run_dir, "config.json")) as config_file:
        config = json.load(config_file)
    batches_per_epoch = config["data_loader"]["batches_per_epoch"]
    summary = {
        "epochs_completed": epochs[-1] + 1,
        "batches": (epochs[-1] + 1) * batches_per_epoch,
        "batches_per_epoch": batches_per_epoch,
        "batch_size_sentences": config["data_loader"]["batch_sampler"]["batch_size"],
        "best_dev_perplexity": round(training["best_validation_perplexity"], 2),
        "best_epoch": training["best_epoch"],
    }
    log = os.path.join(ROOT, "runs", f"lm_{direction}.log")
    if os.path.exists(log):
        with open(log, errors="replace") as log_file:
            starts = [line.split()[0] for line in log_file if " start " in line[:40]]
        if starts:
            started = datetime.datetime.strptime(starts[0], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc
            )
            ended = datetime.datetime.fromtimestamp(os.path.getmtime(last), datetime.timezone.utc)
            summary["started_utc"] = started.isoformat()
            summary["last_epoch_finished_utc"] = ended.isoformat(timespec="seconds")
            summary["wall_clock_minutes"] = round((ended - started).total_seconds() / 60, 1)
    return summary


def perplexity(args) -> Dict:
    results = {}
    with open(os.path.join(os.path.dirname(args.wikitext), "report.json")) as report:
        corpus = json.load(report)
    results["lm_corpus"] = {
        "train_tokens": corpus["files"]["train.txt"]["tokens"],
        "train_sentences": corpus["files"]["train.txt"]["sentences"],
        "sources": sorted(corpus["sources"]),
        "wikitext2_valid_tokens": corpus["files"]["wikitext2_valid.txt"]["tokens"],
        "wikitext2_valid_sentences": corpus["files"]["wikitext2_valid.txt"]["sentences"],
    }
    results["ppl_note"] = (
        "Token-weighted perplexity over our 40k vocabulary (each sentence wrapped in <S> </S>; "
        "WikiText's <unk> and any word outside our vocabulary count as @@UNKNOWN@@), so not "
        "comparable with published WikiText-2 numbers. The LMs were trained on news/Brown/SOTU "
        "text, not Wikipedia, for only the batches given under pretrain_*."
    )
    for direction in ("forward", "backward"):
        run_dir = os.path.join(ROOT, "runs", f"lm_{direction}")
        archive = os.path.join(run_dir, "model.tar.gz")
        if not os.path.exists(archive):
            print(f"{archive} does not exist yet; skipping {direction}", file=sys.stderr)
            continue
        output = os.path.join(run_dir, "wikitext2_valid_metrics.json")
        command = [
            os.path.join(os.path.dirname(sys.executable), "allennlp"),
            "evaluate",
            archive,
            args.wikitext,
            "--output-file",
            output,
            "--include-package",
            "ldnet_allennlp",
        ]
        start = time.time()
        if os.path.exists(output) and os.path.getmtime(output) > os.path.getmtime(archive):
            print(f"reusing {output} (newer than the archive)", file=sys.stderr)
        else:
            print(" ".join(command), file=sys.stderr)
            subprocess.run(command, check=True)
            results[f"eval_seconds_{direction}"] = round(time.time() - start, 1)
        with open(output) as metrics_file:
            metrics = json.load(metrics_file)
        results[f"ppl_{direction}_wikitext2_valid"] = round(metrics["perplexity"], 2)
        summary = pretraining_summary(run_dir, direction)
        # Tokens seen: batches x sentences per batch x mean sentence length (+ <S>, </S>).
        train = corpus["files"]["train.txt"]
        tokens_per_sentence = train["tokens"] / train["sentences"] + 2
        summary["tokens_seen_approx"] = int(
            summary["batches"] * summary["batch_size_sentences"] * tokens_per_sentence
        )
        summary["fraction_of_corpus_approx"] = round(
            summary["batches"] * summary["batch_size_sentences"] / train["sentences"], 3
        )
        if "wall_clock_minutes" in summary:
            summary["tokens_per_sec_approx"] = round(
                summary["tokens_seen_approx"] / (summary["wall_clock_minutes"] * 60), 1
            )
        results[f"pretrain_{direction}"] = summary
    return results


PRETRAINING_LOGS = os.path.join(ROOT, "benchmarks/results/lm_pretraining")
STAGE_NOTES = {
    1: "from scratch, lr 0.002; corpus pack_stage1_2.json, which by mistake read CoNLL-00's "
    "train.txt as LM text (each token line a 3-word sentence: ~1.06M of its 7.73M tokens)",
    2: "continued from stage 1 at lr 0.001, same corpus",
    3: "continued from stage 2 (weights sent in fp16) at lr 0.0005 on the corrected corpus "
    "pack_stage3.json (LM text + CoNLL-03/CoNLL-00 train words, same vocabulary)",
}


def accelerated_pretraining(direction: str) -> Dict:
    """What `scripts/pretrain_lms_accelerated.py train` logged, stage by stage (committed under
    benchmarks/results/lm_pretraining/)."""
    stages, passes, tokens, seconds = [], 0, 0, 0.0
    for stage in sorted(STAGE_NOTES):
        with open(os.path.join(PRETRAINING_LOGS, f"stage{stage}_{direction}.json")) as log_file:
            log = json.load(log_file)
        args = log["args"]
        run = log["passes"]
        stages.append(
            {
                "stage": stage,
                "note": STAGE_NOTES[stage],
                "command": "python scripts/pretrain_lms_accelerated.py train "
                + " ".join(
                    f"--{key.replace('_', '-')} {value}"
                    for key, value in args.items()
                    if key != "command" and value is not None
                ),
                "device": log["device"],
                "passes": len(run),
                "tokens": sum(entry["tokens"] for entry in run),
                "seconds": round(sum(entry["seconds"] for entry in run), 1),
                "tokens_per_sec_median": statistics.median(
                    entry["tokens_per_sec"] for entry in run
                ),
                "dev_perplexity_first_pass": round(run[0]["dev_perplexity"], 2),
                "dev_perplexity_last_pass": round(run[-1]["dev_perplexity"], 2),
                "best_dev_perplexity": round(log["best_dev_perplexity"], 2),
            }
        )
        passes += len(run)
        tokens += stages[-1]["tokens"]
        seconds += stages[-1]["seconds"]
    return {
        "stages": stages,
        "passes": passes,
        "tokens_seen": tokens,
        "wall_clock_minutes": round(seconds / 60, 1),
        "best_dev_perplexity": stages[-1]["best_dev_perplexity"],
    }


def pretrained_lms(args) -> Dict:
    """Perplexity of the shipped LMs (pretrained/lm_*.tar.gz) on the LM corpus's dev split and
    on WikiText-2 valid, with their pre-training record."""
    results = {}
    for direction in ("forward", "backward"):
        archive = os.path.join(ROOT, "pretrained", f"lm_{direction}.tar.gz")
        for name, path in (("dev", args.lm_dev), ("wikitext2_valid", args.wikitext)):
            output = os.path.join(ROOT, "runs", f"pretrained_lm_{direction}_{name}.json")
            command = [
                os.path.join(os.path.dirname(sys.executable), "allennlp"),
                "evaluate",
                archive,
                path,
                "--output-file",
                output,
                "--include-package",
                "ldnet_allennlp",
            ]
            print(" ".join(command), file=sys.stderr)
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            with open(output) as metrics_file:
                ppl = round(json.load(metrics_file)["perplexity"], 2)
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


def summary(results: Dict) -> List[Dict]:
    """The throughput and perplexity tables of BENCHMARKS.md, from the keys of lm.json."""
    tables = []
    if "tokens_per_sec_dense" in results:
        rows = []
        for part, suffix in (("whole LM (training step)", ""), ("encoder only", "_encoder_only")):
            dense = results.get(f"tokens_per_sec_dense{suffix}")
            lstm = results.get(f"tokens_per_sec_allennlp_lstm{suffix}")
            if dense and lstm:
                rows.append([part, dense, lstm, round(dense / lstm, 2)])
        tables.append(
            {
                "caption": "Training throughput, tokens/s (goal from issue 3: dense / AllenNLP "
                ">= 1.0). Dense: 6 x 128 dense LSTM + adaptive softmax; AllenNLP: "
                "allennlp-models' language_model, stacked LSTM of the same parameter count, its "
                "sampled softmax. Setup under `throughput_setup`.",
                "columns": ["timed", "dense LM", "AllenNLP LM", "ratio"],
                "rows": rows,
            }
        )
    rows = []
    for direction in ("forward", "backward"):
        pretrain = results.get(f"pretrain_{direction}", {})
        if f"ppl_{direction}_wikitext2_valid" in results:
            rows.append(
                [
                    direction,
                    results[f"ppl_{direction}_wikitext2_valid"],
                    pretrain.get("best_dev_perplexity"),
                    pretrain.get("tokens_seen_approx"),
                    pretrain.get("wall_clock_minutes"),
                ]
            )
    if rows:
        tables.append(
            {
                "caption": "Pre-trained LMs: perplexity (see `ppl_note`) and pre-training budget.",
                "columns": [
                    "LM",
                    "WikiText-2 valid ppl",
                    "LM-corpus dev ppl",
                    "tokens seen",
                    "wall-clock min",
                ],
                "rows": rows,
            }
        )
    return tables


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--part",
        choices=["throughput", "ppl", "pretrained", "all", "report"],
        default="all",
        help="report: only recompute the summary tables from lm.json",
    )
    parser.add_argument("--data", default=os.path.join(ROOT, "runs/lm_data/train.txt"))
    parser.add_argument("--vocabulary", default=os.path.join(ROOT, "runs/lm_forward/vocabulary"))
    parser.add_argument(
        "--wikitext", default=os.path.join(ROOT, "runs/lm_data/wikitext2_valid.txt")
    )
    parser.add_argument("--lm-dev", default=os.path.join(ROOT, "runs/lm_data/dev.txt"))
    parser.add_argument("--sentences", type=int, default=6400)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the config's")
    parser.add_argument("--cutoffs", default=None, help="e.g. 10,20 for a tiny smoke test")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()

    results = load_results("lm")
    if args.part in ("throughput", "all"):
        results.update(throughput(args))
        results["throughput_command"] = "python " + " ".join(sys.argv)
    if args.part in ("ppl", "all"):
        results.update(perplexity(args))
        results["ppl_command"] = "python " + " ".join(sys.argv)
    if args.part == "pretrained":
        if "previous_cpu_lms" not in results:  # the session-1 LMs' figures, kept for reference
            results["previous_cpu_lms"] = {
                key: results[key]
                for key in list(results)
                if key.startswith(("pretrain_", "ppl_")) and key != "ppl_note"
            }
        results.update(pretrained_lms(args))
        results["pretrained_command"] = "python " + " ".join(sys.argv)
    corpus_tokens = results.get("lm_corpus", {}).get("train_tokens")
    if corpus_tokens and results.get("tokens_per_sec_dense"):
        # what one pass over the LM corpus costs one direction at the measured training rate
        hours = corpus_tokens / results["tokens_per_sec_dense"] / 3600
        results["full_corpus_pass_hours_per_direction"] = round(hours, 2)
    results["title"] = "Dense language models: throughput and perplexity (issue 3)"
    results["command"] = (
        "the shipped LMs (pretrained/lm_*.tar.gz): scripts/pretrain_lms_accelerated.py "
        "pack/train/archive (commands per stage under pretrain_accelerated_*), then "
        "python benchmarks/lm_benchmark.py --part pretrained; the CPU path: "
        "bash benchmarks/pretrain_lms.sh, python benchmarks/lm_benchmark.py --part ppl|throughput"
    )
    results["summary"] = summary(results)
    save_results("lm", results)
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
