# Faux-MAGNUM teaching kit. Two commands for a workshop participant:
#   make lab    set up .venv (first time only) and start JupyterLab on a working copy of notebooks/
#   make test   set up .venv (first time only) and run every test
# After editing a .pyx file: `make build`, then restart the notebook kernel.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
STAMP  := $(VENV)/.installed
PORT   ?= 8888
BUILD_LOG := build/build.log
# The student's working copy of the notebooks (`make lab`); gitignored.
LAB_DIR ?= faux-magnum-notebooks

.PHONY: hub-proxy hub-test nocompiler-check wheel-check-all bench-kernel-memory lab test test-debug build-debug lint build venv unit unit-python notebooks browser chromium bench wheel-check reset clean help

help:
	@echo "make lab     - install (first time), copy notebooks/ to $(LAB_DIR)/ and start JupyterLab there (127.0.0.1)"
	@echo "make test    - install (first time) and run the whole suite (both backends, nbval, browser)"
	@echo "make build   - recompile the Cython extensions after editing a .pyx (then restart the kernel)"
	@echo "make test-debug - build with bounds checks on in build/debug, run the kernels' tests there"
	@echo "make lint    - ruff and cython-lint (the first step of CI)"
	@echo "make bench   - run the benchmarks in benchmarks/ (JSON to stdout)"
	@echo "make wheel-check - build the wheel, install it in a fresh venv, run the README's commands"
	@echo "make reset   - restore the notebooks to their committed state (your edits are lost)"
	@echo "make hub-test - the classroom server (deploy/) with three seats in Chromium (root; see deploy/README.md)"
	@echo "make nocompiler-check - every notebook under nbval on a wheel built without a C compiler (long)"
	@echo "make wheel-check-all - wheel-check, then the no-compiler wheel with every notebook, in one fresh venv"

venv: $(STAMP)

# Build requirements first, because the editable install skips build isolation
# (so a rebuild uses the same numpy/Cython as the running kernel). The editable install
# only links the source tree (MAGNUM_NO_EXTENSIONS=1): `make build` is the one compile.
$(STAMP): pyproject.toml setup.py
	@echo "setting up $(VENV) (first time only: installing the packages takes a few minutes, then"
	@echo "  compiling the Cython extensions several more; pip log: $(VENV)/install.log)"
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@{ $(PIP) install -q --upgrade pip && \
	   $(PIP) install -q "setuptools>=77" wheel "Cython>=3.0" "numpy>=1.26" && \
	   MAGNUM_NO_EXTENSIONS=1 $(PIP) install -q --no-build-isolation -e ".[sweep,lab,test,hub]"; \
	 } > $(VENV)/install.log 2>&1 || { cat $(VENV)/install.log; exit 1; }
	@touch $(STAMP)

# Quiet unless it fails: the compiler's output goes to $(BUILD_LOG), printed on failure;
# only setup.py's own lines show (that compiling takes minutes, then "[3/16] compiling
# magnum_lib.node._dispatcher" per module). Without a working compiler setup.py says so in
# one line and the pure-Python backend runs (MAGNUM_REQUIRE_COMPILED=1 makes that an error).
# Incremental: setup.py runs only when a .pyx/.pxd (or setup.py) is newer than the last
# build, and then recompiles only the modules that changed. The debug build (bounds
# checks on) lives apart in build/debug: see test-debug.
CYTHON_SOURCES := $(shell find src/magnum_lib -name '*.pyx' -o -name '*.pxd' -o -name '*.pxi')
BUILT := build/.built-release

build: $(BUILT)
	@$(PY) -c "import magnum_lib; print('magnum_lib backend:', magnum_lib.backend())"

$(BUILT): $(STAMP) setup.py $(CYTHON_SOURCES)
	@mkdir -p build
	@rm -f $(BUILT)
	@{ env -u MAGNUM_CYTHON_DEBUG $(PY) setup.py build_ext --inplace 2>&1; echo $$? > build/.build-status; } | \
		tee $(BUILD_LOG) | { grep --line-buffered '^magnum-build:' || true; }
	@test "$$(cat build/.build-status)" = 0 || \
		{ cat $(BUILD_LOG); echo "make build: compiling failed (log above, kept in $(BUILD_LOG))"; exit 1; }
	@touch $@

# A thin wrapper of `faux-magnum lab` (magnum_lib/commands/lab.py): it copies notebooks/
# into $(LAB_DIR), your working copy (your edits stay; the committed notebooks stay clean),
# writes the kit's JupyterLab settings (lab-settings/overrides.json: no news, no update
# check) and starts JupyterLab there on 127.0.0.1 with a token (--allow-root as root).
# `make lab LAB_DIR=notebooks` serves the committed notebooks themselves (for authors).
lab: build
	$(VENV)/bin/faux-magnum lab $(LAB_DIR) --port $(PORT) --no-browser

# Debian's chromium for the browser tests: installed with apt when we are root and it
# is missing; otherwise the browser tests skip with a one-line reason.
chromium:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "installing chromium with apt-get"; \
		(apt-get install -y -q chromium >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null)) \
		|| echo "chromium install failed; browser tests will skip"; \
	fi

# Both cores by default (pytest-xdist); `make unit XDIST=` runs in one process.
XDIST  ?= -n 2
PYTEST := $(PY) -m pytest -q -p no:cacheprovider

unit: build
	MAGNUM_REQUIRE_COMPILED=1 $(PYTEST) $(XDIST) tests --ignore=tests/browser

# The pure-Python backend needs no compile. Tests marked `kernel` (they compare a
# compiled kernel with its reference, or need the compiled backend) ran in `unit`, and
# the CLI fuzz tests the parser, which is the same on both backends (tests/conftest.py
# applies both markers). Test modules marked `once` (pytestmark, with the reason) have a
# subject that does not depend on the backend (the presets' behaviour, which
# tests/test_sim_core.py pins to the reference preset by preset; the exercise harness;
# packaging, style, the guide): they ran in `unit`.
unit-python: venv
	MAGNUM_PUREPYTHON=1 $(PYTEST) $(XDIST) -m "not kernel and not cli_fuzz and not once" tests --ignore=tests/browser

# Notebooks that replay the real public traces (../shared/data, or $MAGNUM_SHARED_DATA):
# without the traces nbval leaves them out and says so; MAGNUM_REQUIRE_TRACES=1 makes that
# an error. (The unit and browser tests that need them skip the same way: tests/conftest.py.)
TRACE_NOTEBOOKS := 10_policy_arena.ipynb
# Both cores, one notebook per worker (--dist loadfile keeps a notebook's cells in order,
# in one kernel); `make notebooks NB_XDIST=` runs them one after another.
NB_XDIST ?= $(if $(XDIST),$(XDIST) --dist loadfile,)

notebooks: build
	@cd notebooks && { missing=$$(../$(PY) ../scripts/traces_found.py); found=$$?; }; \
	ignore=""; \
	if [ $$found = 3 ]; then \
		if [ "$${MAGNUM_REQUIRE_TRACES:-0}" != 0 ]; then \
			echo "make notebooks: $$missing; MAGNUM_REQUIRE_TRACES=1 demands them"; exit 1; fi; \
		echo "make notebooks: SKIPPING $(TRACE_NOTEBOOKS): $$missing"; \
		ignore="$(addprefix --ignore=,$(TRACE_NOTEBOOKS))"; \
	elif [ $$found != 0 ]; then exit $$found; fi; \
	echo "cd notebooks && MAGNUM_NB_SOLUTIONS=1 pytest $(NB_XDIST) --nbval-lax --nbval-current-env . $$ignore"; \
	MAGNUM_NB_SOLUTIONS=1 ../$(PY) -m pytest -q -p no:cacheprovider $(NB_XDIST) \
		--nbval-lax --nbval-current-env $$ignore .

# Each browser test starts its own JupyterLab (own port, folders and settings), so two run
# at once; the classroom-hub test needs the proxy (make hub-proxy). One file per worker
# (--dist loadfile): the hub test's module starts one hub, whose proxy API has one port.
browser: build chromium hub-proxy
	$(PY) -m pytest -q -p no:cacheprovider $(NB_XDIST) tests/browser

test: build chromium
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory unit && \
	$(MAKE) --no-print-directory unit-python && \
	$(MAKE) --no-print-directory notebooks && \
	$(MAKE) --no-print-directory browser; \
	status=$$?; echo "make test: $$(( $$(date +%s) - start )) s, exit $$status"; exit $$status

# The compiled kernels trust their inputs (boundscheck/wraparound off). The debug build
# turns the checks back on (MAGNUM_CYTHON_DEBUG=1) in a folder of its own, build/debug/lib
# (the whole package: Python files and debug extensions), and runs there every test marked
# `kernel` (applied automatically by tests/conftest.py to any test that imports a compiled
# module or asks for backend="compiled"). The release build in src/ is not touched.
DEBUG_LIB := $(CURDIR)/build/debug/lib

build-debug: $(STAMP)
	@mkdir -p build/debug
	@MAGNUM_CYTHON_DEBUG=1 MAGNUM_REQUIRE_COMPILED=1 $(PY) setup.py build --build-base build/debug --build-lib $(DEBUG_LIB) \
		> build/debug/build.log 2>&1 || \
		{ cat build/debug/build.log; echo "make build-debug: compiling failed (log: build/debug/build.log)"; exit 1; }

test-debug: build-debug
	@PYTHONPATH=$(DEBUG_LIB) $(PY) -c "import magnum_lib, sys; \
		sys.exit(0 if '$(DEBUG_LIB)' in magnum_lib.__file__ else 'test-debug: imported ' + magnum_lib.__file__)"
	PYTHONPATH=$(DEBUG_LIB) MAGNUM_REQUIRE_COMPILED=1 MAGNUM_DEBUG_BUILD=build/debug $(PYTEST) $(XDIST) \
		-W error::pytest.PytestUnraisableExceptionWarning -m "kernel and not cli_fuzz and not speed" tests --ignore=tests/browser

# Static checks, seconds: ruff (Python; pyproject.toml [tool.ruff]) and cython-lint (.pyx/.pxd).
lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks scripts
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" cython-lint src

bench: build
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# A normal (non-editable) install: build the wheel, install it in a fresh venv, run every
# command of the README's "The command line" block from a directory outside the checkout.
wheel-check: $(STAMP)
	$(PY) scripts/check_wheel.py

# The classroom server's proxy (deploy/jupyterhub_config.py finds it here): the npm package
# configurable-http-proxy, installed into build/hub-proxy, never globally. Without npm the
# hub test skips (one line) and the rest of the browser tests run.
HUB_PROXY := build/hub-proxy/node_modules/.bin/configurable-http-proxy

hub-proxy:
	@if [ -x $(HUB_PROXY) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
		echo "installing configurable-http-proxy into build/hub-proxy (npm)"; \
		npm install --silent --no-audit --no-fund --prefix build/hub-proxy configurable-http-proxy@4 >/dev/null || \
		echo "npm install configurable-http-proxy failed: the hub test will skip"; \
	else echo "npm not found: the hub test will skip (apt-get install npm)"; fi

# The classroom server with three real seats in Chromium (needs root: each seat is a system
# user, created by the hub and removed afterwards). Part of `make browser`; alone:
hub-test: build chromium hub-proxy
	$(PY) -m pytest -q -p no:cacheprovider tests/browser/test_hub.py

# Every notebook under nbval on a wheel built with no C compiler (the pure-Python backend),
# installed in a fresh venv that borrows this venv's packages (--reuse-deps: quick, but blind
# to an undeclared dependency); prints each notebook's wall and CPU time, two at a time.
# Measured 2026-12-06: 324 s of CPU for the 12 notebooks (08 the most, 161 s), 987 s wall one
# at a time on 2 cores shared with other jobs.
nocompiler-check: $(STAMP)
	$(PY) scripts/check_wheel.py --no-compiler --notebooks --notebook-jobs 2 --reuse-deps

# Both installs in one fresh venv, its dependencies from the index (for CI): the compiled
# wheel as wheel-check does, then the wheel built with no C compiler reinstalled over it,
# with the README's commands again and every notebook under nbval, two at a time. The venv
# and the dependencies are installed once for both.
wheel-check-all: $(STAMP)
	@tmp=$$(mktemp -d); \
	$(PY) scripts/check_wheel.py --venv $$tmp/venv && \
	$(PY) scripts/check_wheel.py --venv $$tmp/venv --no-compiler --notebooks --notebook-jobs 2; \
	status=$$?; rm -rf $$tmp; exit $$status

# Each notebook's kernel peak RSS after a full run (JSON), for deploy/README.md's sizing.
bench-kernel-memory: build
	$(PY) benchmarks/bench_kernel_memory.py

# Restore notebooks/ to the committed state (a learner's edits and outputs are lost).
reset:
	sh scripts/reset_notebooks.sh

clean:
	rm -rf build *.egg-info test-artifacts
	find src/magnum_lib \( -name '*.so' -o -name '*.c' -o -name '*.html' \) -delete
