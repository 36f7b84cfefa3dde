#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Training steps per second: qkv_bench's BM_TrainStep against PyTorch float32 on the same models.

BM_TrainStep/f32/induction: the default induction recipe (docs/training.md); BM_TrainStep/f32/gpt2_tiny:
4 layers, d_model 256, 8 heads, an MLP, 256 tokens, batch 8. Both sides take one AdamW step per
iteration (forward, backward, update) on a fixed batch, with the same OpenBLAS kernels (OPENBLAS_CORETYPE
passes to both unchanged); PyTorch runs with OMP_WAIT_POLICY=passive, with one intra-op thread and with
--threads, and the faster is kept; the sides take turns for --rounds rounds. compare_peers.py
--only train runs this.

    /usr/bin/python3 tests/benchmark/train_peers.py --bench build/release/tests/benchmark/qkv_bench
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

SHAPES = {
    # name: layers, d_model, heads, mlp width (0: none), vocab, length, batch, rope
    "induction": None,  # the recipe: see recipe() below
    "gpt2_tiny": (4, 256, 8, 1024, 256, 256, 8, False),
}


def recipe():
    """The default induction recipe's shapes, as docs/training.md states them."""
    return (2, 64, 2, 0, 64, 48, 32, True)


def torch_steps_per_second(shape, threads, seconds):
    import torch

    torch.set_num_threads(threads)
    layers, d, heads, inner, vocab, n, batch, rope = shape
    dh = d // heads
    torch.manual_seed(1)

    inverse = 1.0 / (10000.0 ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh))
    angle = torch.arange(n, dtype=torch.float32)[:, None] * inverse[None, :]
    cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)

    def rotate(x):
        return x * cos + torch.cat([-x[..., dh // 2 :], x[..., : dh // 2]], -1) * sin

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = torch.nn.RMSNorm(d) if rope and hasattr(torch.nn, "RMSNorm") else torch.nn.LayerNorm(d)
            self.qkv = torch.nn.Linear(d, 3 * d, bias=not rope)
            self.o = torch.nn.Linear(d, d, bias=not rope)
            if inner:
                self.ln2 = torch.nn.LayerNorm(d)
                self.fc = torch.nn.Linear(d, inner)
                self.proj = torch.nn.Linear(inner, d)

        def forward(self, h):
            b = h.shape[0]
            q, k, v = self.qkv(self.ln1(h)).split(d, -1)
            q, k, v = (t.view(b, n, heads, dh).transpose(1, 2) for t in (q, k, v))
            if rope:
                q, k = rotate(q), rotate(k)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
            s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
            h = h + self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d))
            if inner:
                h = h + self.proj(torch.nn.functional.gelu(self.fc(self.ln2(h)), approximate="tanh"))
            return h

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(vocab, d)
            self.wpe = torch.nn.Embedding(n, d)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(layers))
            self.lnf = torch.nn.LayerNorm(d)

        def forward(self, ids):
            h = self.wte(ids) if rope else self.wte(ids) + self.wpe(torch.arange(n))
            for block in self.blocks:
                h = block(h)
            logits = self.lnf(h) @ self.wte.weight.T
            return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1))

    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, vocab, (batch, n))

    def step():
        optimizer.zero_grad()
        model(ids).backward()
        optimizer.step()

    for _ in range(3):
        step()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        count += 1
    return count / (time.perf_counter() - start)


def environment(threads):
    """This environment with the thread counts set for every side (OPENBLAS_CORETYPE passes unchanged)."""
    return dict(os.environ, QKV_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                OPENBLAS_NUM_THREADS=str(threads))


def qkv_steps_per_second(bench, threads, seconds):
    result = subprocess.run([bench, "--benchmark_filter=BM_TrainStep", "--benchmark_format=json",
                             f"--benchmark_min_time={seconds}"], env=environment(threads), check=True,
                            capture_output=True, text=True)
    rates = {}
    for b in json.loads(result.stdout)["benchmarks"]:
        name = b["name"].split("/")[2]
        rates[name] = 1.0 / (b["real_time"] * {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]])
    return rates


def torch_in_child(name, threads, torch_threads, seconds):
    """PyTorch in a process of its own, so its OpenMP threads meet no other library's, with the settings a
    user who tuned it would pick: OMP_WAIT_POLICY=passive, `torch_threads` intra-op threads."""
    result = subprocess.run([sys.executable, __file__, "--torch-child", name, "--threads", str(torch_threads),
                             "--seconds", str(seconds)], env=dict(environment(threads), OMP_WAIT_POLICY="passive"),
                            check=True, capture_output=True, text=True)
    return float(result.stdout)


def compare(bench, threads, seconds, rounds):
    """Both sides in turn for `rounds` rounds; prints a markdown table of the median steps per second."""
    names = ("induction", "gpt2_tiny")
    torch_settings = sorted({1, threads})
    qkv = {name: [] for name in names}
    torch = {(name, setting): [] for name in names for setting in torch_settings}
    for _ in range(max(1, rounds)):
        for name, rate in qkv_steps_per_second(bench, threads, seconds).items():
            qkv.setdefault(name, []).append(rate)
        for name, setting in torch:
            torch[name, setting].append(torch_in_child(name, threads, setting, seconds))
    print(f"Training steps per second, median of {max(1, rounds)} round(s), {threads} thread(s), "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; PyTorch with "
          f"OMP_WAIT_POLICY=passive and the faster of torch.set_num_threads({' or '.join(map(str, torch_settings))})\n")
    print("| model | QKV Lab | PyTorch float32 | PyTorch's threads | QKV Lab ÷ PyTorch |")
    print("|---|---|---|---|---|")
    for name in names:
        theirs, setting = max((statistics.median(torch[name, s]), s) for s in torch_settings)
        ours = statistics.median(qkv[name])
        print(f"| {name} | {ours:.2f} | {theirs:.2f} | {setting} | {ours / theirs:.2f} |")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="build/release/tests/benchmark/qkv_bench")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--torch-child", choices=sorted(SHAPES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_child:
        shape = recipe() if args.torch_child == "induction" else SHAPES[args.torch_child]
        print(torch_steps_per_second(shape, args.threads, args.seconds))
        return 0
    return compare(args.bench, args.threads, args.seconds, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
