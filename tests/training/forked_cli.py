"""
`allennlp` commands in forked processes, without paying the ~10 s of CPU an `allennlp` process
spends importing each time.

A server process (started from the repository root with the environment of `tests/cli.py`)
imports the command line and its plugins once, then forks one child per command. Each child sets
its own environment, points its stdout and stderr at a log file and runs
`allennlp.commands.main()`, which is what the `allennlp` script runs: it is a process of its own
(it can be SIGKILLed; a `--recover` child shares no memory with the child that was killed) that
starts from a state where nothing but imports has happened. Nothing is imported in the server
beyond what every `allennlp` process imports, so e.g. `--include-package tests.training.sigkill`
is imported by the child, under the child's environment.
"""

import itertools
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Dict, List

from tests.cli import PROJECT_ROOT

SERVER = r"""
import json, os, sys, threading, traceback
from allennlp.commands import main
from allennlp.common.plugins import import_plugins

import_plugins()
results = os.dup(1)
os.dup2(2, 1)  # nothing but results on the results pipe


def wait(key, pid):
    _, status = os.waitpid(pid, 0)
    code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    os.write(results, (json.dumps({"key": key, "returncode": code}) + "\n").encode())


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(results)
            os.environ.clear()
            os.environ.update(request["env"])
            log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(log, 1)
            os.dup2(log, 2)
            sys.stdin = open(os.devnull)
            sys.argv = ["allennlp", *request["argv"]]
            main(prog="allennlp")
            code = 0
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    threading.Thread(target=wait, args=(request["key"], pid), daemon=True).start()
"""


class ForkedCli:
    """`run(args, env, log)` runs `allennlp <args>` in a child of the server; thread-safe."""

    def __init__(self, env: Dict[str, str]) -> None:
        self._env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **env)
        self._server = subprocess.Popen(
            [sys.executable, "-c", SERVER],
            cwd=PROJECT_ROOT,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._pending: Dict[int, Future] = {}
        self._reader = threading.Thread(target=self._read_results, daemon=True)
        self._reader.start()

    def _read_results(self) -> None:
        for line in self._server.stdout:
            result = json.loads(line)
            with self._lock:
                self._pending.pop(result["key"]).set_result(result["returncode"])
        with self._lock:  # the server died: fail whatever is still waiting
            for future in self._pending.values():
                future.set_exception(RuntimeError("the forked allennlp server exited"))

    def run(
        self, args: List[str], env: Dict[str, str], log: Path, timeout: float = 900
    ) -> subprocess.CompletedProcess:
        future: Future = Future()
        request = {"argv": args, "env": dict(self._env, **env), "log": str(log)}
        with self._lock:
            request["key"] = key = next(self._keys)
            self._pending[key] = future
            self._server.stdin.write(json.dumps(request) + "\n")
            self._server.stdin.flush()
        returncode = future.result(timeout=timeout)
        output = Path(log).read_text(errors="replace")
        return subprocess.CompletedProcess(["allennlp", *args], returncode, output, output)

    def close(self) -> None:
        self._server.stdin.close()
        self._server.wait(timeout=60)
