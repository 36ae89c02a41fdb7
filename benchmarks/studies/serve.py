"""
Load test of `allennlp ldnet-serve` on loopback: sentences per second and latency of
single-sentence `POST /predict` requests at 1 and 8 concurrent clients.

The server is the real command (`allennlp ldnet-serve ARCHIVE --threads N ...`), started in a
subprocess on a free port; the clients are threads of this process, each with its own keep-alive
connection, sending one sentence per request (`{"sentence": raw text}`, which the server
tokenises as for a user; `--input tokens` sends the tokens), each starting at its own offset
into the sentences. After a warm-up at the highest client count (not recorded), each client
count runs for `--duration` seconds (a request under way finishes and counts). The CPU time of
the server and of the clients per request is recorded too (`serve_load.py`).

    python -m benchmarks serve [--archive ner_pruned] [--output /tmp/serve.json]

Sentences: CoNLL-03 eng.testb, else the fixtures' CoNLL-03 sample, words joined by spaces.
Writes benchmarks/results/serve.json (or `--output`): `sentences_per_sec_c<N>`, `p50_ms_c<N>`,
`p99_ms_c<N>`, each phase's figures, the settings, the commands and the hardware.
"""

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import CONLL03, ROOT, hardware, read_sentences
from benchmarks.harness.results import RESULTS_DIR, command_line, utc_date, write_json_atomically
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline, lookup
from benchmarks.studies.serve_load import free_port, run_phase, start_server

GOAL = {"sentences_per_sec_c8": 300.0, "p99_ms_c8": 100.0}
FALLBACK_SENTENCES = ROOT / "fixtures" / "tagging" / "conll2003_dev.txt"
# the summary table's columns and each one's key in a phase
TABLE_COLUMNS = ["clients", "sentences/s", "p50 ms", "p90 ms", "p99 ms", "requests", "errors"]
TABLE_COLUMNS += ["server CPU ms/request", "server cores used"]
TABLE_KEYS = ["clients", "sentences_per_sec", "p50_ms", "p90_ms", "p99_ms", "requests", "errors"]
TABLE_KEYS += ["server_cpu_ms_per_request", "server_cores_used"]
TABLE = (
    ("clients", "clients"),
    ("sentences/s", "sentences_per_sec"),
    ("p50 ms", "p50_ms"),
    ("p90 ms", "p90_ms"),
    ("p99 ms", "p99_ms"),
    ("requests", "requests"),
    ("errors", "errors"),
    ("server CPU ms/request", "server_cpu_ms_per_request"),
    ("server cores used", "server_cores_used"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", default="ner", help="what ldnet-serve serves (default: ner)")
    parser.add_argument("--sentences", default=None, help="a CoNLL file (default: eng.testb)")
    parser.add_argument("--clients", default="1,8", help="client counts (default: 1,8)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per client count")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of warm-up")
    parser.add_argument("--server-threads", type=int, default=1, help="torch threads (server)")
    parser.add_argument("--max-batch", type=int, default=32, help="ldnet-serve --max-batch")
    parser.add_argument("--input", choices=["sentence", "tokens"], default="sentence")
    parser.add_argument("--output", default=str(RESULTS_DIR / "serve.json"))
    parser.add_argument("--log", default=str(ROOT / "runs" / "serve_benchmark" / "server.log"))


def sentences_file(args: argparse.Namespace) -> Path:
    """`--sentences`, else eng.testb, else the fixtures' CoNLL-03 sample."""
    if args.sentences:
        return Path(args.sentences)
    default = Path(CONLL03["CONLL03_TEST_DATA_PATH"])
    return default if default.exists() else FALLBACK_SENTENCES


def request_bodies(sentences: List[List[str]], kind: str) -> List[Dict[str, Any]]:
    """One request body per sentence: its words joined by spaces, or its tokens."""
    if kind == "sentence":
        return [{"sentence": " ".join(words)} for words in sentences]
    return [{"tokens": words} for words in sentences]


def server_command(args: argparse.Namespace, port: int) -> List[str]:
    options = ["--port", port, "--threads", args.server_threads, "--max-batch", args.max_batch]
    return [ALLENNLP, "ldnet-serve", args.archive, *map(str, options), "--no-access-log"]


def load_test(args: argparse.Namespace, bodies: List[Dict[str, Any]], command: List[str], url):
    """Starts the server, warms it up, runs each client count; returns /model's facts, the
    warm-up phase and the phases by `c<clients>`."""
    import httpx

    client_counts = [int(c) for c in args.clients.split(",")]
    process = start_server(command, args.server_threads, Path(args.log), url)
    try:
        facts = httpx.get(f"{url}/model").json()
        warmup = run_phase(url, bodies, max(client_counts), args.warmup, process.pid)
        phases = {
            f"c{n}": run_phase(url, bodies, n, args.duration, process.pid) for n in client_counts
        }
    finally:
        process.terminate()
        process.wait(timeout=60)
    return facts, warmup, phases


def settings(args, facts, sentences, sentences_path: Path, warmup) -> Dict[str, Any]:
    """The results' `settings`: what was served, the input, durations, threads."""
    archive = os.path.relpath(args.archive, ROOT) if os.path.exists(args.archive) else args.archive
    return {
        "archive": archive,
        "model": facts["name"],
        "model_flops_per_token": facts["flops_per_token"],
        "model_lm_layers_kept": facts["lm_layers_kept"],
        "input": args.input,
        "sentences_file": os.path.relpath(sentences_path, ROOT),
        "sentences": len(sentences),
        "mean_words_per_sentence": round(statistics.fmean(len(s) for s in sentences), 2),
        "duration_s": args.duration,
        "warmup_s": args.warmup,
        "warmup_requests": warmup["requests"],
        "server_torch_threads": args.server_threads,
        "max_batch": args.max_batch,
        "access_log": False,
        "nice": os.nice(0),  # the server's and the clients' niceness
        "clients_run_in": "threads of the benchmark process, one keep-alive http.client "
        "connection each",
    }


def headline_keys(results: Dict[str, Any], phases: Dict[str, Dict[str, Any]]) -> None:
    """Each phase's sentences/s, p50 and p99 at the top level; at 8 clients the goal and a note
    on the CPU the server used."""
    for name, phase in phases.items():
        for key in ("sentences_per_sec", "p50_ms", "p99_ms"):
            results[f"{key}_{name}"] = phase[key]
    if "c8" not in phases:
        return
    c8, rate = phases["c8"], GOAL["sentences_per_sec_c8"]
    met = c8["sentences_per_sec"] >= rate and c8["p99_ms"] < GOAL["p99_ms_c8"]
    results["goal"] = {**GOAL, "met": met}
    results["notes"] = (
        f"At 8 clients the server used {c8['server_cpu_ms_per_request']} ms of CPU per "
        f"sentence and {c8['server_cores_used']} of the machine's {os.cpu_count()} cores "
        f"(the clients {c8['clients_cpu_ms_per_request']} ms per request); at that cost, "
        f"{rate:.0f} sentences/s needs {rate * c8['server_cpu_ms_per_request'] / 1000:.1f} "
        f"cores. Run at nice {os.nice(0)}, load average "
        f"{results['hardware']['load_average_at_start'][0]} at the start."
    )


def table(args: argparse.Namespace, facts, phases: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """The results file's `summary` table: one row per client count."""
    served = facts["name"] or facts["archive"]
    return {
        "columns": TABLE_COLUMNS,
        "rows": [[phase[key] for key in TABLE_KEYS] for phase in phases.values()],
        "caption": (
            f"One sentence per request ({args.input} input), {args.duration:.0f} s per client "
            f"count after {args.warmup:.0f} s of warm-up; server: {served}, torch threads "
            f"{args.server_threads}, max batch {args.max_batch}. Goal: >= 300 sentences/s at 8 "
            "clients with p99 < 100 ms."
        ),
    }


def run(args: argparse.Namespace) -> Dict[str, Any]:
    """The load test; writes `--output`."""
    command, sentences_path = command_line(), sentences_file(args)
    sentences = read_sentences(sentences_path)
    port = free_port()
    server = server_command(args, port)
    machine = hardware(torch_threads=args.server_threads)  # the server's, set by --threads
    started = utc_date()
    bodies = request_bodies(sentences, args.input)
    facts, warmup, phases = load_test(args, bodies, server, f"http://127.0.0.1:{port}")
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results: Dict[str, Any] = {
        "title": "Serving: allennlp ldnet-serve under load",
        "command": command,
        "commands": {"benchmark": command, "server": " ".join(["allennlp", *server[1:]])},
        "hardware": machine,
        "settings": settings(args, facts, sentences, sentences_path, warmup),
        "phases": phases,
        "started_at": started,
    }
    headline_keys(results, phases)
    results["summary"] = table(args, facts, phases)
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomically(output, results)
    print(
        json.dumps({k: v for k, v in results.items() if k.startswith(("sentences_", "p50", "p99"))})
    )
    print(f"wrote {output}")
    return results


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Sentences/s and latency at 1 and 8 clients, with the goals at 8 clients."""
    goal = lookup(results, "goal")
    p99 = goal["p99_ms_c8"]
    return [
        headline(results, "sentences/s, 1 client", "sentences_per_sec_c1"),
        headline(results, "p99 latency (ms), 1 client", "p99_ms_c1"),
        headline(
            results,
            "sentences/s, 8 clients",
            "sentences_per_sec_c8",
            *at_least(goal["sentences_per_sec_c8"]),
        ),
        headline(results, "p50 latency (ms), 8 clients", "p50_ms_c8"),
        headline(
            results, "p99 latency (ms), 8 clients", "p99_ms_c8", f"< {p99:g}", lambda v: v < p99
        ),
    ]


STUDY = Study(
    name="serve",
    description="Load test of allennlp ldnet-serve: sentences/s and latency at 1 and 8 clients.",
    results_file="serve.json",
    stages=[Stage("load", run, "start the server, warm up, run each client count")],
    add_arguments=add_arguments,
    summary=summary,
)
