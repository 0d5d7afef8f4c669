# Two commands on a fresh machine:
#   make run     create the environment and start a node on 127.0.0.1:7711
#   make test    create the environment and run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
# trisque itself (enough to run nodes); then the test, frameworks and spark extras
STAMP   = $(VENV)/.installed
DEV     = $(VENV)/.installed-dev
# What the install depends on: pyproject.toml without the settings of the
# tools make test runs (mypy's strict list, ruff, pytest), so editing those
# installs nothing again.  Rewritten only when it changes, and dated as
# pyproject.toml (a first one beside an up-to-date venv installs nothing).
SPEC    = $(VENV)/.install-spec
# The core setup.py compiles with mypyc (its COMPILED list): built again
# when one changes, since an editable install's compiled modules shadow them.
CORE   := $(shell sed -n 's/^    "\(trisque\/[a-z_/]*\.py\)",$$/\1/p' setup.py)
BUILT   = $(VENV)/.built-core

.PHONY: run cluster test test-pure campaigns bench pipeline-example docs redis-suite clean

$(SPEC): FORCE
	@mkdir -p $(VENV)
	@awk '/^\[/ { tool = /^\[\[?tool\.(mypy|ruff|pytest)/ } !tool' pyproject.toml > $@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; touch -r pyproject.toml $@; fi
FORCE:

# A venv with trisque installed (editable) and the given extras
install = $(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q --upgrade pip && $(BIN)/pip install -q -e

$(STAMP): $(SPEC)
	$(install) .
	touch $(STAMP)

# Not after $(STAMP): one install with the extras compiles the core once
$(DEV): $(SPEC)
	$(install) '.[test,frameworks,spark]'  # spark: pyspark sdist, ~70 s once, then pip's cache
	touch $(STAMP) $(DEV) $(BUILT)  # (that install compiled the core)

# An edited core module (or setup.py's list of them): compiled again in
# place, with the test extra's mypy
$(BUILT): $(CORE) trisque/core/keyspace/lua_call.c trisque/shell/fdio.c setup.py | $(DEV)
	$(BIN)/python setup.py -q build_ext --inplace
	touch $(BUILT)

run: $(STAMP)
	$(BIN)/trisque-server $(ARGS)

cluster: $(STAMP)
	$(BIN)/python -m deploy.local_cluster $(ARGS)

# pytest-xdist workers: the suite mostly waits on servers, so two share 2
# cores well; as many as the cores on a bigger machine, at most 4
# (WORKERS=0: one process).  A test module, or a group of them that needs
# something alone, is a unit of work: RUN_ALONE in tests/conftest.py.
# A test marked solo measures a rate against its own: it runs after the
# workers, with no other test beside it.
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 2 ] && n=2; [ $$n -gt 4 ] && n=4; echo $$n)
XDIST    = -n $(WORKERS) --dist loadgroup

test: $(DEV) $(BUILT)
	$(BIN)/ruff check --quiet .  # lint first: seconds, and a clear failure
	$(BIN)/mypy  # [tool.mypy] in pyproject.toml: a type error fails the tests
	$(BIN)/python -m pytest -q $(XDIST) $(if $(ARGS),$(ARGS),-m 'not solo')
	$(if $(ARGS),,$(BIN)/python -m pytest -q -m solo)
	$(if $(ARGS),,$(MAKE) test-pure)  # the whole suite: the interpreted form too (~40 s)

# The same sources interpreted (what a machine without a C compiler runs):
# the core's unit tests and the simulator from a copy without the compiled
# modules (the current directory comes first on sys.path).
test-pure: $(DEV)
	rm -rf build/pure && mkdir -p build/pure
	tar -c --exclude='*.so' --exclude=__pycache__ trisque tests bench docs pyproject.toml | tar -x -C build/pure
	cd build/pure && ../../$(BIN)/python -c 'from trisque.core.admin.build_form import \
		build_form as f; assert f() == "interpreted", f()'
	cd build/pure && ../../$(BIN)/python -m pytest -q -p no:cacheprovider $(XDIST) tests/unit tests/sim

# The long campaigns in full (docs/testing.md): every seed of the
# differential tests against redis-server and of the simulator's CI share,
# the fuzz tests at 150 examples.  make test runs a share of each.
CAMPAIGNS = tests/sim/test_sim.py tests/server/test_*_vs_redis.py tests/unit/test_fuzz_*.py \
	tests/persistence/test_fuzz_aof.py tests/server/test_fuzz_live.py
campaigns: $(DEV) $(BUILT)
	TRISQUE_CAMPAIGNS=1 $(BIN)/python -m pytest -q $(XDIST) $(CAMPAIGNS) $(ARGS)

bench: $(DEV)
	$(BIN)/python -m bench $(ARGS)

# The Spark example (pipeline/examples/), against a running `make cluster`.
pipeline-example: $(DEV)
	$(BIN)/python trisque/pipeline/examples/tasks_pipeline.py $(ARGS)

# The references generated from the code: docs/configuration.md from
# core/admin/config.py, docs/commands.md from the command table.
docs: $(STAMP)
	$(BIN)/python -m trisque.core.admin.config_reference
	$(BIN)/python -m trisque.server.command_reference

# Redis 7.0.15's own test units against a node (docs/testing.md), from a
# Redis tree kept outside the project: make redis-suite REDIS_SRC=../redis-7.0.15
# (UNITS="type/list expire" for some units only).  Not part of make test.
redis-suite: $(STAMP)
	@test -n "$(REDIS_SRC)" || { echo "usage: make redis-suite REDIS_SRC=<redis 7.0.15 tree>"; exit 2; }
	PYTHON=$(BIN)/python tools/redis-suite.sh $(REDIS_SRC) $(UNITS)

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache build *.so
	find trisque -name '*.so' -delete
