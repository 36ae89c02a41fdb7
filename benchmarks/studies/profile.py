"""
Where a tagger's inference time goes, per word, for an un-pruned and a pruned LD-Net tagger at
batch 32 and batch 1, with one thread, on CoNLL-03 NER (eng.testb).

Each archive's `forward` runs on pre-indexed tensor batches of the test sentences (tokenisation
and indexing are not timed), `torch.no_grad()`, CPU. The clock is read around each component
inside the same forward call: `lm_layers` (the dense LMs of every `layer_selection` embedder),
`lm_features_rest` (the rest of that embedder: layer masks, concatenation, `W_cr`), one row per
other token embedder, `embedder_rest` (the text-field embedder outside its token embedders),
`word_bilstm`, `crf_emissions` (the tag projection), `viterbi`, and `python_and_allennlp` (the
forward less all of these). µs per word: the median over `--rounds` interleaved rounds of a
component's seconds over all batches, over the words.

    python -m benchmarks profile   # -> profile.json (its figures under `tasks.ner`)
"""

import argparse
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Dict, List

from benchmarks.harness.data import CONLL03, hardware, read_sentences
from benchmarks.harness.results import command_line, write_results
from benchmarks.harness.study import Headline, Stage, Study, headline
from benchmarks.harness.taggers import forward_seconds, tensor_batches
from benchmarks.harness.timing import MIN_ROUNDS, interleaved


class ComponentTimer:
    """
    Seconds spent in each component of `model`'s forward (`seconds`, by row of the profile),
    summed over calls: each timed method's own time, less that of the timed methods it calls. The
    clock is read inside one forward call, which `interleaved` (timing whole calls) cannot split;
    `profiled_case` hands the sums to it as a self-timed case.
    """

    def __init__(self, model) -> None:
        self.seconds: Dict[str, float] = defaultdict(float)
        self._inner = 0.0  # seconds of the timed calls inside the one under way
        embedder = model.text_field_embedder
        self._time("embedder_rest", embedder, "forward")
        for name, token_embedder in embedder._token_embedders.items():
            bilm = getattr(token_embedder, "bilm", None)  # layer_selection: LMs in bilm.layers
            self._time(name if bilm is None else "lm_features_rest", token_embedder, "forward")
            if bilm is not None:
                self._time("lm_layers", bilm, "layers")
        self._time("word_bilstm", model.encoder, "forward")
        self._time("crf_emissions", model.tag_projection_layer, "forward")
        self._time("viterbi", model.crf, "viterbi_tags")

    def _time(self, row: str, owner: Any, name: str) -> None:
        method = getattr(owner, name)

        def timed(*args, **kwargs):
            outer, self._inner = self._inner, 0.0
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - start
                self.seconds[row] += seconds - self._inner
                self._inner = outer + seconds

        setattr(owner, name, timed)  # an instance attribute, over the class's method

    def components(self, total: float) -> Dict[str, float]:
        """The rows, with `python_and_allennlp` (the rest of `total`) and `total`."""
        rows = dict(self.seconds)
        return {**rows, "python_and_allennlp": total - sum(rows.values()), "total": total}


def profiled_case(model, batches, timer: ComponentTimer):
    """A self-timed case: one forward over `batches`, returning seconds by component."""

    def run() -> Dict[str, float]:
        timer.seconds.clear()
        return timer.components(forward_seconds(model, batches))

    return run


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--unpruned", default="pretrained/ner_ldnet.tar.gz")
    parser.add_argument("--pruned", default="pretrained/ner_ldnet_pruned.tar.gz")
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS)
    parser.add_argument("--batch1-sentences", type=int, default=300)


def profile(args: argparse.Namespace) -> Dict[str, Any]:
    """µs per word by component of every configuration at one thread (keys `threads1_...`), and
    the speed-ups."""
    sentences = read_sentences(CONLL03["CONLL03_TEST_DATA_PATH"])
    chosen = {32: sentences, 1: sentences[: args.batch1_sentences]}
    words = {size: sum(len(s) for s in chosen[size]) for size in chosen}
    cases = {}
    for model_name, archive in (("unpruned", args.unpruned), ("pruned", args.pruned)):
        for size in (32, 1):
            model, batches = tensor_batches(Path(archive), chosen[size], size)
            cases[f"{model_name}_b{size}"] = profiled_case(model, batches, ComponentTimer(model))
    result: Dict[str, Any] = {"words_b32": words[32], "words_b1": words[1]}
    # interleaved: machine noise hits every configuration alike
    timings = interleaved(cases, args.rounds, threads=1, self_timed=True)
    for name in cases:
        keys = {key for sample in timings.values(name) for key in sample}
        n_words = words[int(name.split("_b")[1])]
        result[f"threads1_{name}_us_per_word"] = {
            key: 1e6 * timings.median(name, key) / n_words for key in keys
        }
    for size in (32, 1):
        unpruned = result[f"threads1_unpruned_b{size}_us_per_word"]["total"]
        pruned = result[f"threads1_pruned_b{size}_us_per_word"]["total"]
        result[f"threads1_speedup_b{size}"] = unpruned / pruned
    return {**result, "unpruned_archive": str(args.unpruned), "pruned_archive": str(args.pruned)}


def run(args: argparse.Namespace) -> Dict[str, Any]:
    """Profiles the NER taggers and writes profile.json."""
    results = {
        "title": "Where a tagger's inference time goes (µs per word)",
        "hardware": hardware(),
        "notes": __doc__.split("\n\n")[1].replace("\n", " "),
        "commands": [command_line()],
        "tasks": {"ner": {**profile(args), "command": command_line()}},
    }
    write_results("profile", results, replace=True)
    return results


def summary(results: Dict[str, Any]) -> List[Headline]:
    """µs per word of the whole forward and of the LM layers, and the speed-ups."""
    found, at = [], "tasks.ner.threads1"
    for model in ("unpruned", "pruned"):
        figure, key = f"ner, {model}, batch 32, 1 thread: µs/word", f"{at}_{model}_b32"
        found.append(headline(results, figure, f"{key}_us_per_word.total"))
        lm_layers = f"{figure} in the LM layers"
        found.append(headline(results, lm_layers, f"{key}_us_per_word.lm_layers"))
    for size in (32, 1):
        figure = f"ner: speed-up of pruning, batch {size}, 1 thread"
        found.append(headline(results, figure, f"{at}_speedup_b{size}"))
    return found


STUDY = Study(
    name="profile",
    description="Where a tagger's inference time goes: µs per word by component, "
    "un-pruned and pruned, batch 32 and 1.",
    results_file="profile.json",
    stages=[Stage("profile", run, "time every component; writes profile.json")],
    add_arguments=add_arguments,
    summary=summary,
)
