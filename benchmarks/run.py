"""`make bench`: time each workload in dl.free and in the references it names.

A workload's references are the other keys of its BUILDERS: hand-written NumPy and
PyTorch CPU for most, or a library that does the same job (torch_optimizer,
pycocotools, ...). dl.free must run; a reference that cannot be imported is skipped
with a note.

Every framework runs in its own worker process. After a warm-up, the coordinator asks
the workers one at a time, with a short pause between them, for the median time of a
batch of iterations, and reverses the order every round. It reports per framework the
median of those round medians, and per comparison the median over rounds of the
pairwise ratio dl.free / other, with each framework's minor page faults per iteration
and, for a workload that states its `FLOPS`, its GFLOP/s next to the machine's sgemm
peak measured at the start of the run (worker.sgemm_gflops), and the figures of a
workload that computes some from its frameworks' outputs. The table goes to stdout;
the numbers go to benchmarks/results/<timestamp>.json and benchmarks/results/latest.json.

    python benchmarks/run.py [--quick] [--only WORKLOAD ...]
    python benchmarks/run.py --sweep [--quick] [--only WORKLOAD ...]   (benchmarks/sweep.py)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

import environment
import worker
from workloads import WORKLOADS

RESULTS = Path(__file__).resolve().parent / "results"
# dlfree.threads.BLAS_IDLE_TIMEOUT, written out: importing dl.free here would import it in
# every spawned worker too (they import this module), and its NumPy backend's malloc
# settings would then speed up the references as well
BLAS_IDLE_TIMEOUT = "21"
UNIT_SCALE = {"us": 1e6, "ms": 1e3}
# Pause before each timed batch, so that the thread pools of the worker that ran last
# (OpenBLAS, OpenMP) stop spinning and leave the cores to the next one.
SETTLE_S = 0.25


class Worker:
    """The coordinator's handle on one worker process."""

    def __init__(self, context, workload: str, framework: str, settings: dict | None = None):
        self.label = f"{framework} worker for {workload}"
        self.conn, child_conn = context.Pipe()
        self.process = context.Process(target=worker.serve,
                                       args=(child_conn, workload, framework, settings),
                                       daemon=True)
        self.process.start()
        child_conn.close()

    def receive(self):
        try:
            return self.conn.recv()
        except EOFError:
            raise RuntimeError(f"the {self.label} died; its traceback is above") from None

    def median_time(self, iterations: int) -> tuple[float, float | None]:
        """The median time of `iterations` calls and the page faults per call (None
        where the step runs in other processes)."""
        self.conn.send(iterations)
        return self.receive()

    def outputs(self):
        """What one more step returns (a workload with `figures` returns picklable values)."""
        self.conn.send(worker.OUTPUTS)
        return self.receive()

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError):  # it may have died already
            self.conn.send(None)
        self.process.join()


def measure(workload, mode: str, settings: dict | None = None, plan=None,
            references: tuple | None = None) -> dict:
    """Time one workload in every available framework (or only in `references` besides
    dl.free), under its plan for `mode` unless `plan` is given, with `settings` overriding
    its size constants; the result as JSON-ready data."""
    plan = plan or workload.PLANS[mode]
    context = multiprocessing.get_context("spawn")
    frameworks = ["dlfree", *(fw for fw in workload.BUILDERS
                              if fw != "dlfree" and (references is None or fw in references))]
    started = {fw: Worker(context, workload.NAME, fw, settings) for fw in frameworks}
    workers, environments, skipped, outputs = {}, {}, {}, None
    try:
        for fw, w in started.items():
            hello = w.receive()
            if "unavailable" in hello and fw != "dlfree":
                skipped[fw] = hello["unavailable"]
            elif "unavailable" in hello:
                raise RuntimeError(f"{w.label}: {hello['unavailable']}")
            else:
                workers[fw] = w
                environments[fw] = hello["environment"]
        for w in workers.values():
            w.median_time(plan.warmup)
        rounds = {fw: [] for fw in workers}
        faults = {fw: [] for fw in workers}
        order = list(workers)
        for r in range(plan.rounds):
            for fw in order if r % 2 == 0 else reversed(order):
                time.sleep(SETTLE_S)
                median, per_call = workers[fw].median_time(plan.iterations)
                rounds[fw].append(median)
                faults[fw].append(per_call)
        # a workload's figures hold at its own sizes, as its FLOPS: a sweep reports none
        if hasattr(workload, "figures") and not settings:
            outputs = {fw: w.outputs() for fw, w in workers.items()}
    finally:
        for w in started.values():
            w.close()
    result = {
        "description": workload.DESCRIPTION,
        "unit": workload.UNIT,
        "plan": vars(plan),
        "frameworks": {fw: {"median_s": statistics.median(times), "round_medians_s": times,
                            "environment": environments[fw],
                            "faults_per_iteration": _median_or_none(faults[fw]),
                            "gflops": _gflops(workload, settings, statistics.median(times))}
                       for fw, times in rounds.items()},
        "skipped": skipped,
        "ratios": {fw: _ratio(rounds["dlfree"], rounds[fw], workload.TARGETS.get(fw))
                   for fw in rounds if fw != "dlfree"},
    }
    if hasattr(workload, "SCALING"):
        result["scaling"] = _scaling(workload, rounds)
    if outputs is not None:
        result["figures"] = workload.figures(outputs)
    return result


def _median_or_none(values: list) -> float | None:
    """The median of the rounds' values, or None where the worker could not count them."""
    return None if None in values else statistics.median(values)


def _gflops(workload, settings: dict | None, seconds: float) -> float | None:
    """The GFLOP/s of a step that took `seconds`, for a workload that states its `FLOPS`
    at its own sizes (None for other workloads, or when `settings` changed the sizes)."""
    flops = getattr(workload, "FLOPS", None)
    return None if flops is None or settings else flops / seconds / 1e9


def measure_sgemm_peak() -> float:
    """The machine's sgemm GFLOP/s, measured in a fresh process (worker.sgemm_gflops)."""
    context = multiprocessing.get_context("spawn")
    conn, child_conn = context.Pipe()
    process = context.Process(target=worker.sgemm_gflops, args=(child_conn,), daemon=True)
    process.start()
    child_conn.close()
    try:
        return conn.recv()
    finally:
        process.join()


def _scaling(workload, rounds: dict) -> dict:
    """For a multi-process workload whose step is the same global batch on any number of
    processes: per framework, the median over rounds of its samples/s over that of its
    run on fewer processes (the inverse ratio of their step times)."""
    scaling = {}
    for fw, single in workload.SCALING.items():
        if fw in rounds and single in rounds:
            per_round = [one / many for one, many in zip(rounds[single], rounds[fw],
                                                         strict=True)]
            scaling[fw] = {"processes": workload.PROCESSES[fw], "from": single,
                           "from_processes": workload.PROCESSES[single],
                           "median": statistics.median(per_round), "per_round": per_round}
    return scaling


def _ratio(ours: list, theirs: list, target: float | None) -> dict:
    """Pairwise dl.free/other ratios of the same rounds, their median and the target check."""
    per_round = [a / b for a, b in zip(ours, theirs, strict=True)]
    median = statistics.median(per_round)
    return {"median": median, "min": min(per_round), "max": max(per_round),
            "per_round": per_round, "target": target,
            "met": None if target is None else median <= target}


def format_table(name: str, result: dict) -> str:
    """The human-readable report of one workload."""
    unit, scale = result["unit"], UNIT_SCALE[result["unit"]]
    plan = result["plan"]
    lines = [f"{name}: {result['description']}",
             f"  {plan['rounds']} rounds x {plan['iterations']} iterations, after "
             f"{plan['warmup']} warm-up",
             f"  {'framework':<18}{'median':>12}{'GFLOP/s':>9}{'faults/it':>11}{'dlfree/x':>11}"
             f"{'range over rounds':>21}{'target':>11}"]
    for fw, timing in result["frameworks"].items():
        line = f"  {fw:<18}{timing['median_s'] * scale:>9.2f} {unit:<2}"
        gflops, faults = timing.get("gflops"), timing.get("faults_per_iteration")
        line += f"{gflops:>9.1f}" if gflops is not None else f"{'-':>9}"
        line += f"{faults:>11.0f}" if faults is not None else f"{'-':>11}"
        ratio = result["ratios"].get(fw)
        if ratio:
            line += f"{ratio['median']:>10.2f}x{ratio['min']:>11.2f}x - {ratio['max']:.2f}x"
            if ratio["target"] is not None:
                verdict = "met" if ratio["met"] else "MISSED"
                line += f"   <= {ratio['target']:.2f}x {verdict}"
        lines.append(line)
    lines += [f"  {fw:<18}skipped: {why}" for fw, why in result["skipped"].items()]
    for fw, scaling in result.get("scaling", {}).items():
        lines.append(f"  samples/s scaling {scaling['from_processes']} -> "
                     f"{scaling['processes']} processes: {fw} {scaling['median']:.2f}x")
    lines += [f"  {label}: {value:.4g}" for label, value in result.get("figures", {}).items()]
    return "\n".join(lines)


def format_machine(machine: dict, sgemm_gflops: float | None = None) -> str:
    """The machine line, with the sgemm peak when measured and a warning when other work is already
    keeping the CPUs busy."""
    line = (f"machine: {machine['cpus']} CPUs, Python {machine['python']}, 1-minute load "
            f"{machine['load_average_1min']:.2f}"
            + "".join(f", {k}={v}" for k, v in machine["tuning_variables"].items()))
    if sgemm_gflops is not None:
        line += f"\nsgemm peak (NumPy matmul, 2048^3 float32): {sgemm_gflops:.1f} GFLOP/s"
    if machine["load_average_1min"] >= machine["cpus"] / 2:
        line += "\nwarning: other processes are using the CPUs; these timings are unreliable"
    return line


def format_libraries(results: dict) -> str:
    """One line per framework on the libraries and thread pools its worker saw."""
    seen = {}
    for result in results["workloads"].values():
        for fw, timing in result["frameworks"].items():
            seen.setdefault(fw, timing["environment"])
    return "\n".join(f"{fw:<18}" + ", ".join(f"{k}={v}" for k, v in env.items()
                                              if k != "blas_config")
                     for fw, env in seen.items())


def write_results(results: dict) -> Path:
    """Write the results as results/<timestamp>.json and results/latest.json."""
    RESULTS.mkdir(exist_ok=True)
    text = json.dumps(results, indent=2) + "\n"
    path = RESULTS / f"{results['started']}.json"
    path.write_text(text)
    (RESULTS / "latest.json").write_text(text)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="a few short rounds: a smoke test, not a measurement")
    parser.add_argument("--only", action="append", choices=list(WORKLOADS), metavar="WORKLOAD",
                        help=f"run only this workload (repeatable): {', '.join(WORKLOADS)}")
    parser.add_argument("--sweep", action="store_true",
                        help="time the swept workloads over a range of sizes and draw the "
                             "curves (benchmarks/sweep.py)")
    args = parser.parse_args(argv)
    mode = "quick" if args.quick else "full"
    # dl.free sets OpenBLAS's idle timeout itself when it is imported before NumPy (see
    # dlfree.threads); the workers load NumPy first, through the workloads, so the same
    # setting is made here, for every worker alike, and reported with the machine.
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", BLAS_IDLE_TIMEOUT)
    if args.sweep:
        import sweep

        return sweep.main(mode, args.only)
    results = {"started": time.strftime("%Y%m%d-%H%M%S"), "command": " ".join(sys.argv),
               "mode": mode, "machine": environment.machine(),
               "sgemm_peak_gflops": measure_sgemm_peak(), "workloads": {}}
    print(format_machine(results["machine"], results["sgemm_peak_gflops"]) + "\n", flush=True)
    for name in dict.fromkeys(args.only or WORKLOADS):
        result = measure(WORKLOADS[name], mode)
        results["workloads"][name] = result
        print(format_table(name, result) + "\n", flush=True)
    print(format_libraries(results))
    print(f"wrote {write_results(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
