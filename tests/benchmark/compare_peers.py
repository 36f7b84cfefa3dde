#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Times QKV Lab's attention pipeline against numpy and PyTorch doing exactly the same work.

For each case (the shapes of qkv_bench: one head of d_model = d_k = d_v = 512 at n = 64, 256, 1024, 2048,
and a GPT-2-small layer: n = 1024, d_model = 768, 12 heads of 64, W_O 768 x 768) every peer computes, per
head, Q = X W_Q, K = X W_K, V = X W_V, S = Q K^T / sqrt(d_k), P = softmax of each row of S, O = P V, and for
GPT-2 concat(O_1 .. O_12) W_O, into preallocated outputs where the library allows it. One 1024^3 product
is timed too: the GEMM peak each library reaches here. And a GPT-2-small-shaped model's forward pass to the
logits (float32, random weights of GPT-2 small's shapes, n = 64, 256, 1024 token ids): embeddings, 12 blocks
(LayerNorm, causal attention of 12 heads, W_O, LayerNorm, MLP with GELU), the final LayerNorm, the tied
unembedding, and the next-token distributions' top 10 and loss at every position: qkv_bench's
BM_Predict/f32/gpt2_small/n:N against a plain PyTorch implementation of the same blocks (gpt2_torch.py,
torch-f32 only). With --only patch (patch_peers.py): QKV Lab's exact head_out patching grid over the 144 heads
at n = 16 against 144 PyTorch passes to the logits, each with a forward hook writing one clean head's z into
the corrupted run, as a TransformerLens patching loop runs; and the attribution grids of every site at n = 64
against QKV Lab's own pass to the logits in the same run.

Peers: numpy float64, torch float32, torch float64. Each runs in its own subprocess, because numpy's
OpenBLAS threads and torch's OpenMP threads in one process fight over the cores (numpy's 1024^3 dgemm fell
from 125 to 31 GFLOP/s). Every child gets this script's environment unchanged except the thread counts
(--threads, default 2: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, QKV_THREADS, torch.set_num_threads), so
OPENBLAS_CORETYPE is the same for everyone; the report says which kernels each OpenBLAS actually ran.
PyTorch gets the settings a user who tuned it would pick: OMP_WAIT_POLICY=passive (its OpenMP workers spinning
beside OpenBLAS's threads cost it several times over on two cores), and each torch peer runs twice, with one
intra-op thread and with --threads, keeping for each case the setting whose median is lower (the report names it).

QKV Lab's times come from `qkv_bench --benchmark_format=json` (softmax pipeline, GEMM peak, the pass to the
logits and the ablation sweep). Prints two markdown tables, the median and the fastest of all repetitions
(for QKV Lab and every peer alike 3 per round, each a mean over the --min-time, after warm-up; with --rounds the
rounds take turns): time per call and GFLOP/s (the products' FLOPs over the time), and QKV Lab's time over the
best peer's in each precision (below 1: QKV Lab is faster).

    /usr/bin/python3 tests/benchmark/compare_peers.py [path/to/qkv_bench]
        [--competing-load] [--one-thread-too] [--threads N] [--min-time S] [--rounds N]
        [--only attention,model,patch|train] [--smoke]    (train: training steps, by train_peers.py)
"""

import argparse
import contextlib
import io
import json
import math
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import patch_peers

REPO = Path(__file__).resolve().parents[2]
DEFAULT_BENCH = REPO / "build/release/tests/benchmark/qkv_bench"
PEAK_SIDE = 1024
SMOKE_PEAK_SIDE = 64
QKV_REPETITIONS = 3


class Case:
    """One shape, as qkv_bench names and builds it."""

    def __init__(self, label, n, d_model, heads, d_k, d_v, with_output_projection, bench_name, model=None):
        self.label = label
        self.n = n
        self.d_model = d_model
        self.heads = heads
        self.d_k = d_k
        self.d_v = d_v
        self.with_output_projection = with_output_projection
        self.bench_name = bench_name  # qkv_bench's name with "{precision}" for f64 / f32
        self.model = model  # for the whole model's pass to the logits (f32 only): its shapes (GPT2 below)

    def flops(self):
        """The products' floating-point operations (a multiply-add is two), the formula qkv_bench uses."""
        n, d_model, d_k, d_v = self.n, self.d_model, self.d_k, self.d_v
        if self.model:
            per_layer = (2 * n * d_model * 3 * d_model + self.heads * 2 * (2 * n * n * d_k) + 2 * n * d_model * d_model
                         + 2 * 2 * n * d_model * self.model["inner"])
            return self.model["layers"] * per_layer + 2 * n * d_model * self.model["vocab"]
        per_head = 2 * n * d_model * (2 * d_k + d_v) + 2 * n * n * d_k + 2 * n * n * d_v
        output_projection = 2 * n * self.heads * d_v * d_model if self.with_output_projection else 0
        return self.heads * per_head + output_projection


CASES = [
    Case("n = 64, d = 512, 1 head", 64, 512, 1, 512, 512, False, "BM_Pipeline/{precision}/softmax/n:64"),
    Case("n = 256", 256, 512, 1, 512, 512, False, "BM_Pipeline/{precision}/softmax/n:256"),
    Case("n = 1024", 1024, 512, 1, 512, 512, False, "BM_Pipeline/{precision}/softmax/n:1024"),
    Case("n = 2048", 2048, 512, 1, 512, 512, False, "BM_Pipeline/{precision}/softmax/n:2048"),
    Case("GPT-2 small layer (n = 1024, 768, 12 × 64, W_O)", 1024, 768, 12, 64, 64, True,
         "BM_Pipeline/{precision}/gpt2_small/softmax"),
]
# GPT-2 small's shapes for the pass to the logits (the --smoke run shrinks them).
GPT2 = {"layers": 12, "inner": 3072, "vocab": 50257, "positions": 1024}
SMOKE_GPT2 = {"layers": 2, "inner": 64, "vocab": 100, "positions": 16}
CASES += [Case("GPT-2 small to the logits, n = %d" % n, n, 768, 12, 64, 64, True,
               "BM_Predict/{precision}/gpt2_small/n:%d" % n, model=GPT2) for n in (64, 256, 1024)]
SWEEP_NAME = "BM_AblationSweep/f32/gpt2_small/n:64"
# --smoke: the same code paths on tiny shapes, to check the script quickly (no qkv_bench).
SMOKE_CASES = [
    Case("smoke n = 8, d = 16, 1 head", 8, 16, 1, 16, 16, False, ""),
    Case("smoke n = 8, 16, 2 × 8, W_O", 8, 16, 2, 8, 8, True, ""),
    Case("smoke model n = 8, 16, 2 × 8", 8, 16, 2, 8, 8, True, "", model=SMOKE_GPT2),
]
PEAK_NAME = "BM_GemmPeak/{precision}"

PEERS = {
    # name: (library, precision)
    "numpy-f64": ("numpy", "f64"),
    "torch-f32": ("torch", "f32"),
    "torch-f64": ("torch", "f64"),
}


# ---------------------------------------------------------------------------------------------------------
# In a peer's own process


def best_time(call, min_time, min_runs):
    """After two warm-up calls (allocation, caches), QKV_REPETITIONS repetitions, each the mean time of at least
    min_runs calls and min_time seconds: the statistic qkv_bench reports for QKV Lab (--benchmark_repetitions,
    each a mean over --benchmark_min_time), so that every column is measured alike. The best single call would
    flatter a peer: it drops the slower calls that a mean keeps. Returns the repetitions' means and, for the
    report, the best single call as well."""
    call()
    call()
    means = []
    best_call = math.inf
    for _ in range(QKV_REPETITIONS):
        runs = 0
        start = time.perf_counter()
        before = start
        while runs < min_runs or before - start < min_time:
            call()
            after = time.perf_counter()
            best_call = min(best_call, after - before)
            before = after
            runs += 1
        means.append((before - start) / runs)
    return means, best_call


def xavier_std(fan_in, fan_out):
    return math.sqrt(2.0 / (fan_in + fan_out))


def check_close(case, precision, computed, reference, absolute):
    """Stops the peer when its timed code does not compute attention (the timings would be of other work)."""
    tolerance = (1e-3 if precision == "f32" else 1e-9) * max(1.0, float(absolute(reference).max()))
    difference = float(absolute(computed - reference).max())
    if not difference <= tolerance:
        raise SystemExit("%s: the output differs from a plain float64 computation by %g (tolerance %g)"
                         % (case.label, difference, tolerance))


def loaded_blas():
    """The BLAS libraries mapped into this process, with OpenBLAS's own account of its kernels and threads."""
    import ctypes

    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "blas" in line.rsplit("/", 1)[-1]})
    found = []
    for path in paths:
        entry = {"path": path}
        try:
            library = ctypes.CDLL(path)
            library.openblas_get_corename.restype = ctypes.c_char_p
            library.openblas_get_config.restype = ctypes.c_char_p
            entry["openblas_corename"] = library.openblas_get_corename().decode()
            entry["openblas_config"] = library.openblas_get_config().decode()
            entry["openblas_threads"] = library.openblas_get_num_threads()
        except (OSError, AttributeError):
            pass  # not OpenBLAS
        found.append(entry)
    return found


def numpy_peer(precision, cases, peak_side, min_time, min_runs):
    import numpy as np

    dtype = np.float64 if precision == "f64" else np.float32
    random = np.random.default_rng(1)
    times = {}
    best_calls = {}

    def normal(rows, cols, std=1.0):
        return (random.standard_normal((rows, cols)) * std).astype(dtype)

    for case in cases:
        if case.model:
            continue  # torch-f32 only
        n, d_model, d_k, d_v = case.n, case.d_model, case.d_k, case.d_v
        X = normal(n, d_model)
        weights = [tuple(normal(d_model, d, xavier_std(d_model, d)) for d in (d_k, d_k, d_v))
                   for _ in range(case.heads)]
        W_O = normal(case.heads * d_v, d_model, xavier_std(case.heads * d_v, d_model))
        Q = np.empty((n, d_k), dtype)
        K = np.empty((n, d_k), dtype)
        V = np.empty((n, d_v), dtype)
        S = np.empty((n, n), dtype)
        O = np.empty((n, d_v), dtype)
        row_max = np.empty((n, 1), dtype)
        row_sum = np.empty((n, 1), dtype)
        concat = np.empty((n, case.heads * d_v), dtype)
        output = np.empty((n, d_model), dtype)
        inverse_scale = dtype(1.0 / math.sqrt(d_k))

        def attention():
            for h, (W_Q, W_K, W_V) in enumerate(weights):
                np.matmul(X, W_Q, out=Q)
                np.matmul(X, W_K, out=K)
                np.matmul(X, W_V, out=V)
                np.matmul(Q, K.T, out=S)
                # softmax(S / sqrt(d_k)) by rows: max(S / c) = max(S) / c, so the scale joins the shift.
                np.max(S, axis=1, keepdims=True, out=row_max)
                np.subtract(S, row_max, out=S)
                np.multiply(S, inverse_scale, out=S)
                np.exp(S, out=S)
                np.sum(S, axis=1, keepdims=True, out=row_sum)
                np.divide(S, row_sum, out=S)
                np.matmul(S, V, out=O)
                if case.with_output_projection:
                    concat[:, h * d_v:(h + 1) * d_v] = O
            if case.with_output_projection:
                np.matmul(concat, W_O, out=output)

        times[case.label], best_calls[case.label] = best_time(attention, min_time, min_runs)

        def reference():
            X64 = X.astype(np.float64)
            heads = []
            for W_Q, W_K, W_V in weights:
                scaled = (X64 @ W_Q) @ (X64 @ W_K).T / math.sqrt(d_k)
                weights64 = np.exp(scaled - scaled.max(axis=1, keepdims=True))
                heads.append(weights64 / weights64.sum(axis=1, keepdims=True) @ (X64 @ W_V))
            return np.hstack(heads) @ W_O if case.with_output_projection else heads[0]

        check_close(case, precision, output if case.with_output_projection else O, reference(), np.abs)

    a = normal(peak_side, peak_side)
    b = normal(peak_side, peak_side)
    c = np.empty((peak_side, peak_side), dtype)
    times["gemm"], best_calls["gemm"] = best_time(lambda: np.matmul(a, b, out=c), min_time, min_runs)

    config_text = io.StringIO()
    with contextlib.redirect_stdout(config_text):
        np.show_config()
    return {
        "version": "numpy " + np.__version__,
        "config": summarize_numpy_config(config_text.getvalue()),
        "threads": "OPENBLAS_NUM_THREADS=" + os.environ.get("OPENBLAS_NUM_THREADS", "(not set)"),
        "blas": loaded_blas(),
        "times": times,
        "best_calls": best_calls,
    }


def summarize_numpy_config(text):
    """The BLAS section of numpy.show_config(): which library numpy was built against."""
    lines = []
    section = None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            section = line.strip().rstrip(":")
        elif section in ("blas_opt_info", "blas_info", "openblas_info") and "libraries" in line:
            lines.append(section + ": " + line.strip())
    return "; ".join(lines) if lines else text.strip().replace("\n", "; ")[:300]


def torch_peer(precision, cases, peak_side, min_time, min_runs, threads, patch_n):
    import torch

    torch.set_num_threads(threads)
    dtype = torch.float64 if precision == "f64" else torch.float32
    generator = torch.Generator().manual_seed(1)
    times = {}
    best_calls = {}

    def normal(rows, cols, std=1.0):
        return (torch.randn(rows, cols, generator=generator, dtype=torch.float64) * std).to(dtype)

    with torch.inference_mode():
        model_cases = [case for case in cases if case.model]
        if (model_cases or patch_n) and precision == "f32":
            model_case = model_cases[0] if model_cases else next(case for case in CASES if case.model)
            __import__("gpt2_torch").time_model(model_case, model_cases, patch_n, min_time, min_runs, times,
                                                best_calls, best_time, check_close)
        for case in cases:
            if case.model:
                continue
            n, d_model, d_k, d_v = case.n, case.d_model, case.d_k, case.d_v
            X = normal(n, d_model)
            weights = [
                tuple(normal(d_model, d, xavier_std(d_model, d)) for d in (d_k, d_k, d_v)) for _ in range(case.heads)
            ]
            W_O = normal(case.heads * d_v, d_model, xavier_std(case.heads * d_v, d_model))
            Q = torch.empty(n, d_k, dtype=dtype)
            K = torch.empty(n, d_k, dtype=dtype)
            V = torch.empty(n, d_v, dtype=dtype)
            S = torch.empty(n, n, dtype=dtype)
            P = torch.empty(n, n, dtype=dtype)
            O = torch.empty(n, d_v, dtype=dtype)
            concat = torch.empty(n, case.heads * d_v, dtype=dtype)
            output = torch.empty(n, d_model, dtype=dtype)
            inverse_scale = 1.0 / math.sqrt(d_k)

            def attention():
                for h, (W_Q, W_K, W_V) in enumerate(weights):
                    torch.mm(X, W_Q, out=Q)
                    torch.mm(X, W_K, out=K)
                    torch.mm(X, W_V, out=V)
                    S.addmm_(Q, K.t(), beta=0, alpha=inverse_scale)  # the scale rides on the product
                    torch.softmax(S, -1, out=P)
                    torch.mm(P, V, out=O)
                    if case.with_output_projection:
                        concat[:, h * d_v:(h + 1) * d_v] = O
                if case.with_output_projection:
                    torch.mm(concat, W_O, out=output)

            times[case.label], best_calls[case.label] = best_time(attention, min_time, min_runs)

            def reference():
                X64 = X.double()
                heads = []
                for W_Q, W_K, W_V in weights:
                    scaled = (X64 @ W_Q.double()) @ (X64 @ W_K.double()).t() / math.sqrt(d_k)
                    heads.append(torch.softmax(scaled, -1) @ (X64 @ W_V.double()))
                return torch.cat(heads, 1) @ W_O.double() if case.with_output_projection else heads[0]

            check_close(case, precision, output if case.with_output_projection else O, reference(), torch.abs)

        a = normal(peak_side, peak_side)
        b = normal(peak_side, peak_side)
        c = torch.empty(peak_side, peak_side, dtype=dtype)
        times["gemm"], best_calls["gemm"] = best_time(lambda: torch.mm(a, b, out=c), min_time, min_runs)

    settings = re.split(r"[\n,]", torch.__config__.show() + "\n" + torch.__config__.parallel_info())
    summary = [re.sub(r"^[-\s]*(Build settings:\s*)?", "", item).strip() for item in settings
               if re.search(r"BLAS_INFO|CPU capability|USE_MKLDNN|USE_OPENMP|parallel backend|MKL not found", item)]
    return {
        "version": "torch " + torch.__version__,
        "config": "; ".join(summary),
        "threads": "torch.get_num_threads()=%d, OPENBLAS_NUM_THREADS=%s, OMP_NUM_THREADS=%s" % (
            torch.get_num_threads(), os.environ.get("OPENBLAS_NUM_THREADS", "(not set)"),
            os.environ.get("OMP_NUM_THREADS", "(not set)")),
        "blas": loaded_blas(),
        "times": times,
        "best_calls": best_calls,
    }


def selected_cases(arguments):
    """The cases --only names (the GEMM peak always comes along), and the GEMM's side."""
    if arguments.smoke:
        return SMOKE_CASES, SMOKE_PEAK_SIDE
    groups = {group.strip() for group in arguments.only.split(",")}
    return [case for case in CASES if ("model" if case.model else "attention") in groups], PEAK_SIDE


def run_peer_here(peer, arguments):
    """The child's side: time one peer and print its results as JSON on stdout."""
    library, precision = PEERS[peer]
    cases, peak_side = selected_cases(arguments)
    if library == "numpy":
        report = numpy_peer(precision, cases, peak_side, arguments.min_time, arguments.min_runs)
    else:
        report = torch_peer(precision, cases, peak_side, arguments.min_time, arguments.min_runs,
                            arguments.torch_threads or arguments.threads, patch_peers.patch_size(arguments))
    json.dump(report, sys.stdout)


# ---------------------------------------------------------------------------------------------------------
# In the parent


def child_environment(threads, qkv_threads=None):
    """This process's environment with the thread counts set; everything else (OPENBLAS_CORETYPE included)
    passes unchanged, so every peer and QKV Lab see the same one."""
    environment = dict(os.environ)
    environment["OPENBLAS_NUM_THREADS"] = str(threads)
    environment["OMP_NUM_THREADS"] = str(threads)
    environment["QKV_THREADS"] = str(qkv_threads if qkv_threads is not None else threads)
    return environment


class OthersLoad:
    """The share of the machine's cores that processes other than this one and its finished children used
    between start() and stop(): 0 when the measurement had the machine to itself."""

    def __init__(self):
        self._start = None

    @staticmethod
    def _sample():
        with open("/proc/stat") as stat:
            ticks = [int(value) for value in stat.readline().split()[1:9]]
        idle = ticks[3] + ticks[4]  # idle and iowait
        machine_busy = (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK")
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        ours = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
        return time.monotonic(), machine_busy, ours

    def start(self):
        self._start = self._sample()

    def stop(self):
        (wall0, busy0, ours0), (wall1, busy1, ours1) = self._start, self._sample()
        others = (busy1 - busy0) - (ours1 - ours0)
        return min(1.0, max(0.0, others / ((os.cpu_count() or 1) * max(wall1 - wall0, 1e-9))))


class PeerFailed(Exception):
    """A peer that was installed but did not finish (or did not compute attention)."""


def run_peer(peer, arguments):
    """One peer at its best settings: numpy once; torch with OMP_WAIT_POLICY=passive, once with one intra-op
    thread and once with --threads, each case keeping the faster of the two (by median)."""
    if PEERS[peer][0] != "torch":
        return run_peer_once(peer, arguments)
    reports = [run_peer_once(peer, arguments, torch_threads) for torch_threads in sorted({1, arguments.threads})]
    if reports[0] is None:
        return None
    best = reports[0]
    best["thread_choice"] = {name: 1 if len(reports) > 1 else arguments.threads for name in best["times"]}
    for other in reports[1:]:
        for name, samples in other["times"].items():
            if statistics.median(samples) < statistics.median(best["times"].get(name) or [math.inf]):
                best["times"][name] = samples
                best["best_calls"][name] = other["best_calls"].get(name)
                best["thread_choice"][name] = arguments.threads
    best["threads"] = "OMP_WAIT_POLICY=passive; torch.set_num_threads(1) or (%d), the faster per case: %s" % (
        arguments.threads, ", ".join("%s %d" % item for item in sorted(best["thread_choice"].items())))
    return best


def run_peer_once(peer, arguments, torch_threads=None):
    """One peer in its own process. Returns its report, or None with a note when the library is missing;
    raises PeerFailed when it fails otherwise."""
    command = [sys.executable, str(Path(__file__).resolve()), "--peer", peer, "--threads", str(arguments.threads),
               "--min-time", str(arguments.min_time), "--min-runs", str(arguments.min_runs), "--only", arguments.only]
    environment = child_environment(arguments.threads)
    if torch_threads:
        command += ["--torch-threads", str(torch_threads)]
        environment["OMP_WAIT_POLICY"] = "passive"
    if arguments.smoke:
        command.append("--smoke")
    completed = subprocess.run(command, env=environment, capture_output=True, text=True)
    if completed.returncode != 0:
        missing = re.search(r"No module named '?(\w+)", completed.stderr)
        if missing:
            print("note: %s skipped: Python module %s is not installed" % (peer, missing.group(1)),
                  file=sys.stderr)
            return None
        raise PeerFailed("%s failed (exit %d):\n%s" % (peer, completed.returncode, completed.stderr.strip()))
    return json.loads(completed.stdout)


def bench_filter(cases, patching):
    """qkv_bench's benchmarks of `cases` (the softmax pipelines, the passes to the logits), the GEMM peaks in
    both precisions, the ablation sweep with the passes to the logits, and with `patching` the patching
    benchmarks with the pass to the logits at n = 64."""
    names = [case.bench_name for case in cases] + [PEAK_NAME]
    if any(case.model for case in cases):
        names.append(SWEEP_NAME)
    if patching:
        names += patch_peers.BENCHMARKS
    pattern = "|".join(re.escape(name).replace(r"\{precision\}", "f(32|64)") for name in names)
    return "^(%s)(/|$)" % pattern


def run_qkv_bench(bench, arguments, qkv_threads=None):
    """QKV Lab's times in seconds by benchmark name (every repetition's), the ablation sweep's ratio to 144
    passes (every repetition's), and the run's context."""
    # A few repetitions, each a mean over min_time: the statistic best_time takes for the peers.
    wanted = bench_filter(selected_cases(arguments)[0], patch_peers.patch_size(arguments))
    command = [str(bench), "--benchmark_format=json", "--benchmark_filter=" + wanted,
               "--benchmark_min_time=%g" % arguments.min_time, "--benchmark_repetitions=%d" % QKV_REPETITIONS]
    completed = subprocess.run(command, env=child_environment(arguments.threads, qkv_threads),
                               capture_output=True, text=True)
    if completed.returncode != 0:
        sys.exit("qkv_bench failed (exit %d):\n%s" % (completed.returncode, completed.stderr))
    report = json.loads(completed.stdout)
    seconds_per = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for run in report["benchmarks"]:
        if run.get("run_type") != "iteration" or run.get("error_occurred"):
            continue
        # "BM_Pipeline/f32/softmax/n:64/process_time/real_time" -> "BM_Pipeline/f32/softmax/n:64"
        name = re.sub(r"(/(process_time|real_time|manual_time))+$", "", run["run_name"])
        seconds = run["real_time"] * seconds_per[run["time_unit"]]
        times.setdefault(name, []).append(seconds)
        for counter in ("vs_144_forwards",) + patch_peers.COUNTERS:
            if counter in run:
                times.setdefault(name + ":" + counter, []).append(run[counter])
    return times, report.get("context", {})


def fastest(earlier, latest):
    """Times by name: the smaller of each name's earlier and latest time."""
    merged = dict(earlier)
    for name, seconds in latest.items():
        if seconds is not None and (merged.get(name) is None or seconds < merged[name]):
            merged[name] = seconds
    return merged


def pooled(earlier, latest):
    """Samples by name: each name's earlier and latest samples together."""
    merged = {name: list(samples) for name, samples in earlier.items()}
    for name, samples in latest.items():
        merged.setdefault(name, []).extend(samples)
    return merged


def statistic(samples, how):
    """The median or the fastest ("best") of a name's samples, None without any."""
    if not samples:
        return None
    return min(samples) if how == "best" else statistics.median(samples)


def kernel_family(product_library):
    """The OpenBLAS kernel family in qkv_bench's description of its products ("..., SkylakeX kernels"), or None
    when Eigen does them."""
    found = re.search(r"(\w+) kernels", product_library or "")
    return found.group(1) if found else None


def start_competing_load():
    """A process spinning on one core until stopped (or until this process is gone)."""
    spinner = ("import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n"
               "    for _ in range(200000):\n        pass\n")
    return subprocess.Popen([sys.executable, "-c", spinner])


def source_tree(bench):
    """The source tree qkv_bench was built from (its build directory's CMakeCache.txt says), else this one."""
    for directory in Path(bench).resolve().parents:
        cache = directory / "CMakeCache.txt"
        if cache.is_file():
            home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", cache.read_text(errors="replace"), re.MULTILINE)
            if home:
                return Path(home.group(1))
    return REPO


def git_state(tree):
    """The commit of the source tree, and whether its engine sources differ from it."""

    def git(*command):
        return subprocess.run(["git", "-C", str(tree)] + list(command), capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != tree.resolve():
            raise subprocess.CalledProcessError(1, "git")
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--", "core")
    except (OSError, subprocess.CalledProcessError):
        return "source tree %s (not a git checkout)" % tree
    files = [line[3:].split("/", 1)[-1] for line in changed.splitlines()]
    return commit + (" with uncommitted changes in core/ (%s)" % ", ".join(files) if files else "")


def newer_engine_sources(bench, tree):
    """core/ files changed after qkv_bench was built: the binary does not measure them."""
    built = Path(bench).stat().st_mtime
    core = tree / "core"
    return sorted(str(path.relative_to(core)) for path in core.rglob("*")
                  if path.is_file() and path.stat().st_mtime > built)


def blas_alternative():
    try:
        query = subprocess.run(["update-alternatives", "--query", "libblas.so.3-x86_64-linux-gnu"],
                               capture_output=True, text=True).stdout
    except OSError:
        return "(update-alternatives not found)"
    value = re.search(r"^Value: (.*)$", query, re.MULTILINE)
    return value.group(1) if value else "(no libblas.so.3 alternative)"


def cell(seconds, flops):
    if seconds is None:
        return "–"
    milliseconds = seconds * 1e3
    decimals = 2 if milliseconds < 10 else 1 if milliseconds < 100 else 0
    return "%.*f ms (%.0f GF/s)" % (decimals, milliseconds, flops / seconds * 1e-9)


def ratio_cell(numerator, denominators):
    present = [d for d in denominators if d is not None]
    if numerator is None or not present:
        return "–"
    return "%.2f" % (numerator / min(present))


def print_report(arguments, qkv, qkv_context, qkv_one_thread, peers, others_load, failures):
    cases, peak_side = selected_cases(arguments)
    print("## QKV Lab against numpy and PyTorch\n")
    tree = source_tree(arguments.bench) if not arguments.smoke else REPO
    print("- engine: %s; QKV Lab products: %s" % (git_state(tree), qkv_context.get("qkv_product_library", "–")))
    if not arguments.smoke:
        newer = newer_engine_sources(arguments.bench, tree)
        if newer:
            print("- **qkv_bench was built before the latest change to core/%s**: it measures the engine as it was "
                  "then; rebuild it to measure the current one" % ("{%s}" % ",".join(newer) if len(newer) > 1
                                                                    else newer[0]))
    print("- OPENBLAS_CORETYPE: %s (passed unchanged to QKV Lab and every peer)"
          % os.environ.get("OPENBLAS_CORETYPE", "(not set)"))
    print("- threads: %d per process (QKV_THREADS, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, torch.set_num_threads)"
          % arguments.threads)
    print("- competing load: %s" % ("one spinning process for the whole run" if arguments.competing_load
                                    else "none"))
    print("- other processes' share of the machine while each ran (the competing load included): "
          + ", ".join("%s %.0f%%" % (name, share * 100) for name, share in others_load.items()))
    print("- libblas.so.3 alternative: %s" % blas_alternative())
    families = {"QKV Lab": kernel_family(qkv_context.get("qkv_product_library"))}
    for peer, report in peers.items():
        if report is None:
            print("- %s: %s" % (peer, "FAILED (see the error above)" if peer in failures else "not installed"))
            continue
        openblas = [entry for entry in report["blas"] if "openblas_corename" in entry]
        kernels = ("OpenBLAS %s kernels, %d threads (%s)" % (
            openblas[0]["openblas_corename"], openblas[0]["openblas_threads"], openblas[0]["path"])
            if openblas else "BLAS: " + (", ".join(entry["path"] for entry in report["blas"]) or "none mapped"))
        families[peer] = openblas[0]["openblas_corename"] if openblas else None
        print("- %s: %s; %s; built with: %s; %s" % (peer, report["version"], kernels, report["config"],
                                                   report["threads"]))
    busy = [name for name, share in others_load.items() if share > 0.1 and peers.get(name, True) is not None]
    if busy and not arguments.competing_load:
        print("\n**Warning: the machine was busy** while %s ran (other processes took more than 10%% of it): those "
              "times are not the libraries' alone." % ", ".join(busy))
    known = {name: family for name, family in families.items() if family}
    if len(set(known.values())) > 1:
        print("\n**Warning: the OpenBLAS kernels differ** (%s). OpenBLAS 0.3.21 does not recognise every CPU "
              "and then falls back to slower kernels; QKV Lab names them itself when OPENBLAS_CORETYPE is not "
              "set. For a like-for-like comparison run again with e.g. OPENBLAS_CORETYPE=%s."
              % (", ".join("%s %s" % item for item in known.items()), known.get("QKV Lab", "SkylakeX")))

    def peer_time(peer, key, how):
        report = peers.get(peer)
        return statistic(report["times"].get(key), how) if report else None

    header = ["case", "QKV Lab f64", "QKV Lab f32"]
    if qkv_one_thread is not None:
        header += ["QKV f64, 1 thread", "QKV f32, 1 thread"]
    header += ["numpy f64", "torch f32", "torch f64", "QKV ÷ best peer f64", "QKV ÷ best peer f32"]
    rounds = max(1, arguments.rounds)
    rows = [(case.label, case.flops(), case.label, case.bench_name) for case in cases]
    rows.append(("GEMM %d³ (one product)" % peak_side, 2 * peak_side ** 3, "gemm", PEAK_NAME))
    for how, title in (("median", "The median"), ("best", "The fastest")):
        print("\n%s of %d repetitions per library and case (QKV Lab and every peer alike, each a mean over at "
              "least %g s (peers: and %d calls) after warm-up%s; GF/s = the products' FLOPs / time). "
              "QKV ÷ best peer below 1: QKV Lab is faster.\n"
              % (title, QKV_REPETITIONS * rounds, arguments.min_time, arguments.min_runs,
                 "" if rounds == 1 else ", in %d rounds that took turns (QKV Lab, then each peer)" % rounds))
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for label, flops, peer_key, bench_name in rows:
            qkv64 = statistic(qkv.get(bench_name.format(precision="f64")), how)
            qkv32 = statistic(qkv.get(bench_name.format(precision="f32")), how)
            numpy64 = peer_time("numpy-f64", peer_key, how)
            torch32 = peer_time("torch-f32", peer_key, how)
            torch64 = peer_time("torch-f64", peer_key, how)
            cells = [label, cell(qkv64, flops), cell(qkv32, flops)]
            if qkv_one_thread is not None:
                cells += [cell(statistic(qkv_one_thread.get(bench_name.format(precision=p)), how), flops)
                          for p in ("f64", "f32")]
            cells += [cell(numpy64, flops), cell(torch32, flops), cell(torch64, flops),
                      ratio_cell(qkv64, [numpy64, torch64]), ratio_cell(qkv32, [torch32])]
            print("| " + " | ".join(cells) + " |")
    sweep = qkv.get(SWEEP_NAME)
    if sweep:
        ratios = qkv.get(SWEEP_NAME + ":vs_144_forwards", [])
        print("\nAblation sweep (QKV Lab, %s: all 144 heads zeroed in turn, loss): median %.0f ms, fastest %.0f ms; "
              "its time over 144 unmodified passes to the logits (timed in the same benchmark): median %.2f, "
              "fastest %.2f (target ≤ 0.6)"
              % (SWEEP_NAME, statistic(sweep, "median") * 1e3, statistic(sweep, "best") * 1e3,
                 statistic(ratios, "median") or math.nan, statistic(ratios, "best") or math.nan))
    if patch_peers.patch_size(arguments):
        patch_peers.print_report(qkv, peers.get("torch-f32"), statistic)
    print("\nThe peers' best single call in the same run (a statistic that drops their slower calls):")
    for label, flops, peer_key, bench_name in rows:
        calls = ["%s %s" % (peer, cell(peers[peer]["best_calls"].get(peer_key), flops))
                 for peer in ("numpy-f64", "torch-f32", "torch-f64")
                 if peers.get(peer) and peer_key in peers[peer]["best_calls"]]
        print("- %s: %s" % (label, "; ".join(calls)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench", nargs="?", default=str(DEFAULT_BENCH),
                        help="the qkv_bench executable (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="threads per process (default 2)")
    parser.add_argument("--min-time", type=float, default=0.5,
                        help="seconds each timing runs at least, peers and qkv_bench alike (default 0.5)")
    parser.add_argument("--min-runs", type=int, default=5, help="peers: timed calls at least (default 5)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure QKV Lab and every peer this many times in turn and report the median and "
                             "the fastest of all their repetitions (default 1): a machine whose speed drifts "
                             "over minutes then favours no one")
    parser.add_argument("--competing-load", action="store_true",
                        help="keep one core busy with a spinning process for the whole run")
    parser.add_argument("--one-thread-too", action="store_true",
                        help="also run qkv_bench with QKV_THREADS=1 (with --competing-load: do threads hurt?)")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ", ".join(PEERS))
    parser.add_argument("--only", default="attention,model",
                        help="the cases to time, a comma-separated subset of attention (the five softmax "
                             "pipelines), model (the passes to the logits, the ablation sweep) and patch "
                             "(head patching against PyTorch's hooked passes, the attribution grids); the GEMM "
                             "peak always (default: attention,model); or train alone (training steps)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny shapes, one short timing, no qkv_bench: checks that the script works")
    parser.add_argument("--peer", choices=sorted(PEERS), help=argparse.SUPPRESS)  # a child's own run
    parser.add_argument("--torch-threads", type=int, help=argparse.SUPPRESS)  # a torch child's intra-op threads
    arguments = parser.parse_args()

    if arguments.peer:
        run_peer_here(arguments.peer, arguments)
        return 0
    if arguments.only == "train":
        return __import__("train_peers").compare(arguments.bench, arguments.threads, 2.0, arguments.rounds)

    if arguments.smoke:
        arguments.min_time = 0.0
        arguments.min_runs = 1
    wanted = [peer.strip() for peer in arguments.peers.split(",") if peer.strip()]
    unknown = [peer for peer in wanted if peer not in PEERS]
    if unknown:
        parser.error("unknown peer(s): " + ", ".join(unknown))
    if not arguments.smoke and not os.access(arguments.bench, os.X_OK):
        parser.error("%s is not an executable; build it with: cmake --build build/release --target qkv_bench"
                     % arguments.bench)

    # SIGTERM ends the run like Ctrl-C does, through the finally below, so the spinner never outlives us.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = start_competing_load() if arguments.competing_load else None
    others_load = {}  # what other processes took from the machine during each measurement

    def measured(name, run, *run_arguments, **keywords):
        meter = OthersLoad()
        meter.start()
        result = run(*run_arguments, **keywords)
        others_load[name] = max(others_load.get(name, 0.0), meter.stop())  # the worst round's
        return result

    try:
        qkv, qkv_context, qkv_one_thread = {}, {}, None
        peers, failures = {}, []
        for _ in range(max(1, arguments.rounds)):
            if not arguments.smoke:
                times, qkv_context = measured("QKV Lab", run_qkv_bench, arguments.bench, arguments)
                qkv = pooled(qkv, times)
                if arguments.one_thread_too:
                    times, _ = measured("QKV Lab 1 thread", run_qkv_bench, arguments.bench, arguments,
                                        qkv_threads=1)
                    qkv_one_thread = pooled(qkv_one_thread or {}, times)
            for peer in wanted:
                if peer in failures:
                    continue
                try:
                    report = measured(peer, run_peer, peer, arguments)
                except PeerFailed as failure:
                    print("error: %s" % failure, file=sys.stderr)
                    peers[peer], failures = None, failures + [peer]
                    continue
                if peers.get(peer):
                    report["times"] = pooled(peers[peer]["times"], report["times"])
                    report["best_calls"] = fastest(peers[peer]["best_calls"], report["best_calls"])
                peers[peer] = report
    finally:
        if load:
            load.kill()
            load.wait()
    print_report(arguments, qkv, qkv_context, qkv_one_thread, peers, others_load, failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
