# Gradient Pitfalls. Needs only Python 3.11 and make: every target installs what it needs
# into .venv from the pinned requirements first.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
export NO_MKDOCS_2_WARNING := 1

.PHONY: serve build test check seeds fuzz record lint format bench bench-flaky kernels chapter clean help
help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.site: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	@touch $@ $(VENV)/.site

serve: $(VENV)/.site  ## build and serve the site on http://127.0.0.1:8000; an edit rebuilds only what changed
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000 --livereload --dirty

build: $(VENV)/.site  ## write the static site to site/ (strict)
	$(BIN)/mkdocs build --strict --clean

test: $(VENV)/.dev  ## run the whole test suite: lint, library, snippets, build, browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest --numprocesses=auto --maxprocesses=4 --dist=loadfile --no-loadscope-reorder

check: $(VENV)/.dev  ## one chapter, fast: make check NAME=dying_relu (lint, run, numbers, claims on 3 seeds, build, its tests)
	$(BIN)/python -m pipeline.check $(NAME)

seeds: $(VENV)/.dev  ## every claim on more seeds than make test tries: make seeds [NAME=x] [SEEDS=3-9]
	$(BIN)/python -m pipeline.seeds "$(NAME)" "$(SEEDS)"

fuzz: $(VENV)/.dev  ## Hypothesis explores: the property tests on RUNS new random seeds (default 20); SEED=N repeats one
	@for seed in $(or $(SEED),$$(for i in $$(seq $(or $(RUNS),20)); do od -An -N4 -tu4 /dev/urandom; done)); do \
	  echo "make fuzz SEED=$$seed"; \
	  $(BIN)/python -m pytest -m hypothesis -q -p no:cacheprovider --numprocesses=auto --maxprocesses=4 \
	    --hypothesis-profile=explore --hypothesis-seed=$$seed || exit 1; \
	done

kernels: $(VENV)/.dev  ## which numbers and claims move on other OpenBLAS kernels: make kernels [KERNEL=SkylakeX] [SEEDS=1,2]
	$(BIN)/python benchmarks/kernels.py $(KERNEL) $(if $(SEEDS),--seeds $(SEEDS)) $(if $(CHECK),--check)

record: $(VENV)/.site  ## re-run the snippets and re-record their numbers: make record [NAME=x] [FRESH=1] (then git diff)
	$(BIN)/python -m pipeline.record $(if $(FRESH),--fresh) $(NAME)

chapter: $(VENV)/.site  ## new chapter: make chapter NAME=dying_relu [TITLE="Dying ReLUs"] (page, snippet, nav, numbers)
	$(BIN)/python -m pipeline.scaffold "$(NAME)" $(if $(TITLE),--title "$(TITLE)")

lint: $(VENV)/.dev  ## ruff: format in place, then lint (fixing what it can); line length 110
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.dev  ## timings in a fresh clone of HEAD: build, rebuild, serve edit, make check, snippets, make test warm and cold [QUICK=1: no make test]; page weight, first and next visits
	$(BIN)/python benchmarks/words.py
	$(BIN)/python benchmarks/build.py $(if $(QUICK),--quick)
	$(BIN)/python benchmarks/page_weight.py

bench-flaky: $(VENV)/.dev  ## the browser suite 3 times with both cores loaded: every run must pass
	$(BIN)/python benchmarks/browser_under_load.py 3

clean:  ## remove the site, the caches and outputs (keeps .venv)
	rm -rf site .cache out
