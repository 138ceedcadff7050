# The README's two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
TORCH  := torch==2.13.0
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test venv clean bench

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first and pinned, so nothing else can pull a CUDA build.
$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PIP) install --quiet "$(TORCH)"
	$(PIP) install --quiet -e .
	touch $@

$(DEVSTAMP): pyproject.toml $(STAMP)
	$(PIP) install --quiet "$(TORCH)"
	$(PIP) install --quiet -e ".[dev]"
	touch $@

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/recaudit audit --dataset synthetic --model gru4rec --perturbation random-delete --seeds 3

test: $(DEVSTAMP)
	$(PY) -m pytest -q

bench: $(DEVSTAMP)
	$(PY) benchmarks/bench_similarity.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
