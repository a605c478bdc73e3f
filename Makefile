# scibench — every command a researcher needs. `make tables` and `make test` install what is missing.
SHELL := /bin/bash
.DELETE_ON_ERROR:
.PHONY: install serve stop data run tables figures test test-slow bench export clean-cache

BIN   := .venv/bin
BENCH ?= abgen
MODEL ?= local
SPLIT ?= sample
LIMIT ?= 0
JUDGE ?=
BASE_URL ?=
OUT ?=
PARAMS ?=
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM := false

install:
	@bash tools/install.sh

serve: install          ## start the embedded SmolLM2 server on 127.0.0.1:8765
	$(BIN)/scibench serve

stop: install           ## stop it
	$(BIN)/scibench stop

data: install           ## download the real datasets (needs the hub; clear message when offline)
	HF_HUB_OFFLINE=0 $(BIN)/scibench data

run: install            ## make run BENCH=abgen MODEL=local SPLIT=sample [LIMIT=n] [JUDGE=name] [BASE_URL=url] [PARAMS="-p max_tokens 256"]
	$(BIN)/scibench run $(BENCH) --model "$(MODEL)" --split "$(SPLIT)" --limit $(LIMIT) \
	  $(if $(JUDGE),--judge "$(JUDGE)") $(if $(BASE_URL),--base-url "$(BASE_URL)") $(if $(OUT),--out "$(OUT)") $(PARAMS)

tables: install         ## run missing default runs, then write every table (results/tables) and figure (figures/)
	$(BIN)/scibench tables

figures: tables

test: install           ## notebook tests + fast pytest
	$(BIN)/nbdev-test --skip-folder-re '^(runs|reports)$$' --n-workers 2
	$(BIN)/pytest -m "not slow" -q

test-slow: install      ## end-to-end tests with the real embedded model (CI runs them too)
	$(BIN)/pytest -m slow -q

bench: install          ## performance figures (printed, not asserted)
	$(BIN)/scibench bench

export: install         ## notebooks → scibench/ (commit both)
	$(BIN)/nbdev-export
	$(BIN)/nbdev-clean

clean-cache:
	rm -rf .cache/llm-cache.sqlite*
