"""
Exported taggers shared by the export tests (each made once per session): the fixtures' LD-Net
taggers (unpruned and pruned, no GloVe) and a tiny tagger with GloVe trained here on the
fixtures (`fixtures/glove/tagger_glove.jsonnet`, the real GloVe package).
"""

import io
import tarfile
from pathlib import Path
from typing import Dict

import pytest
import torch

from allennlp.commands.train import train_model
from allennlp.common import Params

from ldnet_allennlp.onnx_export.exporter import export_tagger
from tests.conftest import FIXTURES_ROOT

FIXTURE_ARCHIVES = FIXTURES_ROOT / "archives"
FIXTURE_TAGGERS = ["ner_ldnet", "ner_ldnet_pruned"]
GLOVE_CONFIG = FIXTURES_ROOT / "glove" / "tagger_glove.jsonnet"
GLOVE_DATA = {
    "CONLL03_TRAIN_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_train.txt"),
    "CONLL03_DEV_DATA_PATH": str(FIXTURES_ROOT / "tagging" / "conll2003_dev.txt"),
}


@pytest.fixture(scope="session")
def one_thread_session():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def fixture_exports(tmp_path_factory, one_thread_session) -> Dict[str, Path]:
    """Archive name -> the folder ldnet-export wrote for it."""
    folder = tmp_path_factory.mktemp("fixture_exports")
    exports = {}
    for name in FIXTURE_TAGGERS:
        export_tagger(str(FIXTURE_ARCHIVES / f"{name}.tar.gz"), str(folder / name))
        exports[name] = folder / name
    return exports


@pytest.fixture(scope="session")
def glove_tagger(tmp_path_factory, one_thread_session) -> Dict[str, Path]:
    """`{"archive": the trained GloVe tagger, "export": its export}`."""
    folder = tmp_path_factory.mktemp("glove_tagger")
    params = Params.from_file(str(GLOVE_CONFIG), ext_vars=GLOVE_DATA)
    train_model(params, serialization_dir=str(folder / "run"))
    archive = folder / "glove_tagger.tar.gz"
    with_unknown_vector(folder / "run" / "model.tar.gz", archive)
    export_tagger(str(archive), str(folder / "export"))
    return {"archive": archive, "export": folder / "export"}


def with_unknown_vector(trained: Path, output: Path) -> None:
    """
    `trained` with a random vector for words GloVe lacks: every word of the fixtures is in
    GloVe, so training leaves it at zeros, which would not show whether it is used.
    """
    key = "text_field_embedder.token_embedder_glove.unknown_vector"
    with tarfile.open(trained) as source, tarfile.open(output, "w:gz") as target:
        for member in source.getmembers():
            content = source.extractfile(member) if member.isfile() else None
            if member.name == "weights.th":
                weights = torch.load(content, weights_only=True)
                weights[key] = torch.randn(
                    weights[key].shape, generator=torch.Generator().manual_seed(0)
                )
                buffer = io.BytesIO()
                torch.save(weights, buffer)
                member.size = buffer.tell()
                buffer.seek(0)
                content = buffer
            target.addfile(member, content)
