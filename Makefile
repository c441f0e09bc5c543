# Two commands for a fresh machine:
#   make lab    create .venv if missing, install the course, open JupyterLab on 127.0.0.1 (token auth on)
#   make test   the same install plus test tools, then the whole suite (unit tests, nbval, browser tests): what CI runs
# Faster tiers for a contributor's loop (README "Running the tests"):
#   make test-fast               library and unit tests: no notebook execution, no browser, no hub (under a minute)
#   make test-notebook NB=04     every test about one notebook: its cells, its exercise, its bank, its pages
#   make slides the notebooks as offline HTML slide decks in slides/
#   make site   the whole course as an offline website in site/ (open site/index.html)
# torch: TORCH=auto (default) installs the CPU build on Linux without an NVIDIA GPU, the default build elsewhere;
# TORCH=cpu or TORCH=default forces one (see course_lib/tools/setup/install_torch.py).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
TORCH  ?= auto
# Python caches compiled modules (__pycache__/, gitignored) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1, as some containers set): course_lib and pytest's rewritten test modules are then compiled
# once, not again in every kernel, subprocess and test process (make test-fast: 59 s cold, 48 s warm, on 2 cores).
export PYTHONDONTWRITEBYTECODE :=
# JupyterLab refuses to run as root unless told to (containers, CI); an ordinary user never needs it.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: install install-dev lab test test-fast test-notebook lint format doctor slides site benchmark clean-venv hub-proxy

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.course-installed: requirements.txt pyproject.toml | $(BIN)/python
	$(BIN)/python course_lib/tools/setup/install_torch.py --torch=$(TORCH)
	$(BIN)/python -m pip install -r requirements.txt -e .
	touch $@

$(VENV)/.dev-installed: $(VENV)/.course-installed requirements-dev.txt
	$(BIN)/python -m pip install -r requirements-dev.txt
	touch $@

install: $(VENV)/.course-installed

install-dev: $(VENV)/.dev-installed

doctor: install
	$(BIN)/python -m course_lib doctor

lab: install
	$(BIN)/python -m course_lib doctor
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.port=$(PORT) --ServerApp.root_dir=$(CURDIR) $(ROOT_FLAG)

# The suite runs with the network switched off (a network namespace with only loopback up) wherever this machine
# allows one, which proves nothing downloads at run time; elsewhere it runs as is.
OFFLINE := $(shell if unshare --net true 2>/dev/null; then echo "unshare --net"; \
	elif unshare --map-root-user --net true 2>/dev/null; then echo "unshare --map-root-user --net"; fi)
OFFLINE_RUN := $(if $(OFFLINE),$(OFFLINE) sh -c 'ip link set lo up && COURSE_OFFLINE=1 exec "$$0" "$$@"',)

# configurable-http-proxy (npm) for the hub test and deploy/: installed from deploy/package-lock.json.
HUB_PROXY := deploy/node_modules/.bin/configurable-http-proxy
$(HUB_PROXY): deploy/package.json deploy/package-lock.json
	cd deploy && npm ci --no-audit --no-fund --loglevel=error
	touch $@
hub-proxy: $(HUB_PROXY)

# The suite runs on two processes (pytest-xdist): each test module and each notebook (its cells share one kernel, in
# order) goes whole to one of them. PARALLEL= runs it on one.
PARALLEL ?= -n 2 --dist loadfile --no-loadscope-reorder

# Where npm exists, `make test` installs the proxy first (the hub test needs it; it fails in CI without it).
test: install-dev $(if $(shell command -v npm 2>/dev/null),$(HUB_PROXY),)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(OFFLINE_RUN) $(BIN)/python -m pytest $(PARALLEL) $(PYTEST_ARGS)

# The library and unit tests: no notebook executes, no browser, no hub, no sandboxed grading, no site build; those
# (and every test marked slow) are left to `make test`.
FAST_SKIP := --ignore=tests/browser --ignore=tests/test_grading_sandbox.py --ignore=tests/test_site.py \
	--ignore=tests/test_make_lab.py --ignore=tests/test_hub.py \
	--deselect=tests/test_exercise_tooling.py::test_grading_survives_crashing_and_hanging_submissions
# It runs on two processes too (FAST_PARALLEL= runs it on one), test by test (no module holds a shared kernel), except
# a module marked with an xdist_group, whose costly module fixtures are then built on one process only.
FAST_PARALLEL ?= -n 2 --dist loadgroup
test-fast: install-dev
	$(BIN)/python -m pytest tests $(FAST_SKIP) -m "not slow and not browser and not hub" -q $(FAST_PARALLEL) $(PYTEST_ARGS)

# Every test about one notebook (NB=04), as the full suite runs it: its cells and its exercise solution's under nbval,
# its quiz bank checked, and every test whose parameters or module name name it (test_reading_budget.py[04],
# test_site_browser.py[.../04_positional_encoding.html], test_figures_03_04.py, ...): tests/conftest.py's --notebook
# option picks them from the whole suite, by the notebook's number, file, exercise and bank in course_lib/_syllabus.py.
NB_BANK = $(shell $(BIN)/python -c "from course_lib._syllabus import COURSE; print({n.number: n for n in COURSE}['$(NB)'].quiz or '')" 2>/dev/null)
test-notebook: install-dev
	@test -n "$(NB)" || { echo "usage: make test-notebook NB=04"; exit 2; }
	@$(BIN)/python -c "from course_lib._syllabus import COURSE; assert '$(NB)' in {n.number for n in COURSE}" 2>/dev/null \
		|| { echo "NB=$(NB) is not a notebook of course_lib/_syllabus.py"; exit 2; }
	$(if $(NB_BANK),$(BIN)/python -m course_lib quiz check $(NB_BANK))
	$(BIN)/python -m pytest -q --notebook $(NB) $(PYTEST_ARGS)

# One lint and one format for the code and the notebooks (ruff reads .ipynb natively); settings in pyproject.toml
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# One offline reveal.js deck per notebook in slides/ (reveal.js and MathJax copied into slides/_static/)
slides: install
	$(BIN)/python -m course_lib slides export

# The course as an offline website in site/: every notebook with its outputs, the exercises, the guides
site: install
	$(BIN)/python -m course_lib site

benchmark: install-dev
	$(BIN)/python benchmarks/run_course.py

clean-venv:
	rm -rf $(VENV)
