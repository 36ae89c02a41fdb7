"""
Bulk tagging, `python -m ldnet_runtime` (`ldnet_runtime/bulk.py`), on the fixtures' pruned
export: two worker processes and Dask's distributed scheduler (a `LocalCluster` of two worker
processes) write byte for byte what one process writes, which is the predictor's `allennlp
predict` lines in input order; a run killed mid-way (its whole process group, SIGKILL) and run
again ends byte-identical; a bad line is named by file and line and stops the run, or with
`--skip-bad-lines` is skipped and counted (the stopped run resumes with the flag).
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

from tests.onnx_export.conftest import FIXTURE_ARCHIVES

WORDS = "John Smith visited Zanzibar EU rejects German call to boycott British lamb Bonn .".split()


def write_input(path: Path, lines: int, seed: int = 0, raw: bool = True) -> List[str]:
    """`lines` physical lines: tokens (and every 5th a raw sentence, if `raw`, every other one
    of those two paragraphs), every 37th blank; returns them."""
    generator = random.Random(seed)
    written = []
    for i in range(lines):
        tokens = [generator.choice(WORDS) for _ in range(generator.randint(1, 25))]
        if i % 37 == 36:
            written.append("")
        elif raw and i % 10 == 0:  # two paragraphs (tagged as two sequences)
            half = len(tokens) // 2
            text = " ".join(tokens[:half]) + "\n\n" + " ".join(tokens[half:])
            written.append(json.dumps({"sentence": text}))
        elif raw and i % 5 == 0:
            written.append(json.dumps({"sentence": " ".join(tokens)}))
        else:
            written.append(json.dumps({"tokens": tokens}))
    path.write_text("".join(line + "\n" for line in written), encoding="utf-8")
    return written


def tag(export_dir, input_file, output_file, *options: str, **popen) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "ldnet_runtime", str(export_dir), str(input_file)]
    command += ["--output-file", str(output_file), *options]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return subprocess.run(command, capture_output=True, text=True, env=env, **popen)


@pytest.fixture(scope="module")
def predictor() -> Predictor:
    return Predictor.from_archive(
        load_archive(str(FIXTURE_ARCHIVES / "ner_ldnet_pruned.tar.gz")), "ldnet_tagger"
    )


def test_workers_and_dask_write_what_one_process_writes(fixture_exports, predictor, tmp_path):
    from distributed import LocalCluster

    export_dir = fixture_exports["ner_ldnet_pruned"]
    lines = write_input(tmp_path / "in.jsonl", 400)
    outputs = {}
    for name, options in [("one", ["--workers", "1"]), ("two", ["--workers", "2"])]:
        process = tag(export_dir, tmp_path / "in.jsonl", tmp_path / f"{name}.jsonl", *options)
        assert process.returncode == 0 and process.stderr == "", process.stderr[-3000:]
        outputs[name] = (tmp_path / f"{name}.jsonl").read_bytes()
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        scheduler = ["--scheduler", cluster.scheduler_address, "--chunk-lines", "60"]
        process = tag(export_dir, tmp_path / "in.jsonl", tmp_path / "dask.jsonl", *scheduler)
        assert process.returncode == 0, process.stderr[-3000:]
    # chunks of 60 lines there (other batches of the tagger), the same lines
    outputs["dask"] = (tmp_path / "dask.jsonl").read_bytes()
    assert outputs["two"] == outputs["one"] and outputs["dask"] == outputs["one"]
    inputs = [json.loads(line) for line in lines if line]
    expected = [predictor.dump_line(output) for output in predictor.predict_batch_json(inputs)]
    assert outputs["one"].decode("utf-8").splitlines(keepends=True) == expected
    assert not (tmp_path / "one.jsonl.progress.json").exists()


def test_a_killed_run_resumes_byte_identical(fixture_exports, tmp_path):
    export_dir = fixture_exports["ner_ldnet_pruned"]
    write_input(tmp_path / "in.jsonl", 2000, seed=1, raw=False)
    options = ["--workers", "2", "--chunk-lines", "50", "--batch-size", "1"]
    progress = tmp_path / "out.jsonl.progress.json"
    command = [sys.executable, "-m", "ldnet_runtime", str(export_dir), str(tmp_path / "in.jsonl")]
    command += ["--output-file", str(tmp_path / "out.jsonl"), *options]
    process = subprocess.Popen(command, start_new_session=True, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if json.loads(progress.read_text())["chunks_done"] >= 3:
                break
        except (OSError, ValueError):  # not written yet, or being replaced
            pass
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)  # the command and its workers
    assert process.wait() == -signal.SIGKILL
    done = json.loads(progress.read_text())["chunks_done"]
    assert 3 <= done < 40

    resumed = tag(export_dir, tmp_path / "in.jsonl", tmp_path / "out.jsonl", *options)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not progress.exists()
    uninterrupted = tag(export_dir, tmp_path / "in.jsonl", tmp_path / "ref.jsonl", *options)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    assert (tmp_path / "out.jsonl").read_bytes() == (tmp_path / "ref.jsonl").read_bytes()

    # another setting cannot resume a run it did not start
    (tmp_path / "out.jsonl.progress.json").write_text(progress_record(tmp_path, chunk_lines=7))
    refused = tag(export_dir, tmp_path / "in.jsonl", tmp_path / "out.jsonl", *options)
    assert refused.returncode == 1 and "records a run with other settings" in refused.stderr


def progress_record(tmp_path: Path, chunk_lines: int) -> str:
    settings = {"export_dir": "x", "input_file": str(tmp_path / "in.jsonl")}
    settings.update(batch_size=1, chunk_lines=chunk_lines)
    return json.dumps({"settings": settings, "chunks_done": 1, "output_bytes": 0})


def test_a_bad_line_is_named_and_stops_or_is_skipped(fixture_exports, predictor, tmp_path):
    export_dir = fixture_exports["ner_ldnet_pruned"]
    lines = write_input(tmp_path / "in.jsonl", 20, seed=2, raw=False)
    lines[6] = "{not json"
    lines[8] = json.dumps({"tokens": ["fine", ""]})
    (tmp_path / "in.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    options = ["--workers", "2", "--chunk-lines", "5"]

    stopped = tag(export_dir, tmp_path / "in.jsonl", tmp_path / "out.jsonl", *options)
    assert stopped.returncode == 1
    assert f"ldnet_runtime: {tmp_path / 'in.jsonl'}:7: not valid JSON" in stopped.stderr
    good = [json.loads(line) for line in lines[:5] if line]
    expected = [predictor.dump_line(output) for output in predictor.predict_batch_json(good)]
    assert (tmp_path / "out.jsonl").read_text().splitlines(keepends=True) == expected

    skipped = tag(
        export_dir, tmp_path / "in.jsonl", tmp_path / "out.jsonl", *options, "--skip-bad-lines"
    )
    assert skipped.returncode == 0, skipped.stderr[-3000:]
    reported = skipped.stderr.splitlines()
    assert reported[0].startswith(f"ldnet_runtime: skipped {tmp_path / 'in.jsonl'}:7: not valid")
    assert reported[1].startswith(f"ldnet_runtime: skipped {tmp_path / 'in.jsonl'}:9: ")
    assert reported[2:] == ["ldnet_runtime: 2 bad input line(s) skipped"]
    good = [json.loads(line) for i, line in enumerate(lines) if line and i not in (6, 8)]
    expected = [predictor.dump_line(output) for output in predictor.predict_batch_json(good)]
    assert (tmp_path / "out.jsonl").read_text().splitlines(keepends=True) == expected
