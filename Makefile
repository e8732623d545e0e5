# Two commands on a fresh clone: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where `make run` serves: `make run ADDR=127.0.0.1:8001` when 8000 is taken.
ADDR ?= 127.0.0.1:8000

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: its CPU wheel is local; letting pip pick one pulls CUDA.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --no-input
	$(PY) manage.py quickstart
	$(PY) manage.py ask "How quickly must a security incident be reported?" --workspace demo
	$(PY) manage.py serve $(ADDR)

test: $(STAMP)
	$(PY) -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

clean:
	rm -rf .verity
