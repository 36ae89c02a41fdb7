"""
The distillation study's speed stage: sentences/s of the teacher and the student on CPU at batch
1 and 64, model forward only, both timed in one process (`distillation_pipeline.speed`) at 1
and at 2 torch threads; each headline `sentences_per_sec_*` is the model's faster count.
"""

import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from benchmarks.studies import distillation_data as data
from benchmarks.studies.distillation_pipeline import forward, speed as timed_speed
from benchmarks.studies.distillation_tasks import Run


def count_parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


def speed_models(run: Run, timing_data: str) -> Tuple[Dict[str, Any], str]:
    """
    Teacher and student, each a (model, instances) pair, and the student's vocabulary. The
    weights are untrained (speed does not depend on them); each model reads the timing sentences
    with its own reader. The student's vocabulary is the chosen SST-2 distilled_aug student's if
    this run dir has one (so that `params_student` is the real student's), else built from the
    training split.
    """
    from allennlp.common import Params
    from allennlp.data import Vocabulary
    from allennlp.data.dataset_readers import DatasetReader
    from allennlp.models import Model

    import ldnet_allennlp  # noqa: F401

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the teacher's transformer, from the cache
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args, run_dir = run.args, run.run_dir
    files = data.task_files("sst2", run_dir)
    if not files["record"].exists():  # else the SST-2 run's split
        data.split_once("sst2", args, run_dir)
    os.environ.update(SST2_TRAIN_DATA_PATH=files["train"], SST2_DEV_DATA_PATH=files["dev"])
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
        return Model.from_params(vocab=vocab, params=params.pop("model")).eval(), instances

    student = data.student_config("sst2", "bilstm", vectors)
    models = {
        "teacher": build("sst2_teacher.jsonnet", None, files["dev"]),
        "student": build(student, vocabulary, files["train"]),
    }
    return models, str(vocabulary or files["train"])


def tensorised(model, instances, count: int, batch_size: int):
    """The first `count` instances as `model`'s input tensors, in batches of `batch_size`."""
    from allennlp.data import Batch

    batches = []
    for start in range(0, count, batch_size):
        batch = Batch(instances[start : min(start + batch_size, count)])
        batch.index_instances(model.vocab)
        batches.append(batch.as_tensor_dict())
    return batches


def speed(run: Run) -> None:
    """Sentences/s of teacher vs student: the same process, sentences, warm-up and rounds for
    both, in the order teacher b64, student b64, teacher b1, student b1; at 1 and 2 threads."""
    args, results = run.args, run.results
    timing_data = args.speed_data or os.path.join(data.sst2_dir(), "test.tsv")
    models, student_vocabulary = speed_models(run, timing_data)
    for name, (model, _) in models.items():
        results[f"params_{name}"] = count_parameters(model)
    embedder = count_parameters(models["student"][0].text_field_embedder)
    results["params_student_without_embeddings"] = results["params_student"] - embedder
    counts = {64: len(models["teacher"][1])}
    counts[1] = min(args.speed_b1_sentences, counts[64])
    cases, work = {}, {}
    for b in (64, 1):
        for name, (model, instances) in models.items():
            cases[f"{name}_b{b}"] = forward([(model, tensorised(model, instances, counts[b], b))])
            work[f"{name}_b{b}"] = counts[b]
    by_threads: Dict[str, float] = {}
    for threads in (1, 2):
        rates, _ = timed_speed(cases, work, args.rounds, threads)
        by_threads.update({f"{k}_threads{threads}": round(v, 1) for k, v in rates.items()})
        for b in (1, 64):
            ratio = rates_ratio(
                by_threads, f"student_b{b}_threads{threads}", f"teacher_b{b}_threads{threads}"
            )
            by_threads[f"student_speedup_b{b}_threads{threads}"] = ratio
    results["speed_by_threads"] = by_threads
    used = {
        key: max((1, 2), key=lambda t: by_threads[f"{key}_threads{t}"]) for key in sorted(cases)
    }
    results["speed_threads_used"] = used
    for key, threads in used.items():
        results[f"sentences_per_sec_{key}"] = by_threads[f"{key}_threads{threads}"]
    for b in (1, 64):
        key = "sentences_per_sec_{}_b%d" % b
        results[f"student_speedup_b{b}"] = rates_ratio(
            results, key.format("student"), key.format("teacher")
        )
    results["speed_setup"] = {
        "data": f"the first {counts[64]} sentences of {timing_data} at batch 64, the first "
        f"{counts[1]} at batch 1 (unlabelled; no split a figure is measured on)",
        "timing": f"one warm-up pass of every (model, batch size), then {args.rounds} "
        "interleaved rounds (teacher b64, student b64, teacher b1, student b1); sentences/s "
        "of the median round",
        "threads": "torch.set_num_threads(1), then (2), the same for both models; each "
        "headline sentences_per_sec_* is the model's faster count (speed_threads_used), every "
        "count under speed_by_threads (student_speedup_b*_threads* = same count for both)",
        "what": "model forward only, torch.inference_mode, CPU, one process; untrained weights",
        "student_vocabulary": student_vocabulary,
    }
    run.save()


def rates_ratio(figures: Dict[str, float], numerator: str, denominator: str) -> float:
    return round(figures[numerator] / figures[denominator], 1)
