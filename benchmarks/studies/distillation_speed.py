"""
The distillation study's speed stage (`benchmarks/studies/distillation.py`): sentences/s of the
teacher and the student on CPU at batch 1 and 64, model forward only, both timed in one process
by `harness.timing.interleaved` at 1 and at 2 torch threads.
"""

import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from benchmarks.harness.timing import interleaved
from benchmarks.studies import distillation_data as data
from benchmarks.studies.distillation_pipeline import Run


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def speed_models(run: Run) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """
    Teacher and student, each a (model, instances) pair, and where the data came from (`data`,
    `student_vocabulary`). The weights are untrained (speed does not depend on them); each
    model reads the timing sentences with its own reader. The student's vocabulary is the
    chosen SST-2 distilled_aug student's if this run dir has one (so that `params_student` is
    the real student's), else built from the training subset.
    """
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the teacher's transformer, from the cache
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args, run_dir = run.args, run.run_dir
    if not data.task_files("sst2", run_dir)["record"].exists():  # else the SST-2 run's split
        data.pin_task_settings("sst2", run_dir, data.split_settings("sst2", args))
        data.write_split("sst2", args, run_dir)
    files = data.task_files("sst2", run_dir)
    os.environ["SST2_TRAIN_DATA_PATH"] = files["train"]
    os.environ["SST2_DEV_DATA_PATH"] = files["dev"]
    timing_data = args.speed_data or os.path.join(data.sst2_dir(), "test.tsv")
    candidates = data.trained_students("sst2", run_dir)
    chosen = data.chosen_students(candidates).get("distilled_aug")
    vocabulary = None if chosen is None else run_dir / chosen / "vocabulary"
    vectors = "random" if chosen is None else candidates[chosen]["vectors"]

    def build(config: str, vocabulary_dir: Optional[Path], vocabulary_data: str):
        params = Params.from_file(str(data.CONFIGS / config))
        reader = DatasetReader.from_params(params.pop("dataset_reader"))
        if "validation_dataset_reader" in params:
            reader = DatasetReader.from_params(params.pop("validation_dataset_reader"))
        instances = list(reader.read(timing_data))[: args.speed_sentences]
        if vocabulary_dir is not None:
            vocab = Vocabulary.from_files(str(vocabulary_dir))
        else:  # labelled sentences, for the label namespace
            vocab = Vocabulary.from_instances(reader.read(vocabulary_data))
        model = Model.from_params(vocab=vocab, params=params.pop("model"))
        return model.eval(), instances

    student = data.student_config("sst2", "bilstm", vectors)
    models = {
        "teacher": build("sst2_teacher.jsonnet", None, files["dev"]),
        "student": build(student, vocabulary, files["train"]),
    }
    return models, {"data": timing_data, "student_vocabulary": str(vocabulary or files["train"])}


def forward_cases(models: Dict[str, Any], counts: Dict[int, int]) -> Dict[str, Any]:
    """`<model>_b<batch size>` -> a forward pass over the first `counts[batch size]`
    sentences, tensorised beforehand; in the order teacher b64, student b64, teacher b1, ..."""
    from allennlp.data import Batch

    cases = {}
    for batch_size in (64, 1):
        for name, (model, instances) in models.items():
            batches = []
            for start in range(0, counts[batch_size], batch_size):
                batch = Batch(instances[start : min(start + batch_size, counts[batch_size])])
                batch.index_instances(model.vocab)
                batches.append(batch.as_tensor_dict())

            def forward(model=model, batches=batches):
                for tensors in batches:
                    model(**tensors)

            cases[f"{name}_b{batch_size}"] = forward
    return cases


def speed(run: Run) -> None:
    """
    Sentences/s of teacher vs student, model forward only, torch.inference_mode, CPU, the same
    process, sentences, warm-up and rounds for both; at 1 and 2 torch threads.
    """
    import torch

    args, results = run.args, run.results
    models, found = speed_models(run)
    for name, (model, _) in models.items():
        results[f"params_{name}"] = count_parameters(model)
    embedder = count_parameters(models["student"][0].text_field_embedder)
    results["params_student_without_embeddings"] = results["params_student"] - embedder
    counts = {64: len(models["teacher"][1])}
    counts[1] = min(args.speed_b1_sentences, counts[64])
    cases = forward_cases(models, counts)
    by_threads: Dict[str, float] = {}
    for threads in (1, 2):
        with torch.inference_mode():
            timings = interleaved(cases, rounds=args.rounds, threads=threads)
        for key in cases:
            rate = timings.rate(key, counts[int(key.rsplit("_b", 1)[1])])
            by_threads[f"{key}_threads{threads}"] = round(rate, 1)
        for b in (1, 64):
            ratio = (
                by_threads[f"student_b{b}_threads{threads}"]
                / by_threads[f"teacher_b{b}_threads{threads}"]
            )
            by_threads[f"student_speedup_b{b}_threads{threads}"] = round(ratio, 1)
    results["speed_by_threads"] = by_threads
    used = {}
    for key in (f"{name}_b{b}" for name in models for b in (1, 64)):
        used[key] = max((1, 2), key=lambda t: by_threads[f"{key}_threads{t}"])
        results[f"sentences_per_sec_{key}"] = by_threads[f"{key}_threads{used[key]}"]
    results["speed_threads_used"] = used
    for b in (1, 64):
        ratio = (
            results[f"sentences_per_sec_student_b{b}"] / results[f"sentences_per_sec_teacher_b{b}"]
        )
        results[f"student_speedup_b{b}"] = round(ratio, 1)
    results["speed_setup"] = speed_setup(found, counts, args.rounds)
    run.save()


def speed_setup(found: Dict[str, str], counts: Dict[int, int], rounds: int) -> Dict[str, str]:
    """The results file's `speed_setup` note."""
    return {
        "data": f"the first {counts[64]} sentences of {found['data']} at batch 64, the first "
        f"{counts[1]} at batch 1 (unlabelled; no split a figure is measured on)",
        "timing": f"one warm-up pass of every (model, batch size), then {rounds} "
        "interleaved rounds (teacher b64, student b64, teacher b1, student b1); sentences/s "
        "of the median round",
        "threads": "torch.set_num_threads(1), then (2), the same for both models; each "
        "headline sentences_per_sec_* is the model's faster count (speed_threads_used), every "
        "count under speed_by_threads (student_speedup_b*_threads* = same count for both)",
        "what": "model forward only, torch.inference_mode, CPU, one process; untrained weights",
        "student_vocabulary": found["student_vocabulary"],
    }
