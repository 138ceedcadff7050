# The README's two commands: `make demo` and `make test`; CI also runs `make lint docs floors package`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
TORCH  := torch==2.13.0
STAMP  := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev
REPORTSTAMP := $(VENV)/.installed-report
DOCSSTAMP := $(VENV)/.installed-docs
MINVENV  := .venv-min

.PHONY: demo test lint floors package venv clean bench docs

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# torch first and pinned, so nothing else can pull a CUDA build; the constraints file keeps
# extras with an unpinned torch (lenskit) from replacing it. The installed metadata records the
# version (src/recaudit/_version.py), so a new version reinstalls too.
PIN := $(VENV)/torch-constraint.txt
$(STAMP): pyproject.toml src/recaudit/_version.py | $(VENV)/bin/python
	$(PIP) install --quiet "$(TORCH)"
	echo "$(TORCH)" > $(PIN)
	$(PIP) install --quiet -c $(PIN) -e .
	touch $@

# rbo (the reference package the metric tests and benchmark compare against) pins numpy<2 in
# its metadata but runs on numpy 2; install it without its dependencies. recbole likewise, only
# for the ML-100k files its wheel carries (the registry resolves ml-100k from them offline).
$(DEVSTAMP): pyproject.toml $(STAMP)
	$(PIP) install --quiet "$(TORCH)"
	echo "$(TORCH)" > $(PIN)
	$(PIP) install --quiet -c $(PIN) -e ".[dev]"
	$(PIP) install --quiet --no-deps "rbo==0.1.3" "tqdm>=4.59" "recbole==1.2.1"
	touch $@

# An extra on top of the base install, one stamp each (remade when pyproject.toml changes):
# `make demo` needs the report extra (the README's example ends in `recaudit report`), `make
# docs` the docs extra; neither pulls the dev extra's backends (ray, lightfm, recbole, ...).
$(REPORTSTAMP): pyproject.toml $(STAMP)
	echo "$(TORCH)" > $(PIN)
	$(PIP) install --quiet -c $(PIN) -e ".[report]"
	touch $@

$(DOCSSTAMP): pyproject.toml $(STAMP)
	echo "$(TORCH)" > $(PIN)
	$(PIP) install --quiet -c $(PIN) -e ".[docs]"
	touch $@

venv: $(STAMP)

# One deleted training interaction vs retraining with another seed (the noise floor). Prefix
# samples in temporal batches, as in Oh et al. 2022: the deletion shifts every later batch.
demo: $(REPORTSTAMP)
	rm -rf results/demo.duckdb results/demo.duckdb.baselines
	$(VENV)/bin/recaudit audit --dataset synthetic --model gru4rec -p random-delete -p seed-only \
		--seeds 3 --workers 2 --param epochs=4 --param samples=prefix --param batch_order=temporal \
		--param max_len=10 --param embedding_dim=64 --param hidden_dim=64 --output results/demo.duckdb

# One pytest worker per core (pytest-xdist) and, beside them, the tests that start a Ray
# cluster, in a pytest of their own, one at a time (no two clusters competing for the cores and
# Ray's start-up timeouts, which those tests raise for a loaded machine); they live in
# tests/ray, so that run collects nothing else (tests/conftest.py refuses a test marked ray
# anywhere else). Ray's processes mostly wait on one another: run beside the others, they add
# 7 s to the suite where they took 33 s after it (measured 2026-12-08 on two cores). Their
# output follows the others'; either run failing fails the target.
test: $(DEVSTAMP)
	@mkdir -p build
	@$(PY) -m pytest -q -p no:cacheprovider -m ray tests/ray > build/ray-tests.log 2>&1 & ray=$$!; \
	$(PY) -m pytest -q -n auto -m "not ray"; rest=$$?; \
	wait $$ray; code=$$?; echo "--- the Ray tests (tests/ray), run beside the others:"; \
	cat build/ray-tests.log; [ $$rest -eq 0 ] && [ $$code -eq 0 ]

# The documentation site into build/docs (open build/docs/index.html): every warning is an
# error, and a command, option, configuration key, model parameter or store column without its
# documentation is a warning (docs/_ext/recaudit_reference.py). -E: read every page afresh.
docs: $(DOCSSTAMP)
	$(VENV)/bin/sphinx-build -E -W --keep-going -q -b html docs build/docs

# ruff, mypy (no error code switched off) and the import contracts of pyproject.toml
# ([tool.importlinter]: layers, private modules, no import cycles)
lint: $(DEVSTAMP)
	$(VENV)/bin/ruff check src tests benchmarks docs/checks .ci
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The declared dependency minimums (.ci/minimums.txt, exact pins) in a virtual environment of
# their own, torch first; the results-store and command-line tests run against them.
floors:
	$(PYTHON) -m venv $(MINVENV)
	$(MINVENV)/bin/python -m pip install --quiet "$(TORCH)"
	$(MINVENV)/bin/python -m pip install --quiet -c .ci/minimums.txt -e . "pytest>=8"
	$(MINVENV)/bin/python -m pytest -q -p no:cacheprovider tests/experiment tests/cli

# The package as a user installs it (.ci/package_check.py): the sdist and the wheel built from a
# copy of the checkout, their metadata and contents checked against pyproject.toml and src/, the
# wheel installed, torch first, into a fresh environment (under $TMPDIR, else /dev/shm) and run
# from outside the checkout: the default audit (one epoch), recaudit report, recaudit reproduce
# list. The two files land in dist/ once every check holds.
package: $(DEVSTAMP)
	$(PY) .ci/package_check.py --dist dist

bench: $(DEVSTAMP)
	$(PY) benchmarks/bench_similarity.py

clean:
	rm -rf $(VENV) $(MINVENV) build dist *.egg-info src/*.egg-info
