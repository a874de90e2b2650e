# The two commands a newcomer runs: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
CURATOR_PORT ?= 8765

.PHONY: demo test venv browser java curator lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files so a second `make test` does not reinstall.
$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[demo]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

venv: $(VENV)/.installed-test

# The UI tests drive Debian's Chromium (Playwright never downloads a browser here), plus a
# font so that screenshots are legible on minimal images. DPW_CHROMIUM=/path/to/chromium
# points the tests at another binary and skips the install.
browser:
	@if [ -n "$$DPW_CHROMIUM" ]; then exit 0; fi; \
	command -v chromium >/dev/null 2>&1 && \
	  [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] && exit 0; \
	command -v apt-get >/dev/null 2>&1 || { \
	  echo "make browser: no apt-get; install Chromium and set DPW_CHROMIUM=/path/to/it" >&2; \
	  exit 1; }; \
	SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	$$SUDO apt-get update -qq && \
	  $$SUDO apt-get install -y -qq chromium fonts-dejavu-core >/dev/null

# The curator's Spark path runs in local mode in the tests: a Java runtime from Debian.
java:
	@command -v java >/dev/null 2>&1 && exit 0; \
	command -v apt-get >/dev/null 2>&1 || { \
	  echo "make java: no apt-get; install a Java 17+ runtime" >&2; exit 1; }; \
	SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	$$SUDO apt-get update -qq && \
	  $$SUDO apt-get install -y -qq default-jre-headless >/dev/null

# The lessons' own JupyterLab defaults (jupyter-config/lab/settings/overrides.json: no "Would you
# like to receive official Jupyter news?" popup, no update check) as its application settings.
demo: $(VENV)/.installed-demo
	@echo "Starting JupyterLab on notebooks/ -- open the http://127.0.0.1:$(PORT)/lab?token=... URL printed below."
	$(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --port=$(PORT) \
	  --ServerApp.root_dir=notebooks \
	  --LabApp.app_settings_dir="$(CURDIR)/jupyter-config/lab/settings" \
	  $$( [ "$$(id -u)" = 0 ] && echo --allow-root )

# A demo curator (a generated table with repeated people, its config and an analyst token, kept
# in curator-demo/): prints the line that connects a notebook. Your own: see the README.
curator: $(VENV)/.installed-demo
	$(BIN)/dpwidgets curator demo --dir curator-demo --port $(CURATOR_PORT)

test: $(VENV)/.installed-test browser java
	$(BIN)/python -m ruff check dpwidgets tests benchmarks
	bash scripts/postgres.sh >/dev/null
	DPW_POSTGRES_URL="$$(cat .cache/postgres.url)" $(BIN)/python -m pytest

# The throwaway PostgreSQL server the ledger's tests run on besides SQLite (`make test` starts
# it): scripts/postgres.sh installs Debian's postgresql if needed, starts the server or reuses
# the running one, and prints its URL (also in .cache/postgres.url). `scripts/postgres.sh stop`
# stops it.
.PHONY: postgres
postgres:
	@bash scripts/postgres.sh

# The documentation site (docs/: MyST pages, the lessons through myst-nb, the API reference by
# numpydoc), warnings as errors, into docs/_build/html. The lessons are executed; their outputs
# are cached in docs/_build/.jupyter_cache until a lesson's code changes.
# DPWIDGETS_DOCS_EXECUTE=off make docs skips executing them (a quick check of the prose and API).
# Only the lessons docs/conf.py lists (LESSONS: the committed notebooks) are built. RequireJS, the
# widget manager and MathJax ship inside the site (docs/offline_assets.py): the first build on a
# machine fetches them with npm (pinned versions and hashes) into .cache/docs-assets/.
.PHONY: docs
$(VENV)/.installed-docs: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $@

docs: $(VENV)/.installed-docs
	$(BIN)/sphinx-build -W --keep-going -b html -d docs/_build/doctrees docs docs/_build/html

lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check dpwidgets tests benchmarks

bench: $(VENV)/.installed-test
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
