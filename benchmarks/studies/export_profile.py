"""
Where `ldnet_runtime`'s time goes, per word: the `profile` stage of the `export` study, on the
default export (`allennlp ldnet-export` into `--export-dir`: int8, word tables).

Outside the graph, `predict_batch_json` on `{"tokens": [...]}` inputs of eng.testb (batch 1 on
every 7th sentence, batch 32 on all), with its steps timed in place: each step of the tagger
(`Tagger.tokens`: the input checks; each indexer of `Tagger._indexers`; `session.run`: the
graph; `viterbi_tags`; `Tagger._result`: the spans and the output dict) is wrapped by a clock,
and `json` is `json.dumps` of each output (what `python -m ldnet_runtime` writes). `other` is the
rest of the call (batching, bucketing, the tag names). Medians of `--rounds` interleaved rounds,
µs per word.

Inside the graph, onnxruntime's own profile (`SessionOptions.enable_profiling`) of the same
batches: each node's time, summed by component (the LMs' LSTMs, the LMs' other ops, the
character CNN, the word BiLSTM, the rest) and by operator type, µs per word, and the nodes that
take the most.

Written under `runtime_profile.<key>` of export.json (`--profile-key`, default `after`);
`--runtime-commit C` profiles `ldnet_runtime` as it was at git commit C instead
(`export_speed.runtime_package_at`, for `--profile-key before`).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Dict, List

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import ROOT, hardware, read_sentences
from benchmarks.harness.results import command_line, utc_date, write_results
from benchmarks.harness.timing import interleaved, using_threads
from benchmarks.studies.export_speed import runtime_package_at, with_session
from benchmarks.studies.export_timing import SIZES, TEST_FILE, batch_subsets, run_export

Inputs = List[Dict[str, Any]]

# graph components by node name (the exporter's module paths), first match wins
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


class _Clocked:
    """`target` (an onnxruntime session, an indexer) with its calls and those of its `methods`
    that it has clocked as `name`; its other attributes are its own."""

    def __init__(self, target: Any, seconds: Dict[str, float], name: str, methods: List[str]):
        self._target = target
        self._call = clocked(seconds, name, target)
        for method in methods:
            if hasattr(target, method):
                setattr(self, method, clocked(seconds, name, getattr(target, method)))

    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def instrument(tagger, seconds: Dict[str, float]) -> Callable[[], None]:
    """Wraps `tagger`'s steps in place so that their seconds add up in `seconds`: the input
    checks, each indexer's calls (and `gather` from the rows that `TokenRows` finds) as
    `indexing_<name>`, the word rows' lookup (`TokenRows`) as `indexing_rows`, the session's
    `run` as `graph`, `viterbi_tags` (in the tagger's module), the spans and the output dict.
    Returns what puts the untimed steps back."""
    module = sys.modules[type(tagger).__module__]
    steps = ("tokens", "_result", "_indexers", "session", "_token_rows")
    untimed = {name: getattr(tagger, name) for name in steps if hasattr(tagger, name)}
    viterbi_tags = module.viterbi_tags
    tagger.tokens = clocked(seconds, "input_checks", tagger.tokens)
    tagger._result = clocked(seconds, "spans_and_output", tagger._result)
    tagger._indexers = [
        (name, _Clocked(indexer, seconds, f"indexing_{name}", ["gather"]))
        for name, indexer in tagger._indexers
    ]
    tagger.session = _Clocked(tagger.session, seconds, "graph", ["run"])
    if "_token_rows" in untimed:
        tagger._token_rows = clocked(seconds, "indexing_rows", tagger._token_rows)
    module.viterbi_tags = clocked(seconds, "viterbi", viterbi_tags)

    def restore() -> None:
        module.viterbi_tags = viterbi_tags
        tagger.__dict__.update(untimed)

    return restore


def stage_case(tagger, inputs: Inputs, size: int, seconds: Dict[str, float]) -> Callable:
    """A self-timed case: one pass of `tagger` (instrumented into `seconds`) over `inputs` in
    batches of `size`, µs per word by step (and `total`)."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)

    def case() -> Dict[str, float]:
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
    those of `tagger`'s runtime (the `ldnet_runtime` package profiled), with profiling added.
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
    import ldnet_runtime

    command = command_line()
    runtime = runtime_package_at(args.runtime_commit) if args.runtime_commit else ldnet_runtime
    export = run_export(
        [ALLENNLP, "ldnet-export", args.archive, "-o", args.export_dir], args.export_dir
    )
    subsets = batch_subsets([{"tokens": words} for words in read_sentences(TEST_FILE)])
    tagger = runtime.Tagger(ROOT / args.export_dir, threads=1)
    machine = hardware()
    seconds: Dict[str, float] = defaultdict(float)
    cases = {f"b{size}": stage_case(tagger, subsets[size], size, seconds) for size in SIZES}
    restore = instrument(tagger, seconds)
    with using_threads(1):
        steps = interleaved(cases, args.rounds, warmup=1, self_timed=True)
        restore()
        graph = {
            f"b{size}": graph_profile(
                runtime.Tagger(tagger.export_dir, threads=1), subsets[size], size
            )
            for size in SIZES
        }
    by_step = {}  # {case: {step: median µs per word}}
    for case in cases:
        names = sorted({step for sample in steps.samples[case] for step in sample})
        by_step[case] = {step: round(steps.median(case, step), 4) for step in names}
    found = {
        "command": command,
        "date": utc_date(),
        "hardware": dict(machine, load_average_at_end=[round(x, 2) for x in os.getloadavg()]),
        "runtime": str(Path(runtime.__file__).parent.relative_to(ROOT)),
        "runtime_commit": args.runtime_commit or git_commit(),
        "export": " ".join(export),
        "threads": 1,
        "rounds": args.rounds,
        "us_per_word_by_step": by_step,
        "graph_node_profile": graph,
    }
    # since: only runtime_profile.<key> changes, the file's other profiles stay
    since = {"runtime_profile": {}}
    write_results(Path(args.output), {"runtime_profile": {args.profile_key: found}}, since=since)
    print({case: by_step[case]["total"] for case in cases})


def git_commit() -> str:
    """HEAD's short hash, with "+ changes" when ldnet_runtime/ differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "ldnet_runtime"], cwd=ROOT)
    return head.stdout.decode().strip() + ("" if clean.returncode == 0 else " + changes")
