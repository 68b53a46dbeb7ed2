# Entry points. STACK defaults to the local `dev` stack.
STACK ?= dev
# Workers of `make test` (tests/parallel.py): more than the cores, since many tests wait on API servers and
# controllers rather than compute (docs/testing.md has the measurements behind the default).
JOBS ?= 4
PY := venv/bin/python
# mypy's cache, outside the checkout as the test parts' are (tests/goref.py): a fresh clone (CI's) is checked warm,
# instead of from nothing (docs/measurements.md). mypy checks each cached module against its source's hash.
MYPY_CACHE := $(or $(NODEFLEET_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/nodefleet)/mypy

.PHONY: help setup parts demo test lint check render preview up clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*##' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

setup: ## venv, Pulumi CLI, language host, Kubernetes provider (idempotent; exit 3 = engine partial; FORCE=1 retries failed downloads)
	@engine/bootstrap $(if $(FORCE),--force) || [ $$? -eq 3 ]

demo: setup ## the main job on STACK: preview with the policy pack, then `up` in render mode
	@if engine/run --ready 2>/dev/null; then \
	  engine/run $(STACK) preview --policy-pack policies && engine/run $(STACK) up --yes --policy-pack policies; \
	else \
	  echo "== the Pulumi engine is incomplete on this machine (see .engine/status); running the credential-free path"; \
	  $(PY) -m nodefleet check --stack $(STACK) && $(PY) -m nodefleet render --stack $(STACK); \
	fi

parts: ## start building the test tiers' parts this machine lacks (API server, controllers, Go references), in the background
	@engine/bootstrap --venv-only
	@$(PY) -m tests.parts start

test: parts setup ## every test, on JOBS parallel workers; engine tests that need parts missing here are listed, not run (see the banner)
	$(PY) -m pytest -n $(JOBS)

lint: setup ## ruff and mypy (strict on the domain package)
	$(PY) -m ruff check . && $(PY) -m ruff format --check . && $(PY) -m mypy --cache-dir "$(MYPY_CACHE)"

check: setup ## credential-free check of STACK: program under the mock runtime + the policy pack
	$(PY) -m nodefleet check --stack $(STACK)

render: setup ## write STACK's manifests from the mock runtime to its render directory
	$(PY) -m nodefleet render --stack $(STACK)

preview: setup ## pulumi preview --policy-pack policies on STACK
	engine/run $(STACK) preview --policy-pack policies

up: setup ## pulumi up on STACK (render mode writes manifests; apply mode needs a cluster)
	engine/run $(STACK) up --policy-pack policies

clean: ## remove rendered manifests (the engine, venv and local state stay)
	rm -rf rendered
