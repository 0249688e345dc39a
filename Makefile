# The two commands: `make run` (embedded defaults; it ends by printing the chat and admin addresses)
# and `make test`. `make check` is the quick loop (under a minute); docs/testing.md says what runs where.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two install stamps: running needs only the main dependencies (`uv pip install -e .`); the test tools
# (pytest, Playwright, moto, hypothesis, ruff...) are the `dev` extra, installed by `make test`.
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
PYTEST_ARGS ?=
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-run run run-local install-local-model check test test-engine test-django \
	test-processes test-browser test-services test-services-suite test-services-processes lint lint-ruff \
	lint-types bench worker

# uv installs (pip fetches only uv itself): a fresh virtual environment with the dev extra took pip
# about 100 s from its cache, uv 30 s (docs/testing.md). uv reads pyproject.toml's pins as pip does.
# Bytecode compiled at install, as pip does: left to the first imports, the first run of the process
# tests took 16 s longer (each new interpreter compiled what it imported).
UV_VERSION := 0.13.9
UV_INSTALL := $(BIN)/uv pip install -q --compile-bytecode --python $(BIN)/python
$(BIN)/uv:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check uv==$(UV_VERSION)

$(RUN_STAMP): pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(BIN)/uv
	$(UV_INSTALL) -e '.[dev]'
	touch $(STAMP) $(RUN_STAMP)

install-run: $(RUN_STAMP)

install: $(STAMP)

# One Python start-up: serve --prepare migrates and seeds the demo before it listens; no autoreloader
# (it would start everything twice). Developers who want reloading run `manage.py serve` themselves.
run: install-run
	$(BIN)/python manage.py serve --prepare --noreload $(HOST):$(PORT)

# A real model beside the app (issue 31): llama.cpp serving the packaged SmolLM2-135M. The first install
# builds llama-cpp-python from source (about 7 minutes on 2 cores); pip caches the wheel afterwards. pip,
# not uv, here: pip keys the wheel it built by the source archive's address and hash; uv keeps it under
# a revision of its download, and in CI it downloaded the archive again and built it again (358 s).
# A portable build (AVX2, no -march=native): llama.cpp 0.3.36 built natively on an AVX-512 machine here
# crashed (SIGSEGV) on any prompt longer than one token; the AVX2 build answers.
LOCAL_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF
LOCAL_STAMP := $(VENV)/.installed-local-model
$(LOCAL_STAMP): pyproject.toml $(STAMP)
	CMAKE_ARGS="$(LOCAL_CMAKE_ARGS)" $(BIN)/pip install -q -e '.[dev,local-model]'
	touch $(LOCAL_STAMP)

install-local-model: $(LOCAL_STAMP)

run-local: install-local-model
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py serve_local $(HOST):$(PORT)

# pytest exits 5 when it collected nothing: that is a failure here, never a silent pass.
PYTEST_NO_TESTS = rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing the run"; exit 1; fi; exit $$rc
PYTEST := $(BIN)/python -m pytest
# Two xdist workers where it pays on two cores (each worker has its own test database, server, files).
XDIST ?= -n 2
# Three for the Django suite: its tests wait on run threads and sleeps for part of their time, and two
# workers kept 1.3-1.5 cores busy; a third fills them (165 s -> 138 s, docs/testing.md).
DJANGO_XDIST ?= -n 3
# The folders the Django suite leaves to a tier of their own.
TIERED := --ignore=tests/context_engine --ignore=tests/architecture --ignore=tests/processes --ignore=tests/e2e
# CI's second pass: what behaves differently on PostgreSQL and Redis (docs/testing.md).
SERVICES := postgres or redis or local_model or services

# The quick loop: ruff, then mypy (the engine strict) beside the context engine's tests with pytest-django
# off and no settings module (the engine is pure: nothing there may need Django) and the architecture
# tests. mypy uses one core, so it runs beside the tests (each one's output is printed when it ends).
check: lint-ruff
	$(MAKE) --no-print-directory -j2 --output-sync=target lint-types test-engine

test-engine: install
	env -u DJANGO_SETTINGS_MODULE $(PYTEST) -p no:django -W "ignore:Unknown config option" -q -n 2 \
	  tests/context_engine tests/architecture; $(PYTEST_NO_TESTS)

# Everything a fresh clone can run: the quick loop, the Django suite on SQLite, the tests that start
# processes, and the browser tests (skipped without Chromium; E2E_MATRIX picks the matrix).
test: check test-django test-processes test-browser

test-django: install
	$(BIN)/python manage.py makemigrations --check --dry-run --settings=config.test_settings >/dev/null
	$(PYTEST) $(DJANGO_XDIST) -q $(TIERED) $(PYTEST_ARGS); $(PYTEST_NO_TESTS)

# One test at a time: a worker or a server started beside a busy neighbour misses its time limits.
test-processes: install
	$(PYTEST) -q tests/processes $(PYTEST_ARGS); $(PYTEST_NO_TESTS)

# Two workers, each with its own server and Chromium: a browser test mostly waits.
test-browser: install
	$(PYTEST) $(XDIST) -q tests/e2e $(PYTEST_ARGS); $(PYTEST_NO_TESTS)

# CI's second pass (with DATABASE_URL, REDIS_URL and REQUIRE_SERVICES=1 set by .ci/run): the marked
# tests, then those that start processes (two workers, below); the local model's page is a browser test.
test-services: test-services-suite test-services-processes

test-services-suite: install
	$(PYTEST) $(XDIST) -q -m "$(SERVICES)" --ignore=tests/processes $(PYTEST_ARGS); $(PYTEST_NO_TESTS)

# Two workers: the llama.cpp server's tests (one xdist group, tests/processes/conftest.py) keep one worker
# and one core busy for minutes; the other tests are spread over both workers around that group.
test-services-processes: install
	$(PYTEST) -n 2 --dist loadgroup -q -m "$(SERVICES)" tests/processes $(PYTEST_ARGS); $(PYTEST_NO_TESTS)

# mypy reads pyproject.toml: context_engine under --strict's flags, the apps with django-stubs. One run:
# a second with other flags (`mypy --strict context_engine`, which reports the same engine errors) would
# invalidate the cache of the first, and each would take a minute instead of seconds.
# tests/architecture/test_type_checking.py holds the engine's section to every flag --strict enables.
lint: lint-ruff lint-types

lint-ruff: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lint-types: install
	$(BIN)/mypy

worker: install-run
	$(BIN)/celery -A config worker -l info

$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(UV_INSTALL) -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run
