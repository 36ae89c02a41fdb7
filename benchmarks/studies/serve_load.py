"""
The load generator of the `serve` study: `allennlp ldnet-serve` started in a subprocess on a
free port, and clients (threads of this process, one keep-alive `http.client` connection each)
that post single sentences to it for a fixed time, with the CPU time both sides use. Each client
reads the clock around each of its requests: a latency distribution under concurrent load, which
the harness's rounds of whole calls (`interleaved`) do not measure.
"""

import http.client
import json
import os
import resource
import socket
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import ROOT
from benchmarks.harness.timing import thread_env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(command: List[str], threads: int, log: Path, url: str) -> subprocess.Popen:
    """`command` (an `ldnet-serve`) started with OMP/MKL threads `threads`, its output in `log`;
    returned once `url/health` answers (at most 300 s)."""
    import httpx

    env = thread_env(threads)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
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


class Clients:
    """
    `clients` threads that post `payloads` (JSON bytes) in turn to `url/predict` until `stop`
    (a `time.perf_counter()` time); client `k` starts at its own offset into `payloads`.
    """

    def __init__(self, url: str, payloads: List[bytes], clients: int, stop: float) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.payloads, self.clients, self.stop = payloads, clients, stop
        self.latencies: List[List[float]] = [[] for _ in range(clients)]
        self.errors = [0] * clients
        self.failures: List[str] = []

    def client(self, k: int) -> None:
        # the standard library's client: a fraction of httpx's CPU per request, which the
        # server, on the same cores, would otherwise lose
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        try:
            i = k * len(self.payloads) // self.clients
            while time.perf_counter() < self.stop:
                sent = time.perf_counter()
                body = self.payloads[i % len(self.payloads)]
                connection.request("POST", "/predict", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                took = time.perf_counter() - sent
                if response.status == 200:
                    self.latencies[k].append(took)
                else:
                    self.errors[k] += 1
                i += 1
        except Exception as error:  # noqa: BLE001 (reported in the results)
            self.failures.append(repr(error))
        finally:
            connection.close()

    def run(self) -> None:
        threads = [threading.Thread(target=self.client, args=(k,)) for k in range(self.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def run_phase(
    url: str, bodies: List[Dict], clients: int, duration: float, server_pid: int
) -> Dict[str, Any]:
    """
    `clients` threads post `bodies` in turn to `url` ("http://127.0.0.1:<port>") for `duration`
    seconds (a request under way finishes and counts): requests, errors, sentences/s, latency
    percentiles (ms), and the CPU time the server (`server_pid`) and the clients (this process)
    used per request.
    """
    server_cpu, client_cpu = process_cpu_seconds(server_pid), own_cpu_seconds()
    start = time.perf_counter()
    payloads = [json.dumps(body).encode() for body in bodies]
    load = Clients(url, payloads, clients, start + duration)
    load.run()
    elapsed = time.perf_counter() - start
    server_cpu = process_cpu_seconds(server_pid) - server_cpu
    client_cpu = own_cpu_seconds() - client_cpu
    every = sorted(x for client_latencies in load.latencies for x in client_latencies)
    if not every:
        raise SystemExit(f"no request succeeded with {clients} clients: {load.failures[:3]}")

    def percentile(q: float) -> float:
        return every[min(len(every) - 1, int(q * len(every)))] * 1000

    return {
        "clients": clients,
        "seconds": round(elapsed, 2),
        "requests": len(every),
        "errors": sum(load.errors),
        "client_failures": load.failures,
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
