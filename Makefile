# The two commands: `make run` (embedded defaults; it ends by printing the chat and admin addresses)
# and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
PYTEST_ARGS ?=

.PHONY: install run test lint bench worker

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_demo
	$(BIN)/python manage.py serve 127.0.0.1:8000

# pytest exits 5 when it collected nothing: that is a failure here, never a silent pass.
test: install lint
	$(BIN)/python manage.py makemigrations --check --dry-run --settings=config.test_settings >/dev/null
	$(BIN)/python -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing the run"; exit 1; fi; exit $$rc

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

worker: install
	$(BIN)/celery -A config worker -l info

$(BENCH_STAMP): pyproject.toml $(STAMP)
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m bench.run
