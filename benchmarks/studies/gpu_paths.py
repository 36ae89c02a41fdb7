"""
Every training path of the package on the fixtures, on one device, for the `gpu` study (`all`
lists them). Each path records `{"ok": true, "seconds"}` or `{"ok": false, "error"}`; a path
whose input failed is not run (its error names the input). The commands run in this process,
as `allennlp <command> --include-package ldnet_allennlp`.
"""

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional
from unittest.mock import patch

from allennlp.training.callbacks import TrainerCallback

from benchmarks.harness.data import ROOT
from benchmarks.harness.timing import wall_clock

FIXTURES = ROOT / "fixtures"
CONFIGS = ROOT / "training_configs"
TAGGING = FIXTURES / "tagging"
DISTILLATION = FIXTURES / "distillation"
# every data variable of training_configs/, pointed at the fixtures (also the tests' variables)
FIXTURE_DATA = {
    "CONLL03_TRAIN_DATA_PATH": str(TAGGING / "conll2003_train.txt"),
    "CONLL03_DEV_DATA_PATH": str(TAGGING / "conll2003_dev.txt"),
    "CONLL03_TEST_DATA_PATH": str(TAGGING / "conll2003_dev.txt"),
    "CONLL00_TRAIN_DATA_PATH": str(TAGGING / "conll2000_train.txt"),
    "CONLL00_TEST_DATA_PATH": str(TAGGING / "conll2000_test.txt"),
    "LM_TRAIN_DATA_PATH": str(FIXTURES / "lm" / "lm_fixture_train.txt"),
    "LM_VALIDATION_DATA_PATH": str(FIXTURES / "lm" / "lm_fixture_dev.txt"),
    "LM_FINETUNE_TRAIN_PATH": str(FIXTURES / "lm" / "lm_fixture_train.txt"),
    "LM_FINETUNE_DEV_PATH": str(FIXTURES / "lm" / "lm_fixture_dev.txt"),
    "DISTILLATION_FIXTURES": str(DISTILLATION),
    "TEACHER_MODEL_PATH": str(DISTILLATION / "tiny_bert"),
    "SST2_TRAIN_DATA_PATH": str(DISTILLATION / "sst2" / "sst2_fixture_train.tsv"),
    "SST2_DEV_DATA_PATH": str(DISTILLATION / "sst2" / "sst2_fixture_dev.tsv"),
}
# the real LM configs' softmax cut-offs and vocabulary limits exceed the fixture text
LM_OVERRIDES = {
    "model.cutoffs": [10, 20],
    "vocabulary.min_count.tokens": 1,
    "vocabulary.max_vocab_size.tokens": 1000,
    "data_loader.batches_per_epoch": 2,
}
# tiny students: the structure stays the config's
STUDENT_OVERRIDES = {
    "model.text_field_embedder.token_embedders.tokens.embedding_dim": 8,
    "model.encoder.input_size": 8,
    "model.encoder.hidden_size": 8,
    "model.hidden_dim": 8,
    "data_loader.batch_sampler.batch_size": 16,
}
FINE_TUNED_LMS = {"model.text_field_embedder.token_embedders.elmo.requires_grad": True}


class Paths:
    """Runs the paths in order on `cuda_device` (-1: the CPU), under `work`."""

    def __init__(self, work: Path, cuda_device: int) -> None:
        self.work = work
        self.cuda_device = cuda_device
        self.on_device = ("--cuda-device", str(cuda_device))  # the commands' option
        self.variables: Dict[str, str] = dict(FIXTURE_DATA)
        self.results: Dict[str, Dict[str, Any]] = {}

    def run(self, name: str, needs: List[str], work: Callable[[], Any]) -> None:
        """`work` returns nothing, a dict of figures to record, or why it was skipped; it runs
        once, timed by the harness's `wall_clock` (a path's first run is the one)."""
        missing = [need for need in needs if not self.results.get(need, {}).get("ok")]
        if missing:
            self.results[name] = {"ok": False, "error": f"not run: needs {', '.join(missing)}"}
            return
        seconds: List[float] = []
        try:
            with wall_clock(seconds.append):
                outcome = work()
        except (Exception, SystemExit) as error:  # a path's failure is a result
            lines = traceback.format_exception_only(type(error), error)
            self.results[name] = {"ok": False, "error": "".join(lines).strip()[-2000:]}
        else:
            if isinstance(outcome, str):
                self.results[name] = {"ok": None, "skipped": outcome}
            else:
                ran = {"ok": True, "seconds": round(seconds[0], 2)}
                self.results[name] = {**ran, **(outcome or {})}
        print(f"[gpu paths] {name}: {self.results[name]}", flush=True)

    def train(self, config: Path, name: str, overrides: Optional[Dict] = None, recover=False):
        """`config` trained for one epoch (unless `overrides` say otherwise) into `work/<name>`,
        which is returned."""
        from allennlp.commands.train import train_model
        from allennlp.common import Params
        from allennlp.common.params import with_overrides

        os.environ.update(self.variables)  # the distillation configs read the environment
        params = Params.from_file(str(config), ext_vars=self.variables)
        changes = {"trainer.cuda_device": self.cuda_device, "trainer.num_epochs": 1}
        changes.update(overrides or {})
        params = Params(with_overrides(params.as_dict(quiet=True), changes))
        train_model(params, str(self.work / name), recover=recover)
        return self.work / name

    def command(self, *arguments: str) -> None:
        """`allennlp <arguments> --include-package ldnet_allennlp`, in this process."""
        from allennlp.commands import main

        argv = sys.argv
        sys.argv = ["allennlp", *arguments, "--include-package", "ldnet_allennlp"]
        try:
            main(prog="allennlp")
        finally:
            sys.argv = argv

    def all(self) -> Dict[str, Dict[str, Any]]:
        self.run("lm_pretraining", [], self.lms)
        for task in ("ner", "chunk"):
            self.run(f"{task}_ldnet", ["lm_pretraining"], lambda t=task: self.tagger(t))
            self.run(f"{task}_ldnet_prune", [f"{task}_ldnet"], lambda t=task: self.prune(t))
        self.run("ner_ldnet_amp", ["lm_pretraining"], self.amp)
        self.run("scalar_mix_fine_tuned", ["lm_pretraining"], self.scalar_mix)
        self.run("scalar_mix_fine_tuned_prune", ["scalar_mix_fine_tuned"], self.scalar_mix_prune)
        self.run("ldnet_prune", ["ner_ldnet_prune"], self.ldnet_prune)
        self.run("evaluate_pruned", ["ldnet_prune"], self.evaluate)
        self.run("predict_pruned", ["ldnet_prune"], self.predict)
        self.run("tagging_transfer_set", ["ner_ldnet"], self.tagging_transfer_set)
        self.run("tagging_student", ["tagging_transfer_set"], self.tagging_student)
        self.run("distillation_teacher", [], self.teacher)
        self.run("distill_transfer_set", ["distillation_teacher"], self.distill_transfer_set)
        self.run("distillation_student", ["distill_transfer_set"], self.student)
        self.run("recover", ["lm_pretraining"], self.recover)
        return self.results

    def lms(self) -> None:
        for direction in ("forward", "backward"):
            config = CONFIGS / "lm" / f"dense_lm_{direction}.jsonnet"
            run = self.train(config, f"lm_{direction}", LM_OVERRIDES)
            self.variables[f"{direction.upper()}_LM_ARCHIVE"] = str(run / "model.tar.gz")

    def tagger(self, task: str) -> None:
        run = self.train(CONFIGS / "tagging" / f"{task}_ldnet.jsonnet", f"{task}_ldnet")
        self.variables[f"{task.upper()}_LDNET_PHASE1_DIR"] = str(run)

    def prune(self, task: str) -> None:
        self.train(CONFIGS / "tagging" / f"{task}_ldnet_prune.jsonnet", f"{task}_prune")

    def amp(self) -> Optional[str]:
        if self.cuda_device < 0:
            return "AMP needs CUDA"
        self.train(CONFIGS / "tagging" / "ner_ldnet.jsonnet", "ner_amp", {"trainer.use_amp": True})

    def scalar_mix(self) -> None:
        overrides = {"model.type": "ldnet_crf_tagger", **FINE_TUNED_LMS}
        run = self.train(CONFIGS / "elmo" / "ner_scalar_mix.jsonnet", "scalar_mix", overrides)
        self.variables["NER_SCALAR_MIX_PHASE1_DIR"] = str(run)

    def scalar_mix_prune(self) -> None:
        config = CONFIGS / "elmo" / "ner_scalar_mix_prune.jsonnet"
        self.train(config, "scalar_mix_prune", FINE_TUNED_LMS)

    def ldnet_prune(self) -> None:
        """The pruning run's tagger with masks of 0 beyond layers 0 and 1 (a fixture epoch
        zeroes none), cut by `ldnet-prune`."""
        archive = self._masked(self.work / "ner_prune" / "model.tar.gz", [0, 1], [0, 1])
        self.command("ldnet-prune", str(archive), "-o", str(self.work / "pruned.tar.gz"))

    def _masked(self, archive: Path, forward: List[int], backward: List[int]) -> Path:
        """`archive` with its layer masks 1 at the `forward` / `backward` layers, 0 elsewhere."""
        import torch
        from allennlp.models.archival import load_archive

        from ldnet_allennlp.pruning.cut_layers import write_archive

        loaded = load_archive(str(archive))
        mask = loaded.model.text_field_embedder.token_embedder_lm.layer_mask
        with torch.no_grad():
            mask.zero_()
            mask[0, forward] = 1.0
            mask[1, backward] = 1.0
        masked = archive.with_name("masked.tar.gz")
        write_archive(loaded.config.as_dict(quiet=True), loaded.model, str(masked))
        return masked

    def evaluate(self) -> None:
        pruned, dev = str(self.work / "pruned.tar.gz"), FIXTURE_DATA["CONLL03_DEV_DATA_PATH"]
        out = self.work / "evaluate.json"
        self.command("evaluate", pruned, dev, *self.on_device, "--output-file", str(out))
        json.loads(out.read_text())["f1-measure-overall"]

    def predict(self) -> None:
        sentences = self.work / "sentences.jsonl"
        sentences.write_text('{"sentence": "John Smith visited Paris ."}\n')
        out = self.work / "predictions.jsonl"
        arguments = [str(self.work / "pruned.tar.gz"), str(sentences), "--silent", *self.on_device]
        self.command("predict", *arguments, "--output-file", str(out))
        assert len(json.loads(out.read_text())["tags"]) == 5

    def tagging_transfer_set(self) -> None:
        sentences = self.work / "news.txt"
        sentences.write_text("John Smith visited Paris .\nThe EU rejects German beef .\n" * 8)
        tagger, output = self.work / "ner_ldnet" / "model.tar.gz", self.work / "transfer.jsonl"
        options = ["--input", str(sentences), "--output", str(output), "--batch-size", "4"]
        self.command("ldnet-tagging-transfer-set", str(tagger), *options, *self.on_device)

    def tagging_student(self) -> None:
        from benchmarks.studies.pruning_phase2 import phase1_from_archive
        from ldnet_allennlp.pruning.cut_layers import prune_archive

        # the student starts from the teacher cut to forward layer 1 and backward layer 0
        masked = self._masked(self.work / "ner_ldnet" / "model.tar.gz", [1], [0])
        pruned = self.work / "student_start.tar.gz"
        prune_archive(str(masked), str(pruned))
        start = phase1_from_archive(pruned, self.work / "student_start")
        config = self.work / "student.jsonnet"
        config.write_text(
            f"local distill = import '{CONFIGS}/tagging/student/distill.libsonnet';\n"
            f"distill(import '{CONFIGS}/tagging/ner_ldnet.jsonnet', '{start}', "
            f"'{self.work / 'transfer.jsonl'}', [1], [0], loss='kl', num_epochs=1)\n"
        )
        self.train(config, "tagging_student")

    def teacher(self) -> None:
        run = self.train(CONFIGS / "distillation" / "sst2_teacher.jsonnet", "teacher")
        self.variables["SST2_TEACHER_ARCHIVE"] = str(run / "model.tar.gz")

    def distill_transfer_set(self) -> None:
        output, teacher = str(self.work / "sst2_aug.jsonl"), self.variables["SST2_TEACHER_ARCHIVE"]
        data = [teacher, FIXTURE_DATA["SST2_TRAIN_DATA_PATH"], output, "--n-iter", "2"]
        self.command("ldnet-distill-transfer-set", *data, *self.on_device)
        self.variables["SST2_TRANSFER_SET_AUG"] = output

    def student(self) -> None:
        config = CONFIGS / "distillation" / "sst2_distilled_aug.jsonnet"
        self.train(config, "student", {**STUDENT_OVERRIDES, "trainer.num_epochs": 2})

    def recover(self) -> Dict[str, float]:
        """The NER tagger trained 2 epochs at once, and stopped in its second epoch and resumed
        with `--recover`: the same weights (`exact_resume`, the device's generators included)."""
        import torch

        config = CONFIGS / "tagging" / "ner_ldnet.jsonnet"
        overrides = {"trainer.num_epochs": 2, "trainer.callbacks": [{"type": INTERRUPT}]}
        whole = self.train(config, "whole", overrides)
        with patch.object(Interrupt, "at_epoch", 1), contextlib.suppress(Interrupted):
            self.train(config, "resumed", overrides)
        resumed = self.train(config, "resumed", overrides, recover=True)
        a, b = torch.load(whole / "best.th"), torch.load(resumed / "best.th")
        gap = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
        if gap > 1e-4:
            raise AssertionError(f"resumed weights differ from an uninterrupted run by {gap:g}")
        return {"max_weight_difference": gap}


INTERRUPT = "benchmarks_interrupt"


class Interrupted(RuntimeError):
    pass


@TrainerCallback.register(INTERRUPT, exist_ok=True)
class Interrupt(TrainerCallback):
    """Stops training at the second batch of epoch `Interrupt.at_epoch` (None: never), as a
    crash would; the config is the same either way, so it resumes."""

    at_epoch: Optional[int] = None

    def on_batch(self, trainer, *batch, is_training: bool, **kwargs) -> None:
        # batch: the inputs, the outputs, the metrics, the epoch and the batch's number
        epoch, batch_number = batch[3], batch[4]
        if is_training and (epoch, batch_number) == (Interrupt.at_epoch, 2):
            raise Interrupted(f"stopped at epoch {epoch}, batch {batch_number}")
