#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""QKV Lab's composition scores and one head's circuits against PyTorch (docs/performance.md).

QKV Lab's side comes from qkv_bench (bench_circuits.cpp): BM_CompositionScores/f32/gpt2_small, the Q-, K- and
V-composition scores of every pair of heads of a GPT-2-small-shaped checkpoint, and BM_Circuits/f64/gpt2_small/n:64
beside BM_Predict/f32/gpt2_small/n:64 in the same run. The torch-f32 peer does TransformerLens's computation on
random weights of the same shapes (timing does not depend on the values): the folded W_Q, W_K, W_V, W_O as
FactoredMatrix pairs, OV = W_V·W_O and QK = W_Q·W_Kᵀ; per mode `composition_scores(OV, right)` with right = QK,
QKᵀ or OV: each side's SVD from the factors' SVDs (FactoredMatrix.svd), collapse_l of the left and collapse_r of
the right (d_h × d and d × d_h), their product for every pair of heads (a batch of d_h × d_h products, taken one
earlier layer at a time, since TransformerLens's single broadcast would need about 6 GB here), the norms, the
division and the mask of pairs not in a later layer. Each peer runs with OMP_WAIT_POLICY=passive, with one and
with two intra-op threads; the faster is kept.

    /usr/bin/python3 tests/benchmark/circuits_peers.py [path/to/qkv_bench] [--repetitions N]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

LAYERS, HEADS, D_MODEL, D_HEAD = 12, 12, 768, 64
QKV_NAMES = ("BM_CompositionScores/f32/gpt2_small", "BM_Circuits/f64/gpt2_small/n:64",
             "BM_Predict/f32/gpt2_small/n:64")


def torch_composition(repetitions, threads):
    """The seconds of each repetition of TransformerLens's all_composition_scores for Q, K and V."""
    import torch
    torch.set_num_threads(threads)
    generator = torch.Generator().manual_seed(0)

    def weights(*shape):
        return torch.randn(*shape, generator=generator) * 0.02

    gain = 1.0 + 0.1 * torch.randn(LAYERS, D_MODEL, generator=generator)
    w_q, w_k, w_v = (weights(LAYERS, HEADS, D_MODEL, D_HEAD) * gain[:, None, :, None] for _ in range(3))
    w_o = weights(LAYERS, HEADS, D_HEAD, D_MODEL)

    def factored_svd(a, b):
        """FactoredMatrix.svd: U, S, Vh of a·b from the factors' SVDs."""
        ua, sa, vha = torch.svd(a)
        ub, sb, vhb = torch.svd(b)
        middle = sa[..., :, None] * vha.transpose(-2, -1) @ ub * sb[..., None, :]
        um, sm, vhm = torch.svd(middle)
        return ua @ um, sm, vhb @ vhm

    def scores(left, right):
        u_l, s_l, vh_l = factored_svd(*left)
        u_r, s_r, vh_r = factored_svd(*right)
        new_left = s_l[..., :, None] * vh_l.transpose(-2, -1)   # collapse_l: (L, H, d_h, d)
        new_right = u_r * s_r[..., None, :]                     # collapse_r: (L, H, d, d_h)
        left_norms = new_left.norm(dim=(-2, -1))
        right_norms = new_right.norm(dim=(-2, -1))
        out = torch.empty(LAYERS, HEADS, LAYERS, HEADS)
        for layer in range(LAYERS):  # every later head at once, one earlier layer at a time
            product = new_left[layer][:, None, None] @ new_right[None]  # (H, L, H, d_h, d_h)
            out[layer] = product.norm(dim=(-2, -1)) / left_norms[layer][:, None, None] / right_norms[None]
        mask = torch.arange(LAYERS)[:, None, None, None] < torch.arange(LAYERS)[None, None, :, None]
        return torch.where(mask, out, torch.zeros_like(out))

    ov = (w_v, w_o)
    qk = (w_q, w_k.transpose(-2, -1))
    qk_t = (w_k, w_q.transpose(-2, -1))
    times = []
    with torch.inference_mode():
        for _ in range(repetitions):  # minutes each: no warm-up run
            start = time.perf_counter()
            for right in (qk, qk_t, ov):
                scores(ov, right)
            times.append(time.perf_counter() - start)
    return times


def run_torch_child(repetitions, threads):
    environment = dict(os.environ, OMP_WAIT_POLICY="passive", OMP_NUM_THREADS=str(threads),
                       OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, __file__, "--torch-child", str(threads), "--torch-repetitions",
                          str(repetitions)], env=environment, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run_qkv(bench, repetitions):
    environment = dict(os.environ, QKV_THREADS="2")
    out = subprocess.run([bench, "--benchmark_filter=" + "|".join(name + "(/real_time)?$" for name in QKV_NAMES),
                          "--benchmark_format=json", "--benchmark_repetitions=%d" % repetitions,
                          "--benchmark_min_time=1"], env=environment, check=True, capture_output=True,
                         text=True).stdout
    times = {}
    for entry in json.loads(out)["benchmarks"]:
        if entry.get("run_type") == "iteration":
            name = entry["run_name"].replace("/real_time", "")
            scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[entry["time_unit"]]
            times.setdefault(name, []).append(entry["real_time"] * scale)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", nargs="?", default="build/release/tests/benchmark/qkv_bench")
    parser.add_argument("--repetitions", type=int, default=3, help="QKV Lab's repetitions")
    parser.add_argument("--torch-repetitions", type=int, default=1, help="each PyTorch setting's (minutes each)")
    parser.add_argument("--torch-child", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.torch_child:
        print(json.dumps(torch_composition(arguments.torch_repetitions, arguments.torch_child)))
        return
    qkv = run_qkv(arguments.bench, arguments.repetitions)
    peers = {threads: run_torch_child(arguments.torch_repetitions, threads) for threads in (1, 2)}
    threads = min(peers, key=lambda t: statistics.median(peers[t]))
    torch_times = peers[threads]
    median = {name: statistics.median(values) for name, values in qkv.items()}
    composition, circuits, predict = (median.get(name) for name in QKV_NAMES)
    print("| case | QKV Lab | compared with | ratio | target |")
    print("|---|---|---|---|---|")
    print("| Q-, K- and V-composition of every pair of heads, float32 (`%s`) ÷ PyTorch doing TransformerLens's "
          "computation (torch.set_num_threads(%d)) | %.2f s | %.2f s | **%.2f** | ≤ 0.2, and ≤ 3 s |"
          % (QKV_NAMES[0], threads, composition, statistics.median(torch_times), composition
             / statistics.median(torch_times)))
    print("| one head's circuits with `ov_top` for 64 ids (`%s`) ÷ one pass to the logits (`%s`) | %.0f ms | "
          "%.0f ms | **%.2f** | ≤ 1 |" % (QKV_NAMES[1], QKV_NAMES[2], circuits * 1e3, predict * 1e3,
                                          circuits / predict))
    print("\nQKV Lab: medians of %d repetitions; PyTorch: %d each, with one thread %.2f s, with two %.2f s"
          % (arguments.repetitions, arguments.torch_repetitions, statistics.median(peers[1]),
             statistics.median(peers[2])))


if __name__ == "__main__":
    main()
