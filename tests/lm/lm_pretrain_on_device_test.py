"""
`scripts/lm_pretrain_on_device.sh`, the one device call of LM pre-training, run here on the CPU
on a fixture-sized pack: both directions train side by side for a few seconds, and each best LM
comes back as fp16 parts that join into the state dict `pretrain_lms_accelerated.py archive`
reads, with its log (passes, the perplexity curve, the held-out sets).
"""

import json
import os
import subprocess
import sys
import tarfile

import torch

from tests.cli import PROJECT_ROOT
from tests.conftest import FIXTURES_ROOT

SCRIPT = PROJECT_ROOT / "scripts" / "lm_pretrain_on_device.sh"
PRETRAIN = str(PROJECT_ROOT / "scripts" / "pretrain_lms_accelerated.py")
TRAIN = str(FIXTURES_ROOT / "lm" / "lm_fixture_train.txt")
DEV = str(FIXTURES_ROOT / "lm" / "lm_fixture_dev.txt")


def test_both_directions_come_back_as_fp16_parts_with_their_logs(tmp_path):
    pack = tmp_path / "pack"
    subprocess.run(
        [sys.executable, PRETRAIN, "pack", "--train", TRAIN, "--dev", DEV, "--min-count", "1",
         "--extra-dev", f"again={DEV}", "--output", str(pack)],
        cwd=PROJECT_ROOT, check=True, capture_output=True,
    )  # fmt: skip
    facts = json.loads((pack / "pack.json").read_text())
    for settings in facts["model_settings"].values():  # fixture-sized LMs
        settings["encoder"].update(input_size=6, hidden_size=4, num_layers=3)
        settings.update(projection_dim=16, cutoffs=[10, 20])
    (pack / "pack.json").write_text(json.dumps(facts))
    archive = tmp_path / "pack.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        tar.add(pack, arcname="pack", filter=lambda m: None if "train_text" in m.name else m)
    out = tmp_path / "out"
    env = dict(
        os.environ,
        OUT=str(out),
        PACK_ARCHIVE=str(archive),
        PYTHON=sys.executable,
        SECONDS_BUDGET="3",
        EVAL_EVERY="50",
        BATCH_SIZE="4",
        OMP_NUM_THREADS="1",
    )
    process = subprocess.run(
        ["bash", str(SCRIPT)], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True
    )
    assert process.returncode == 0, process.stderr[-2000:]
    for direction in ("forward", "backward"):
        parts = sorted((out / "lm").glob(f"lm_{direction}.th.part*"))
        assert parts and not (out / "lm" / f"lm_{direction}.th").exists()
        joined = tmp_path / f"lm_{direction}.th"
        joined.write_bytes(b"".join(part.read_bytes() for part in parts))
        state = torch.load(joined)
        assert "_text_field_embedder.token_embedder_tokens.weight" in state
        assert {v.dtype for v in state.values() if v.is_floating_point()} == {torch.float16}
        log = json.loads((out / "lm" / f"lm_{direction}.json").read_text())
        assert log["direction"] == direction and log["passes"] and log["curve"]
        assert log["best_dev_perplexity"] == min(p["dev_perplexity"] for p in log["curve"])
        assert set(log["extra_dev_perplexity"]) == {"again"}
        assert (out / f"train_{direction}.log").is_file()
