# scibench — every command a researcher needs. `make tables` and `make test` install what is missing.
SHELL := /bin/bash
.DELETE_ON_ERROR:
.PHONY: install serve stop data run benchmarks runs view compare tables figures test test-slow lint bench export clean-cache

BIN   := .venv/bin
BENCH ?= abgen
MODEL ?= local
SPLIT ?= sample
# optional; empty = the benchmark's default. Endpoint variables define or override the model's (or judge's) endpoint.
LIMIT ?=
JUDGE ?=
BASE_URL ?=
SERVED_MODEL ?=
API_KEY_ENV ?=
CONCURRENCY ?=
TIMEOUT ?=
STRUCTURED ?=
JUDGE_BASE_URL ?=
JUDGE_SERVED_MODEL ?=
JUDGE_API_KEY_ENV ?=
JUDGE_CONCURRENCY ?=
JUDGE_TIMEOUT ?=
JUDGE_STRUCTURED ?=
PARAMS ?=
PRESET ?=
RUN ?=
A ?=
B ?=
HTML ?=
ARGS ?=
EPOCHS ?=
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM := false
# a variable given on the command line that this Makefile does not read (`make run LIMT=2`) stops here, named
KNOWN_VARS := $(shell sed -En 's/^(export )?([A-Z_]+) *[?:]?=.*/\2/p' $(firstword $(MAKEFILE_LIST)))
UNKNOWN_VARS := $(filter-out $(KNOWN_VARS),$(foreach v,$(.VARIABLES),$(if $(findstring command line,$(origin $(v))),$(v))))
ifneq ($(UNKNOWN_VARS),)
$(error unknown variable $(UNKNOWN_VARS); the variables: $(filter-out SHELL BIN KNOWN_VARS UNKNOWN_VARS,$(KNOWN_VARS)))
endif
# the development lab (bench/: the fake server and the performance figures) lives outside the package
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

install:
	@bash tools/install.sh

serve: install          ## start the embedded SmolLM2 server on 127.0.0.1:8765
	$(BIN)/scibench serve

stop: install           ## stop it
	$(BIN)/scibench stop

data: install           ## download the real datasets (needs the hub; clear message when offline)
	HF_HUB_OFFLINE=0 $(BIN)/scibench data

run: install            ## make run BENCH=abgen|all MODEL=local [LIMIT=n] [JUDGE=name] [BASE_URL=url SERVED_MODEL=id ...] [EPOCHS=k] [PRESET=small|none] [PARAMS="-p max_tokens 256"] [ARGS="--dry-run"]
	@$(BIN)/scibench run $(BENCH) --model "$(MODEL)" --split "$(SPLIT)" $(if $(LIMIT),--limit $(LIMIT)) \
	  $(if $(EPOCHS),--epochs "$(EPOCHS)") \
	  $(if $(JUDGE),--judge "$(JUDGE)") \
	  $(if $(BASE_URL),--base-url "$(BASE_URL)") $(if $(SERVED_MODEL),--served-model "$(SERVED_MODEL)") \
	  $(if $(API_KEY_ENV),--api-key-env "$(API_KEY_ENV)") $(if $(CONCURRENCY),--concurrency "$(CONCURRENCY)") \
	  $(if $(TIMEOUT),--timeout "$(TIMEOUT)") $(if $(STRUCTURED),--structured "$(STRUCTURED)") \
	  $(if $(JUDGE_BASE_URL),--judge-base-url "$(JUDGE_BASE_URL)") $(if $(JUDGE_SERVED_MODEL),--judge-served-model "$(JUDGE_SERVED_MODEL)") \
	  $(if $(JUDGE_API_KEY_ENV),--judge-api-key-env "$(JUDGE_API_KEY_ENV)") $(if $(JUDGE_CONCURRENCY),--judge-concurrency "$(JUDGE_CONCURRENCY)") \
	  $(if $(JUDGE_TIMEOUT),--judge-timeout "$(JUDGE_TIMEOUT)") $(if $(JUDGE_STRUCTURED),--judge-structured "$(JUDGE_STRUCTURED)") \
	  $(if $(PRESET),--preset "$(PRESET)") $(PARAMS) $(ARGS) \
	  || { rc=$$?; echo "make run: scibench run exited $$rc ($$(case $$rc in 1) echo 'partial or failed: see its status and failures above';; 2) echo 'bad input: the line above names it';; 3) echo 'preflight: an endpoint, key or server (above)';; 130) echo 'interrupted: rerun to resume from the cache';; *) echo 'see above';; esac)); make prints it as Error $$rc" >&2; exit $$rc; }

benchmarks: install     ## every benchmark and its parameters (default, doc)
	$(BIN)/scibench benchmarks

runs: install           ## every run in 100 columns: status, n, failures, time, cost; judge, tokens, settings below; * = in the tables
	$(BIN)/scibench runs

view: install           ## make view RUN=bench/split/model[/run-id] (or a run folder): write the run's report.html, print its path
	$(BIN)/scibench view "$(RUN)"

compare: install        ## make compare A=run B=run [HTML=path]: paired differences of two runs of the same benchmark and split
	$(BIN)/scibench compare "$(A)" "$(B)" $(if $(HTML),--html "$(HTML)")

tables: install         ## run missing default runs, then write every table (results/tables), figure (figures/), report.html and results/index.html
	$(BIN)/scibench tables

figures: tables

test: install           ## notebook tests + fast pytest on 2 workers (one progress line; failures in full)
	$(BIN)/nbdev-test --skip-folder-re '^(runs|reports)$$' --n-workers 2
	$(BIN)/pytest -m "not slow" -q -n 2

lint: install           ## ruff (unused imports, undefined names, ...), then lines <= 120 and complexity <= 12 (tools/lint.py)
	$(BIN)/ruff check
	$(BIN)/python tools/lint.py

test-slow: install      ## real embedded model end-to-end and minute-scale tests (CI runs them too; one worker)
	$(BIN)/pytest -m slow -q

bench: install          ## performance figures (printed, not asserted; each line with the 1-minute load); FULL=1: the largest sizes (3M-record arXiv index); NAMES="P1 W1": only those
	SCIBENCH_BENCH_FULL=$(FULL) $(BIN)/python -m bench $(NAMES)

export: install         ## notebooks → scibench/ (commit both)
	$(BIN)/nbdev-export
	$(BIN)/nbdev-clean

clean-cache: install    ## empty the response cache
	$(BIN)/scibench cache clear
