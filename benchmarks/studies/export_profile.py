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
from typing import Any, Callable, Dict, List, Sequence

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


class StageClock:
    """Seconds per step name, added up by the wrappers `wrap` makes."""

    def __init__(self) -> None:
        self.seconds: Dict[str, float] = defaultdict(float)

    def wrap(self, name: str, function: Callable) -> Callable:
        seconds = self.seconds

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                seconds[name] += time.perf_counter() - start

        return timed


class _Clocked:
    """`target` (an onnxruntime session, an indexer) with its calls and its `methods` that it
    has clocked as `name`; its other attributes are its own."""

    def __init__(self, target: Any, clock: StageClock, name: str, methods: Sequence[str]):
        self._target = target
        self._call = clock.wrap(name, target)
        for method in methods:
            if hasattr(target, method):
                setattr(self, method, clock.wrap(name, getattr(target, method)))

    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


def instrument(tagger, clock: StageClock) -> None:
    """Wraps `tagger`'s steps (in place, each time from the untimed ones) so that `clock` adds
    up their seconds: the session's `run` is `graph`, each indexer's calls (and `gather` from
    the rows `TokenRows` finds) `indexing_<name>`, the word rows' lookup (`TokenRows`)
    `indexing_rows`."""
    module = sys.modules[type(tagger).__module__]
    untimed = tagger.__dict__.setdefault(
        "_untimed_steps",
        {
            "tokens": tagger.tokens,
            "_result": tagger._result,
            "_indexers": tagger._indexers,
            "session": tagger.session,
            "_token_rows": getattr(tagger, "_token_rows", None),
            "viterbi_tags": module.viterbi_tags,
        },
    )
    tagger.tokens = clock.wrap("input_checks", untimed["tokens"])
    tagger._result = clock.wrap("spans_and_output", untimed["_result"])
    tagger._indexers = [
        (name, _Clocked(indexer, clock, f"indexing_{name}", ["gather"]))
        for name, indexer in untimed["_indexers"]
    ]
    tagger.session = _Clocked(untimed["session"], clock, "graph", ["run"])
    if untimed["_token_rows"] is not None:
        tagger._token_rows = clock.wrap("indexing_rows", untimed["_token_rows"])
    module.viterbi_tags = clock.wrap("viterbi", untimed["viterbi_tags"])


def uninstrument(tagger) -> None:
    """Puts back the untimed steps of `tagger` and of its module."""
    untimed = tagger.__dict__.pop("_untimed_steps", None)
    if untimed is not None:
        sys.modules[type(tagger).__module__].viterbi_tags = untimed.pop("viterbi_tags")
        for name, step in untimed.items():
            setattr(tagger, name, step)


def stage_case(tagger, inputs: Inputs, batch_size: int) -> Callable[[], Dict[str, float]]:
    """A self-timed case: one pass over `inputs`, µs per word by step (and `total`)."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)

    def case() -> Dict[str, float]:
        clock = StageClock()
        instrument(tagger, clock)
        start = time.perf_counter()
        for first in range(0, len(inputs), batch_size):
            outputs = tagger.predict_batch_json(inputs[first : first + batch_size])
            json_start = time.perf_counter()
            for output in outputs:
                json.dumps(output)
            clock.seconds["json"] += time.perf_counter() - json_start
        total = time.perf_counter() - start
        steps = dict(clock.seconds)
        steps["other"] = total - sum(steps.values())
        steps["total"] = total
        return {name: seconds * 1e6 / words for name, seconds in steps.items()}

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
    by_component: Dict[str, float] = defaultdict(float)
    by_op: Dict[str, float] = defaultdict(float)
    by_node: Dict[str, float] = defaultdict(float)
    runs = node_runs = 0
    for event in events:
        if event.get("cat") == "Session" and event["name"] == "model_run":
            runs += event["ts"] >= after_us
        if event.get("cat") != "Node" or not event["name"].endswith("_kernel_time"):
            continue
        if event["ts"] < after_us:
            continue
        op_type = event["args"]["op_name"]
        node = event["name"][: -len("_kernel_time")]
        micro = float(event["dur"])
        by_component[component(node, op_type)] += micro
        by_op[op_type] += micro
        by_node[node] += micro
        node_runs += 1
    top = sorted(by_node.items(), key=lambda item: -item[1])[:8]
    return {
        "us_per_word_by_component": _per_word(by_component, words),
        "us_per_word_by_op_type": _per_word(by_op, words),
        "top_nodes_us_per_word": [[name, round(us / words, 4)] for name, us in top],
        "us_per_word_nodes": round(sum(by_node.values()) / words, 4),
        "graph_runs": runs,
        "node_runs_per_graph_run": round(node_runs / max(runs, 1), 1),
    }


def _per_word(seconds: Dict[str, float], words: int) -> Dict[str, float]:
    ordered = sorted(seconds.items(), key=lambda item: -item[1])
    return {name: round(us / words, 4) for name, us in ordered}


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
    cases = {f"b{size}": stage_case(tagger, subsets[size], size) for size in SIZES}
    with using_threads(1):
        steps = interleaved(cases, args.rounds, warmup=1, self_timed=True)
        uninstrument(tagger)
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

    def update(results: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "runtime_profile": dict(results.get("runtime_profile", {}), **{args.profile_key: found})
        }

    write_results(Path(args.output), update)
    print({case: by_step[case]["total"] for case in cases})


def git_commit() -> str:
    """HEAD's short hash, with "+ changes" when ldnet_runtime/ differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True)
    clean = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", "ldnet_runtime"], cwd=ROOT)
    return head.stdout.decode().strip() + ("" if clean.returncode == 0 else " + changes")
