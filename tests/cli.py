"""Runs the real `allennlp` command line in a subprocess, the way a user does."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

PROJECT_ROOT = Path(__file__).resolve().parent.parent
ALLENNLP = str(Path(sys.executable).with_name("allennlp"))


def run_allennlp(
    args: List[str], env: Optional[Dict[str, str]] = None, check: bool = True
) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    full_env.update(env or {})
    process = subprocess.run(
        [ALLENNLP, *args], cwd=PROJECT_ROOT, env=full_env, capture_output=True, text=True
    )
    if check and process.returncode != 0:
        raise AssertionError(
            f"allennlp {' '.join(args)} exited with {process.returncode}:\n{process.stderr[-5000:]}"
        )
    return process


def noisy_lines(stderr: str) -> List[str]:
    """
    The lines of a log that a user would read as a problem: warnings and tracebacks. INFO lines,
    progress bars and the NLTK download errors of allennlp-models' import (documented in
    docs/install.md) are not.
    """
    noisy = []
    for line in stderr.splitlines():
        if line.startswith("[nltk_data]") or " - INFO - " in line:
            continue
        lowered = line.lower()
        if "warn" in lowered or "traceback" in lowered or "error" in lowered:
            noisy.append(line)
    return noisy
