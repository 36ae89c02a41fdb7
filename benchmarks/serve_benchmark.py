"""
Load test of `allennlp ldnet-serve` on loopback (issue 16): sentences per second and latency for
single-sentence `POST /predict` requests at 1 and 8 concurrent clients.

The server is the real command (`allennlp ldnet-serve ARCHIVE --threads N ...`, torch's threads
set explicitly), started in a subprocess on a free port. The clients are threads of this process,
each with its own keep-alive connection (the standard library's `http.client`), sending one
sentence per request (`{"sentence": raw text}` by default: the server tokenises it, as for a
user; `--input tokens` sends the tokens). It is bounded: after a warm-up at the highest client
count (not recorded), each client count runs for `--duration` seconds, then the clients stop (a
request under way finishes and counts). Each client sends the sentences in turn, starting at its
own offset. The CPU time the server and the clients use per request is recorded too.

    .venv/bin/python benchmarks/serve_benchmark.py      # the shipped NER tagger -> serve.json
    .venv/bin/python benchmarks/serve_benchmark.py --archive A.tar.gz --output /tmp/serve.json

Sentences: CoNLL-03 eng.testb from the shared data (`LDNET_SHARED_DATA`), else the fixtures'
CoNLL-03 sample, words joined by spaces. Writes benchmarks/results/serve.json (or `--output`):
`sentences_per_sec_c1`, `sentences_per_sec_c8`, `p50_ms_c8`, `p99_ms_c8`, each phase's figures,
the settings, the commands (this one and the server's) and the machine.
"""

import argparse
import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import (  # noqa: E402
    ALLENNLP,
    CONLL03,
    RESULTS_DIR,
    ROOT,
    hardware,
    read_sentences,
)

GOAL = {"sentences_per_sec_c8": 300.0, "p99_ms_c8": 100.0}
FALLBACK_SENTENCES = ROOT / "fixtures" / "tagging" / "conll2003_dev.txt"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(command: List[str], threads: int, log: Path, url: str) -> subprocess.Popen:
    env = dict(
        os.environ,
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=handle)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"ldnet-serve exited with {process.returncode}; see {log}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    process.kill()
    raise SystemExit(f"ldnet-serve did not answer within 300 s; see {log}")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_phase(
    url: str, bodies: List[Dict], clients: int, duration: float, server_pid: int
) -> Dict[str, Any]:
    """
    `clients` threads post `bodies` in turn for `duration` seconds; figures over all of them,
    with the CPU time the server and the clients (this process) used per request.
    """
    latencies: List[List[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    failures: List[str] = []
    server_cpu, client_cpu = process_cpu_seconds(server_pid), own_cpu_seconds()
    start = time.perf_counter()
    stop = start + duration

    payloads = [json.dumps(body).encode() for body in bodies]
    headers = {"Content-Type": "application/json"}
    host, port = url.removeprefix("http://").split(":")

    def client(k: int) -> None:
        # the standard library's client: a fraction of httpx's CPU per request, which the
        # server, on the same cores, would otherwise lose
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            i = k * len(payloads) // clients
            while time.perf_counter() < stop:
                sent = time.perf_counter()
                connection.request(
                    "POST", "/predict", body=payloads[i % len(payloads)], headers=headers
                )
                response = connection.getresponse()
                response.read()
                took = time.perf_counter() - sent
                if response.status == 200:
                    latencies[k].append(took)
                else:
                    errors[k] += 1
                i += 1
        except Exception as error:  # noqa: BLE001 (reported in the results)
            failures.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    server_cpu = process_cpu_seconds(server_pid) - server_cpu
    client_cpu = own_cpu_seconds() - client_cpu
    every = sorted(x for client_latencies in latencies for x in client_latencies)
    if not every:
        raise SystemExit(f"no request succeeded with {clients} clients: {failures[:3]}")

    def percentile(q: float) -> float:
        return every[min(len(every) - 1, int(q * len(every)))] * 1000

    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(every),
        "errors": sum(errors),
        "client_failures": failures,
        "sentences_per_sec": round(len(every) / elapsed, 1),
        "mean_ms": round(statistics.fmean(every) * 1000, 2),
        "p50_ms": round(percentile(0.50), 2),
        "p90_ms": round(percentile(0.90), 2),
        "p99_ms": round(percentile(0.99), 2),
        "max_ms": round(every[-1] * 1000, 2),
        "server_cpu_ms_per_request": round(server_cpu / len(every) * 1000, 2),
        "server_cores_used": round(server_cpu / elapsed, 2),
        "clients_cpu_ms_per_request": round(client_cpu / len(every) * 1000, 2),
    }


def main(argv: Optional[List[str]] = None) -> Dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
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
    args = parser.parse_args(argv)
    command = " ".join(
        ["python benchmarks/serve_benchmark.py", *(argv if argv is not None else sys.argv[1:])]
    )

    default_sentences = Path(CONLL03["CONLL03_TEST_DATA_PATH"])
    if args.sentences:
        sentences_path = Path(args.sentences)
    else:
        sentences_path = default_sentences if default_sentences.exists() else FALLBACK_SENTENCES
    sentences = read_sentences(sentences_path)
    if args.input == "sentence":
        bodies = [{"sentence": " ".join(words)} for words in sentences]
    else:
        bodies = [{"tokens": words} for words in sentences]
    client_counts = [int(c) for c in args.clients.split(",")]

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_command = [
        ALLENNLP,
        "ldnet-serve",
        args.archive,
        "--port",
        str(port),
        "--threads",
        str(args.server_threads),
        "--max-batch",
        str(args.max_batch),
        "--no-access-log",
    ]
    machine = hardware()
    machine["torch_threads"] = args.server_threads  # the server's, set by --threads
    started = time.time()
    process = start_server(server_command, args.server_threads, Path(args.log), url)
    try:
        facts = httpx.get(f"{url}/model").json()
        warmup = run_phase(url, bodies, max(client_counts), args.warmup, process.pid)
        phases = {
            f"c{n}": run_phase(url, bodies, n, args.duration, process.pid) for n in client_counts
        }
    finally:
        process.terminate()
        process.wait(timeout=60)
    machine["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]

    results: Dict[str, Any] = {
        "title": "Serving: allennlp ldnet-serve under load (issue 16)",
        "command": command,
        "commands": {
            "benchmark": command,
            "server": " ".join(["allennlp", *server_command[1:]]),
        },
        "hardware": machine,
        "settings": {
            "archive": os.path.relpath(facts["archive"], ROOT),
            "model": facts["name"],
            "model_flops_per_token": facts["flops_per_token"],
            "model_lm_layers_kept": facts["lm_layers_kept"],
            "input": args.input,
            "sentences_file": os.path.relpath(sentences_path, ROOT),
            "sentences": len(bodies),
            "mean_words_per_sentence": round(statistics.fmean(len(s) for s in sentences), 2),
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "warmup_requests": warmup["requests"],
            "server_torch_threads": args.server_threads,
            "max_batch": args.max_batch,
            "access_log": False,
            "nice": os.nice(0),  # the server and the clients (a niced run yields to other jobs)
            "clients_run_in": "threads of the benchmark process, one keep-alive http.client "
            "connection each",
        },
        "phases": phases,
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
    }
    for name, phase in phases.items():
        results[f"sentences_per_sec_{name}"] = phase["sentences_per_sec"]
        results[f"p50_ms_{name}"] = phase["p50_ms"]
        results[f"p99_ms_{name}"] = phase["p99_ms"]
    if "c8" in phases:
        results["goal"] = {
            **GOAL,
            "met": phases["c8"]["sentences_per_sec"] >= GOAL["sentences_per_sec_c8"]
            and phases["c8"]["p99_ms"] < GOAL["p99_ms_c8"],
        }
    if "c8" in phases:
        c8 = phases["c8"]
        results["notes"] = (
            f"At 8 clients the server used {c8['server_cpu_ms_per_request']} ms of CPU per "
            f"sentence and {c8['server_cores_used']} of the machine's {os.cpu_count()} cores "
            f"(the clients {c8['clients_cpu_ms_per_request']} ms per request); at that cost, "
            f"{GOAL['sentences_per_sec_c8']:.0f} sentences/s needs "
            f"{GOAL['sentences_per_sec_c8'] * c8['server_cpu_ms_per_request'] / 1000:.1f} cores. "
            f"Run at nice {os.nice(0)}, load average {machine['load_average_at_start'][0]} at the "
            "start (other jobs on the machine take their share)."
        )
    served = facts["name"] or facts["archive"]
    results["summary"] = {
        "columns": [
            "clients",
            "sentences/s",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "requests",
            "errors",
            "server CPU ms/request",
            "server cores used",
        ],
        "rows": [
            [
                p["clients"],
                p["sentences_per_sec"],
                p["p50_ms"],
                p["p90_ms"],
                p["p99_ms"],
                p["requests"],
                p["errors"],
                p["server_cpu_ms_per_request"],
                p["server_cores_used"],
            ]
            for p in phases.values()
        ],
        "caption": (
            f"One sentence per request ({args.input} input), {args.duration:.0f} s per client "
            f"count after {args.warmup:.0f} s of warm-up; server: {served}, torch threads "
            f"{args.server_threads}, max batch {args.max_batch}. Goal: >= 300 sentences/s at 8 "
            "clients with p99 < 100 ms."
        ),
    }
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(
        json.dumps({k: results[k] for k in results if k.startswith(("sentences_", "p50", "p99"))})
    )
    print(f"wrote {output}")
    return results


if __name__ == "__main__":
    main()
