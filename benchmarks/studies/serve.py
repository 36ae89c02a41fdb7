"""
Load test of `allennlp ldnet-serve` (the real command, in a subprocess on a free port) on
loopback: sentences/s and latency of single-sentence `POST /predict` requests at 1 and at 8
concurrent clients (`CLIENTS`). The clients are threads of this process, each with its own
keep-alive `http.client` connection, sending one sentence per request (`{"sentence": raw text}`,
tokenised by the server as for a user) from its own offset into `--sentences` (eng.testb, else
the fixtures' sample). After a warm-up at the highest count,
each count runs for `--duration` seconds (a request under way finishes and counts). Each client
reads the clock around its own requests (a latency distribution under load, which the harness's
rounds of whole calls do not measure); the CPU time of the server and the clients is recorded.
Writes benchmarks/results/serve.json (or `--output`); the server's output goes to `SERVER_LOG`.
"""

import argparse
import http.client
import itertools
import json
import os
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import CONLL03, ROOT, hardware, read_sentences
from benchmarks.harness.results import RESULTS_DIR, command_line, run_record, write_results
from benchmarks.harness.study import Headline, Stage, Study, at_least, headline, lookup
from benchmarks.harness.timing import thread_env

GOAL = {"sentences_per_sec_c8": 300.0, "p99_ms_c8": 100.0}
CLIENTS = (1, 8)  # the client counts
FALLBACK_SENTENCES = ROOT / "fixtures" / "tagging" / "conll2003_dev.txt"
SERVER_LOG = ROOT / "runs" / "serve_benchmark" / "server.log"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive", default="ner", help="what ldnet-serve serves (default: ner)")
    parser.add_argument("--sentences", default=None, help="a CoNLL file (default: eng.testb)")
    parser.add_argument("--duration", type=float, default=20.0, help="seconds per client count")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds of warm-up")
    parser.add_argument("--server-threads", type=int, default=1, help="torch threads (server)")
    parser.add_argument("--max-batch", type=int, default=32, help="ldnet-serve --max-batch")
    parser.add_argument("--output", default=str(RESULTS_DIR / "serve.json"))


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_phase(url: str, bodies: List[Dict], clients: int, duration: float, server_pid: int):
    """
    `clients` threads post `bodies` in turn to `url` ("http://127.0.0.1:<port>") for `duration`
    seconds: requests, errors, sentences/s, latency percentiles (ms), and the CPU time the server
    (`server_pid`) and the clients (this process) used per request.
    """
    host, port = url.removeprefix("http://").split(":")
    payloads = [json.dumps(body).encode() for body in bodies]
    # seconds of the answered requests and of the errors; list.append is thread-safe
    latencies: List[float] = []
    errors: List[float] = []
    failures: List[str] = []

    def client(k: int) -> None:
        # the standard library's client: a fraction of httpx's CPU per request, which the
        # server, on the same cores, would otherwise lose
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        headers = {"Content-Type": "application/json"}
        try:
            for i in itertools.count(k * len(payloads) // clients):
                sent = time.perf_counter()
                if sent >= stop:
                    break
                body = payloads[i % len(payloads)]
                connection.request("POST", "/predict", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                (latencies if response.status == 200 else errors).append(time.perf_counter() - sent)
        except Exception as error:  # noqa: BLE001 (reported in the results)
            failures.append(repr(error))
        finally:
            connection.close()

    server_cpu, client_cpu = process_cpu_seconds(server_pid), time.process_time()
    start = time.perf_counter()
    stop = start + duration
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    server_cpu = process_cpu_seconds(server_pid) - server_cpu
    client_cpu = time.process_time() - client_cpu  # this process's user + system CPU
    every = sorted(latencies)
    if not every:
        raise SystemExit(f"no request succeeded with {clients} clients: {failures[:3]}")
    ms = {"mean_ms": statistics.fmean(every), "max_ms": every[-1]}
    for key, q in (("p50_ms", 0.50), ("p90_ms", 0.90), ("p99_ms", 0.99)):
        ms[key] = every[min(len(every) - 1, int(q * len(every)))]
    ms["server_cpu_ms_per_request"] = server_cpu / len(every)
    ms["clients_cpu_ms_per_request"] = client_cpu / len(every)
    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(every),
        "errors": len(errors),
        "client_failures": failures,
        "sentences_per_sec": round(len(every) / elapsed, 1),
        "server_cores_used": round(server_cpu / elapsed, 2),
        **{key: round(seconds * 1000, 2) for key, seconds in ms.items()},
    }


def load_test(args: argparse.Namespace, bodies: List[Dict[str, Any]], command: List[str], url):
    """
    Starts the server (`command`, an `ldnet-serve`, with OMP/MKL threads `--server-threads`, its
    output in `SERVER_LOG`), waits until `url/health` answers (at most 300 s), warms it up and runs
    each client count; returns /model's facts, the warm-up phase and the phases by `c<clients>`.
    """
    import httpx

    env = dict(thread_env(args.server_threads), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    SERVER_LOG.parent.mkdir(parents=True, exist_ok=True)
    with open(SERVER_LOG, "w") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=handle)
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                raise SystemExit(f"ldnet-serve exited with {process.returncode}; see {SERVER_LOG}")
            if time.monotonic() > deadline:
                raise SystemExit(f"ldnet-serve did not answer within 300 s; see {SERVER_LOG}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        facts = httpx.get(f"{url}/model").json()
        warmup = run_phase(url, bodies, max(CLIENTS), args.warmup, process.pid)
        phases = {f"c{n}": run_phase(url, bodies, n, args.duration, process.pid) for n in CLIENTS}
    finally:
        process.terminate()
        process.wait(timeout=60)
    return facts, warmup, phases


def headline_keys(results: Dict[str, Any], phases: Dict[str, Dict[str, Any]]) -> None:
    """Each phase's sentences/s, p50 and p99 at the top level; the goal at 8 clients."""
    for name, phase in phases.items():
        for key in ("sentences_per_sec", "p50_ms", "p99_ms"):
            results[f"{key}_{name}"] = phase[key]
    c8 = phases["c8"]
    rate_met = c8["sentences_per_sec"] >= GOAL["sentences_per_sec_c8"]
    results["goal"] = {**GOAL, "met": rate_met and c8["p99_ms"] < GOAL["p99_ms_c8"]}


def run(args: argparse.Namespace) -> Dict[str, Any]:
    """The load test; writes `--output`."""
    command, testb = command_line(), Path(CONLL03["CONLL03_TEST_DATA_PATH"])
    sentences_path = Path(args.sentences or (testb if testb.exists() else FALLBACK_SENTENCES))
    sentences = read_sentences(sentences_path)
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    options = ["--port", port, "--threads", args.server_threads, "--max-batch", args.max_batch]
    server = [ALLENNLP, "ldnet-serve", args.archive, *map(str, options), "--no-access-log"]
    machine = hardware(torch_threads=args.server_threads)  # the server's, set by --threads
    bodies = [{"sentence": " ".join(s)} for s in sentences]  # its words joined by spaces
    facts, warmup, phases = load_test(args, bodies, server, f"http://127.0.0.1:{port}")
    served_file = os.path.exists(args.archive)
    results: Dict[str, Any] = {
        "title": "Serving: allennlp ldnet-serve under load",
        **run_record(command, machine),
        "commands": {"benchmark": command, "server": " ".join(["allennlp", *server[1:]])},
        "settings": {  # what was served, the input, durations, threads
            "archive": os.path.relpath(args.archive, ROOT) if served_file else args.archive,
            "model": facts["name"],
            "model_flops_per_token": facts["flops_per_token"],
            "model_lm_layers_kept": facts["lm_layers_kept"],
            "input": "sentence",
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
        },
        "phases": phases,
    }
    headline_keys(results, phases)
    output = Path(args.output)
    write_results(output, results, replace=True)
    headlines = ("sentences_", "p50", "p99")
    print(json.dumps({k: v for k, v in results.items() if k.startswith(headlines)}))
    print(f"wrote {output}")
    return results


def summary(results: Dict[str, Any]) -> List[Headline]:
    """Sentences/s and latency at 1 and 8 clients, with the goals at 8 clients."""
    goal = lookup(results, "goal")
    rate, p99 = at_least(goal["sentences_per_sec_c8"]), goal["p99_ms_c8"]
    return [
        headline(results, "sentences/s, 1 client", "sentences_per_sec_c1"),
        headline(results, "p99 latency (ms), 1 client", "p99_ms_c1"),
        headline(results, "sentences/s, 8 clients", "sentences_per_sec_c8", *rate),
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
