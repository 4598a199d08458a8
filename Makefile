PY ?= python

.PHONY: help install test pytest lit lint typecheck format bench fuzz reference golden clean

help:  ## list the everyday commands
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

install:  ## install TensorLoom with the CPU torch wheel and the dev tools
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -e ".[torch,dev]"

test:  ## run pytest and lit; prints "N passed, N failed"
	$(PY) tests/run_all.py

pytest:  ## run the pytest suite only
	$(PY) -m pytest -n 2 tests

lit:  ## run the lit/FileCheck suite only
	lit -sv tests/lit

lint:  ## ruff, the import contracts (pyproject.toml's [tool.importlinter]) and pyright
	ruff check tensorloom tests bench
	ruff format --check tensorloom
	lint-imports
	pyright

typecheck:  ## pyright (strict)
	pyright

format:  ## format the code with ruff
	ruff format tensorloom tests bench
	ruff check --fix tensorloom tests bench

bench:  ## run the CPU compiler benchmarks and print the markdown tables
	$(PY) bench/run.py

COUNT ?= 20000
SEED ?= 1
JOBS ?= 2
fuzz:  ## a long fuzz run: COUNT inputs from SEED on JOBS processes; bugs go to fuzz-out/
	$(PY) tests/fuzz/run.py --count $(COUNT) --seed $(SEED) --jobs $(JOBS) --out fuzz-out

reference:  ## regenerate docs/reference.md and the generated constants (tools/generated.py)
	$(PY) -m tensorloom.tools.reference > docs/reference.md
	$(PY) -m tensorloom.tools.generated

golden:  ## regenerate tests/e2e/reference/ (the examples' emitted scripts) and their line counts
	$(PY) tests/e2e/golden.py

clean:  ## remove caches and build outputs
	rm -rf build dist *.egg-info .pytest_cache .ruff_cache .tlcache
	find . -name __pycache__ -prune -exec rm -rf {} +
