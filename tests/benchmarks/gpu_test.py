"""
`python -m benchmarks gpu --device cpu --fixtures`: the GPU check's dry run on the CPU writes a
complete `gpu.json` (every path ok, the epoch figures, the profile, the CPU section), so that the
check keeps working between the runs on a GPU; and the summary's goals follow the figures.
"""

import json
from types import SimpleNamespace

import pytest

from benchmarks.__main__ import main
from benchmarks.studies import gpu
from benchmarks.studies.gpu_paths import Paths

PATHS = {
    "lm_pretraining", "ner_ldnet", "ner_ldnet_prune", "chunk_ldnet", "chunk_ldnet_prune",
    "ner_ldnet_amp", "scalar_mix_fine_tuned", "scalar_mix_fine_tuned_prune", "ldnet_prune",
    "evaluate_pruned", "predict_pruned", "tagging_transfer_set", "tagging_student",
    "distillation_teacher", "distill_transfer_set", "distillation_student", "recover",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    yield


def test_the_dry_run_writes_a_complete_gpu_json(tmp_path):
    arguments = ["gpu", "--device", "cpu", "--fixtures", "--epochs", "2", "--profile-steps", "5"]
    main(arguments + ["--results-dir", str(tmp_path), "--work-dir", str(tmp_path / "work")])
    results = json.loads((tmp_path / "gpu.json").read_text())

    assert set(results["paths"]) == PATHS
    assert results["paths"]["ner_ldnet_amp"] == {"ok": None, "skipped": "AMP needs CUDA"}
    assert all(p["ok"] for name, p in results["paths"].items() if name != "ner_ldnet_amp")
    assert results["all_paths_ok"] is True
    assert results["paths"]["recover"]["max_weight_difference"] == 0.0
    assert results["torch_version"] and results["device"]
    assert [record["epoch"] for record in results["epochs"]] == [0, 1]
    for section in (results, results["cpu"]):
        assert section["epoch_seconds_ner_ldnet"] > 0
        assert section["batches_per_sec_train"] > 0 and section["batches_per_sec_validation"] > 0
    assert len(results["cpu"]["now"]["per_round_seconds"]) == 5
    profile = results["profile"]
    assert profile["steps"] == 5 and profile["wall_ms_per_step"] > 0
    parts = set(profile["operators_per_step"])
    assert {"backward", "crf_loglik", "viterbi", "metrics", "word_bilstm", "embedder:lm"} <= parts
    assert len(results["commands"]) == 4  # one record per stage
    lines = {line.key: line for line in gpu.summary(results)}
    assert lines["all_paths_ok"].met is True
    epoch = lines["epoch_seconds_ner_ldnet"]
    assert epoch.met == (epoch.value <= 15.0)


def test_a_failing_path_is_recorded_and_its_dependants_are_not_run(tmp_path):
    paths = Paths(tmp_path, -1)

    def broken():
        raise RuntimeError("cudnn RNN backward can only be called in training mode")

    paths.run("ner_ldnet", [], broken)
    paths.run("ner_ldnet_prune", ["ner_ldnet"], lambda: None)
    assert paths.results["ner_ldnet"] == {
        "ok": False,
        "error": "RuntimeError: cudnn RNN backward can only be called in training mode",
    }
    assert paths.results["ner_ldnet_prune"] == {"ok": False, "error": "not run: needs ner_ldnet"}


def test_the_summary_leaves_goals_open_before_a_gpu_run():
    lines = gpu.summary({})
    assert [line.met for line in lines] == [None, None, None, None]
    lines = {line.key: line for line in gpu.summary({"batches_per_sec_train": 31.0})}
    assert lines["batches_per_sec_train"].met is True


def test_a_baseline_case_passes_its_job_to_the_steps_script(tmp_path, monkeypatch, capsys):
    """`--stage cpu --baseline REF --cpu-batches 120`: the job `gpu.py` writes is the one
    `gpu_steps.py` trains from, in a process with the version's folder on its path."""
    from benchmarks.__main__ import build_parser
    from benchmarks.studies import gpu_steps

    ran = {}
    figures = {"median_seconds": 2.0, "ldnet_allennlp": str(tmp_path / "ldnet_allennlp")}

    def fake_run(command, env, **kwargs):
        ran.update(
            job=json.loads(command[2]), path=env["PYTHONPATH"], threads=env["OMP_NUM_THREADS"]
        )
        stdout = "a log line\nGPU_STEPS_JSON " + json.dumps(figures) + "\n"
        return SimpleNamespace(returncode=0, stdout=stdout, stderr="")

    monkeypatch.setattr(gpu.subprocess, "run", fake_run)
    args = build_parser([gpu.STUDY]).parse_args(["gpu", "--work-dir", str(tmp_path / "work")])
    assert gpu._steps_process(args, "baseline_REF", tmp_path, 0, 120)() == figures
    overrides = {"trainer.num_epochs": 1, "data_loader.batches_per_epoch": 120}
    assert ran["job"]["overrides"] == overrides and ran["job"]["profile_steps"] == 0
    assert ran["job"]["work_dir"] == str(tmp_path / "work" / "cpu_baseline_REF")
    assert ran["path"] == str(tmp_path) and ran["threads"] == "1"

    built = []
    monkeypatch.setattr(gpu_steps, "build_trainer", lambda *arguments: built.append(arguments))
    monkeypatch.setattr(gpu_steps, "run_epochs", lambda train_model: {"median_seconds": 3.0})
    gpu_steps.main(ran["job"])
    job = ran["job"]
    assert built == [
        (job["config"], job["ext_vars"], overrides, tmp_path / "work" / "cpu_baseline_REF", -1)
    ]
    assert json.loads(capsys.readouterr().out.split("GPU_STEPS_JSON ")[1])["median_seconds"] == 3.0


def test_the_recover_path_stops_at_the_second_batch_of_the_chosen_epoch_only():
    from unittest.mock import patch

    from benchmarks.studies.gpu_paths import Interrupt, Interrupted

    callback = Interrupt("unused")

    def batch(epoch, number, is_training=True):
        callback.on_batch(None, [], [], {}, epoch, number, is_training=is_training)

    batch(1, 2)  # no epoch chosen: never
    with patch.object(Interrupt, "at_epoch", 1):
        batch(0, 2), batch(1, 1), batch(1, 2, is_training=False)
        with pytest.raises(Interrupted, match="epoch 1, batch 2"):
            batch(1, 2)
