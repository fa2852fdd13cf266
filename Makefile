# make demo: set up and run the main job; make test: set up and run every check.
# make docs: build the documentation site into site/ and print its prose figures.
# Both build .venv first; `make .venv` only builds the environment.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint typecheck pytest bench bench-quick clean sandbox docs docs-strict notebooks

# Submissions run in bubblewrap (Debian's bubblewrap): installed here when missing and
# we may (root); otherwise the demo's own example submissions run without it, said so.
NO_SANDBOX = $$(command -v bwrap >/dev/null 2>&1 || echo --unsafe-no-sandbox)

$(VENV): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)

sandbox:
	@command -v bwrap >/dev/null 2>&1 || [ "$$(id -u)" != 0 ] || \
		{ apt-get update -qq >/dev/null && apt-get install -y -qq bubblewrap >/dev/null; } || true
	@command -v bwrap >/dev/null 2>&1 || \
		echo "littlestone: no bubblewrap: the demo's own example submissions run unsandboxed"

demo: $(VENV) sandbox
	$(BIN)/littlestone ldim --class thresholds:n=1023
	mkdir -p littlestone-data
	$(BIN)/littlestone ldim --class monotone-disjunctions:n=6 --tree littlestone-data/tree.graphml
	$(BIN)/littlestone play --learner halving --adversary random-target \
		--class monotone-disjunctions:n=20 --rounds 2000 --seed 1
	$(BIN)/littlestone play --learner perceptron --adversary random-target \
		--class halfspaces:d=100,margin=0.1 --rounds 200000 --seed 1
	$(BIN)/littlestone play --game experts --learner halving --adversary random-target \
		--class thresholds:n=255 --rounds 1000 --json
	$(BIN)/littlestone check examples/minimal_learner.py:MajorityVote $(NO_SANDBOX)
	$(BIN)/littlestone tournament examples/tournament.toml $(NO_SANDBOX)

test: $(VENV) lint typecheck docs-strict pytest

lint: $(VENV)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: $(VENV)
	$(BIN)/mypy

# On every core, plus one worker (pytest-xdist; tests/conftest.py: some tests wait);
# tests of one xdist_group run on one worker.
# `.venv/bin/pytest -m "not slow" -n auto` is the quick run. The sources are compiled
# first, and the tests may keep their compiled files (in __pycache__, which git ignores),
# even where PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds of Python processes
# and sandboxes (which cannot write a cache), and each xdist worker rewrites every test
# module's asserts; each would compile the same files again. One collection first leaves
# the rewritten test modules in that cache: 2.4 CPU seconds a worker, on a fresh clone.
SOURCES := littlestone benchmarks tools tests

pytest: $(VENV)
	$(BIN)/python -m compileall -q -j 0 $(SOURCES) >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest --collect-only -q >/dev/null
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n auto --dist loadgroup

# The site builds offline (mkdocs.yml: no fonts or scripts from a CDN). Material's
# banner about MkDocs 2.0 is silenced. The prose figures are printed beside the targets.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs
PROSE := README.md benchmarks/README.md PROTOCOL.md SECURITY.md docs

docs: $(VENV)
	$(MKDOCS) build
	$(BIN)/python -m tools.prose $(PROSE)

# --strict: a broken link, anchor or cross-reference fails the build
docs-strict: $(VENV)
	$(MKDOCS) build --strict --quiet
	$(BIN)/python -m tools.prose $(PROSE)

# The notebooks of docs/ run in `make test` (tests/docs/test_notebooks.py: nbclient, a fresh
# kernel each, their text outputs compared); this executes them and writes their outputs.
notebooks: $(VENV)
	$(BIN)/python -m tests.docs.test_notebooks

bench: $(VENV)
	$(BIN)/python -m benchmarks.run

# every bench at a small size, the soak at 50 peers among them: so that none can rot
bench-quick: $(VENV)
	$(BIN)/python -m benchmarks.run --quick

clean:
	rm -rf $(VENV) site littlestone-data .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist *.egg-info
