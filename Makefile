# GPUDeck: `make run` starts everything on this machine, `make test` checks everything.
# Both install what they need on first use (a venv in .venv, node modules in frontend/)
# and reuse it afterwards.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The CPU build of torch; a looser spec pulls gigabytes of CUDA wheels. GPU machines may
# override it, e.g. `make run TORCH_SPEC='torch==2.13.0 --index-url <your CUDA index>'`.
TORCH_SPEC ?= torch==2.13.0
INSTALLED := $(VENV)/.installed
# SAELens (and its transformers/datasets stack, ~1 GB) in a venv of its own, used only by the
# test that loads our checkpoints with the real sae_lens.SAE.load_from_disk.
SAELENS_VENV := .venv-saelens
SAELENS_SPEC ?= sae-lens==6.54.12
SAELENS_INSTALLED := $(SAELENS_VENV)/.installed
FRONTEND_INSTALLED := frontend/node_modules/.installed
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get
# Test processes side by side (pytest-xdist), each with a database and Redis db of its own
# (tests/harness.py). Three on two cores: most tests wait on processes they started rather
# than compute (the suite used 1.2 cores of CPU with three), and three took 12 min 4 s where
# two took 17 min 12 s (docs/benchmarks.md, "Test-suite time").
PYTEST_WORKERS ?= 3

.PHONY: help install run test lint pytest frontend-install frontend-build frontend-bundle \
        frontend-test frontend-e2e openapi system-deps saelens bench gpu-check clean

help:
	@echo "make run    start GPUDeck (API, worker, sampler, dashboard; embedded Postgres/Redis if none configured)"
	@echo "make test   lint, type-check and run every test (backend, frontend, browser)"
	@echo "make bench  run the benchmark scripts in bench/"
	@echo "make gpu-check  on a GPU machine: measure every GPU path into docs/benchmarks-gpu.md"

$(INSTALLED): backend/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check $(TORCH_SPEC)
	$(BIN)/pip install -q --disable-pip-version-check -e 'backend[dev]'
	@touch $@

install: $(INSTALLED)

$(SAELENS_INSTALLED):
	@test -x $(SAELENS_VENV)/bin/python || $(PYTHON) -m venv $(SAELENS_VENV)
	$(SAELENS_VENV)/bin/pip install -q --disable-pip-version-check $(TORCH_SPEC)
	$(SAELENS_VENV)/bin/pip install -q --disable-pip-version-check $(SAELENS_SPEC)
	@touch $@

saelens: $(SAELENS_INSTALLED)

# Debian packages the test suite drives: Chromium for browser tests, docker-compose to
# validate docker-compose.yml without a Docker engine, and a Slurm cluster for the Slurm
# adapter's tests (slurmctld, slurmd, slurmdbd and its MariaDB server binary, munge, the client
# commands; tests/slurm/cluster.py starts its own of each, the packages' services are not used).
SLURM_PACKAGES := slurmctld slurmd slurmdbd slurm-client munge mariadb-server-core
system-deps:
	@missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v docker-compose >/dev/null || missing="$$missing docker-compose"; \
	PATH="$$PATH:/usr/sbin" command -v slurmdbd >/dev/null && command -v sacct >/dev/null && \
	  PATH="$$PATH:/usr/sbin" command -v mariadbd >/dev/null || missing="$$missing $(SLURM_PACKAGES)"; \
	test -x /usr/sbin/sshd || missing="$$missing openssh-server"; \
	if [ -n "$$missing" ]; then \
	  echo "installing$$missing"; \
	  ($(APT_GET) install -y -q $$missing >/dev/null 2>&1 || \
	   ($(APT_GET) update -q >/dev/null && $(APT_GET) install -y -q $$missing >/dev/null)); \
	fi

$(FRONTEND_INSTALLED): frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

frontend-install: $(FRONTEND_INSTALLED)

# The OpenAPI schema the dashboard's typed client is generated from.
openapi: $(INSTALLED)
	$(BIN)/python -m gpudeck.openapi > backend/openapi.json

frontend-build: $(FRONTEND_INSTALLED)
	cd frontend && npm run --silent build

# The bundle without `build`'s type-check: the browser tests need only the bundle, and in
# `make test` frontend-test has type-checked the same sources already (tsc: ~15 s of CPU).
frontend-bundle: $(FRONTEND_INSTALLED)
	cd frontend && npm run --silent bundle

frontend-test: $(FRONTEND_INSTALLED) openapi
	cd frontend && npm run --silent check:api
	cd frontend && npm run --silent typecheck
	cd frontend && npm run --silent lint
	cd frontend && npm run --silent format:check
	cd frontend && npm run --silent test

frontend-e2e: $(FRONTEND_INSTALLED) frontend-bundle system-deps
	cd frontend && GPUDECK_BIN=$(CURDIR)/$(BIN)/gpudeck npm run --silent e2e
	cd frontend && GPUDECK_BIN=$(CURDIR)/$(BIN)/gpudeck npm run --silent e2e:docs

run: $(INSTALLED)
	@if [ ! -f frontend/dist/index.html ]; then \
	  if command -v npm >/dev/null; then $(MAKE) --no-print-directory frontend-build; \
	  else echo "npm not found: serving the API without the dashboard"; fi; \
	fi
	$(BIN)/gpudeck run

lint: $(INSTALLED)
	cd backend && ../$(BIN)/ruff check gpudeck tests ../bench ../examples
	cd backend && ../$(BIN)/ruff format --check gpudeck tests ../bench ../examples
	cd backend && ../$(BIN)/mypy gpudeck
	cd backend && ../$(BIN)/lint-imports

pytest: $(INSTALLED) $(SAELENS_INSTALLED) system-deps
	cd backend && GPUDECK_SAELENS_PYTHON=$(CURDIR)/$(SAELENS_VENV)/bin/python \
	  ../$(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=40

# The two installs the lint needs side by side (network-free wheels and packages, disk-bound);
# then the lint beside the frontend's type-check and unit tests (each mostly one core) and the
# SAELens venv's install (disk-bound, needed only by the backend tests); the backend and browser
# suites alone, as their timing-sensitive tests expect a machine that is not also compiling.
# Each phase says how long it took (`make test: <phase> took N s`): where CI's time goes.
PHASE = @t0=$$(date +%s); trap 'echo "make test: $(1) took $$(( $$(date +%s) - t0 )) s"' EXIT;

test:
	$(call PHASE,installs) $(MAKE) --no-print-directory -j2 --output-sync=target $(INSTALLED) $(FRONTEND_INSTALLED)
	$(call PHASE,lint + frontend unit tests + SAELens install) $(MAKE) --no-print-directory -j3 --output-sync=target lint frontend-test $(SAELENS_INSTALLED)
	$(call PHASE,backend tests) $(MAKE) --no-print-directory pytest
	$(call PHASE,browser tests) $(MAKE) --no-print-directory frontend-e2e

bench: $(INSTALLED)
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script; done

# GPU truth: on a machine with NVIDIA GPUs (a CUDA torch: TORCH_SPEC above), every GPU path is
# measured into docs/benchmarks-gpu.md; without one it says so and exits 0.
# GPU_CHECK_DRY_RUN=1 runs every section on CPU (tests/bench/test_gpu_check.py does, in `make test`).
gpu-check: $(INSTALLED)
	cd backend && ../$(BIN)/python ../bench/gpu_check.py $(GPU_CHECK_ARGS)

clean:
	rm -rf $(VENV) $(SAELENS_VENV) frontend/node_modules frontend/dist
