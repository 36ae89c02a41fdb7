"""benchmarks/studies/serve.py: the results file a load test writes (the server and the clients
stubbed), and its headlines."""

import json
import sys

import pytest

from benchmarks.__main__ import build_parser
from benchmarks.harness.results import load_results
from benchmarks.studies import serve
from tests.conftest import FIXTURES_ROOT

COMMITTED = load_results("serve")


def phase(clients, rate, p99):
    return {
        **COMMITTED["phases"]["c8"],
        "clients": clients,
        "sentences_per_sec": rate,
        "p99_ms": p99,
    }


def test_a_load_test_writes_the_keys_of_the_committed_file(tmp_path, monkeypatch):
    facts = {"archive": str(serve.ROOT / "pretrained" / "x.tar.gz"), "name": "x"}
    facts.update(flops_per_token=1.0, lm_layers_kept={"forward": [4], "backward": [4], "of": 6})
    seen = {}

    def fake_load_test(args, bodies, command, url):
        seen.update(bodies=bodies, command=command, url=url)
        warmup = {"requests": 7}
        return facts, warmup, {"c1": phase(1, 250.0, 8.0), "c8": phase(8, 450.0, 30.0)}

    monkeypatch.setattr(serve, "load_test", fake_load_test)
    output = tmp_path / "serve.json"
    sentences = FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"
    argv = ["serve", "--archive", "x", "--sentences", str(sentences), "--output", str(output)]
    monkeypatch.setattr(sys, "argv", ["benchmarks", *argv])
    args = build_parser([serve.STUDY]).parse_args(argv)
    serve.run(args)
    results = json.loads(output.read_text())
    # derived text it does not write; run_record's date in place of started_at
    assert set(results) == set(COMMITTED) - {"summary", "notes", "started_at"} | {"date"}
    assert set(results["settings"]) == set(COMMITTED["settings"])
    assert results["settings"]["warmup_requests"] == 7
    assert all(set(body) == {"sentence"} for body in seen["bodies"])
    assert seen["command"][1:4] == ["ldnet-serve", "x", "--port"]
    assert results["command"].startswith("python -m benchmarks serve --archive x")
    assert results["goal"] == {"sentences_per_sec_c8": 300.0, "p99_ms_c8": 100.0, "met": True}
    assert results["sentences_per_sec_c8"] == 450.0 and results["p99_ms_c1"] == 8.0
    assert results["hardware"]["torch_threads"] == 1


@pytest.mark.parametrize("rate, p99, met", [(450.0, 30.0, True), (250.0, 30.0, False)])
def test_the_goal_needs_both_figures_at_8_clients(rate, p99, met):
    results = {}
    serve.headline_keys(results, {"c8": phase(8, rate, p99)})
    assert results["goal"]["met"] is met
    assert results["sentences_per_sec_c8"] == rate and results["p99_ms_c8"] == p99


def test_the_summary_reads_the_committed_results():
    headlines = {h.key: h for h in serve.summary(COMMITTED)}
    assert headlines["sentences_per_sec_c8"].value == COMMITTED["sentences_per_sec_c8"]
    assert headlines["sentences_per_sec_c8"].met is True
    assert headlines["p99_ms_c8"].goal == "< 100"


def test_a_phase_counts_answers_and_errors_from_a_stub_server():
    """The clients' loop against a stub that answers 200, or 500 to the sentence "bad"."""
    import os
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Stub(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as ldnet-serve

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(500 if body["sentence"] == "bad" else 200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        bodies = [{"sentence": "good"}, {"sentence": "bad"}]
        phase = serve.run_phase(url, bodies, 2, 0.3, os.getpid())
    finally:
        server.shutdown()
    assert phase["clients"] == 2 and phase["requests"] > 0 and phase["errors"] > 0
    assert abs(phase["requests"] - phase["errors"]) <= 2  # the clients alternate good and bad
    assert phase["p50_ms"] <= phase["p90_ms"] <= phase["p99_ms"] <= phase["max_ms"]
    rate = phase["requests"] / phase["seconds"]  # seconds rounded to 0.01
    assert phase["sentences_per_sec"] == pytest.approx(rate, rel=0.05)
    assert phase["client_failures"] == []
