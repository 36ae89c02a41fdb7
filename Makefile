# Two commands do all the set-up (each creates the venv first if it is missing):
#   make demo   train the LD-Net NER tagger on the bundled fixtures, then tag a raw sentence
#   make test   lint + the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: venv demo test lint format lock clean-venv gpu-check

venv: $(VENV)/.installed

# The lock holds the whole dependency closure at exact versions; --no-deps because allennlp's
# own metadata (torch<1.13) cannot be resolved on Python 3.11 (see docs/install.md).
$(VENV)/.installed: requirements/lock.txt setup.cfg
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q "pip<25"
	$(BIN)/python -m pip install -q --no-deps -r requirements/lock.txt
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $@

demo: venv
	bash scripts/demo.sh

lint: venv
	$(BIN)/black --check -q ldnet_allennlp ldnet_runtime tests benchmarks scripts
	$(BIN)/ruff check -q ldnet_allennlp ldnet_runtime tests benchmarks scripts

format: venv
	$(BIN)/black -q ldnet_allennlp ldnet_runtime tests benchmarks scripts

test: venv lint
	$(BIN)/pytest -q -p no:cacheprovider tests

# Every training path, the NER epoch and a profiled step on a CUDA GPU -> benchmarks/results/gpu.json
# (docs/training.md, "On a GPU"). On a machine with torch but no AllenNLP, point GPU_PYTHON at a
# Python that sees the bundle of scripts/bundle_dependencies.py, e.g.
#   make gpu-check GPU_PYTHON="env PYTHONPATH=bundle/site-packages:. python3"
GPU_PYTHON ?= $(BIN)/python
gpu-check:
	$(GPU_PYTHON) -m benchmarks gpu --device cuda

lock:
	bash scripts/lock.sh

clean-venv:
	rm -rf $(VENV)
