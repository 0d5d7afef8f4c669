# Two commands on a fresh machine:
#   make run     create the environment and start a node on 127.0.0.1:7711
#   make test    create the environment and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# trisque itself (enough to run nodes); then the test and spark extras
STAMP   = $(VENV)/.installed
DEV     = $(VENV)/.installed-dev

.PHONY: run cluster test bench pipeline-example docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(STAMP)

$(DEV): $(STAMP)
	$(BIN)/pip install -q -e '.[test,spark]'  # spark: pyspark sdist, ~70 s once, then pip's cache
	touch $(DEV)

run: $(STAMP)
	$(BIN)/trisque-server $(ARGS)

cluster: $(STAMP)
	$(BIN)/python -m deploy.local_cluster $(ARGS)

test: $(DEV)
	$(BIN)/ruff check --quiet .  # lint first: seconds, and a clear failure
	$(BIN)/mypy  # [tool.mypy] in pyproject.toml: a type error fails the tests
	$(BIN)/python -m pytest -q $(ARGS)

bench: $(DEV)
	$(BIN)/python -m bench $(ARGS)

# The Spark example (pipeline/examples/), against a running `make cluster`.
pipeline-example: $(DEV)
	$(BIN)/python trisque/pipeline/examples/tasks_pipeline.py $(ARGS)

# The configuration reference (docs/configuration.md) from server/core/config.py.
docs: $(STAMP)
	$(BIN)/python -m trisque.server.core.config_reference

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache
