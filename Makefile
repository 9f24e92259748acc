# Two commands: `make run` (set up, then the main job on the bundled data) and `make test`.
# The virtual environment is made once, and again when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ecc_lib-installed
# CPU build of torch first, so that sentence-transformers does not pull a multi-GB CUDA build.
# Elsewhere, add your CPU wheel index, e.g. TORCH_PIP_ARGS="--index-url <PyTorch CPU wheel index>".
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
RUN_ARGS ?=
PYTEST_ARGS ?=

.PHONY: install run test test-all lint format data embeddings benchmarks wheel clean report-check

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ecc_lib)" >/dev/null
	touch $(STAMP)

run: install
	$(BIN)/ecc-lab run $(RUN_ARGS)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-all: install
	$(BIN)/python -m pytest -m "slow or not slow" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Rebuild the bundled data and its embedding cache from the originals (needs ../shared/data).
data: install
	$(BIN)/python scripts/build_bundled_data.py
embeddings: install
	$(BIN)/python scripts/build_embedding_cache.py

benchmarks: install
	$(BIN)/python benchmarks/ecc_speed.py
	$(BIN)/python benchmarks/dars_speed.py

# Render RUN's report.html in headless Chromium (Debian's package, installed when missing) and write
# full-page screenshots under RUN/screenshots/: make report-check RUN=runs/NAME
REPORT_PY = $(if $(wildcard $(BIN)/python),$(BIN)/python,$(PYTHON))
report-check:
	@test -n "$(RUN)" || { echo "usage: make report-check RUN=runs/NAME"; exit 2; }
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		$$SUDO apt-get update && $$SUDO apt-get install -y chromium; }
	$(REPORT_PY) scripts/report_check.py $(RUN)

# The wheel and sdist carry notebooks/ and data/ (copied into ecc_lib/_bundle by setup.py).
wheel: install
	$(BIN)/python -m pip wheel . --no-deps --no-build-isolation -w dist
	$(BIN)/python -m pip install --quiet "build>=1.0"
	$(BIN)/python -m build --sdist --no-isolation --outdir dist .

clean:
	rm -rf $(VENV) build dist .cache .pytest_cache .ruff_cache .hypothesis
