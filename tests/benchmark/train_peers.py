#!/usr/bin/python3
"""Training steps per second: qkv_bench's BM_TrainStep against PyTorch float32 on the same models.

BM_TrainStep/f32/induction: the default induction recipe (docs/training.md); BM_TrainStep/f32/gpt2_tiny:
4 layers, d_model 256, 8 heads, an MLP, 256 tokens, batch 8. Both sides take one AdamW step per
iteration (forward, backward, update) on a fixed batch, with the same number of threads.

    /usr/bin/python3 tests/benchmark/train_peers.py --bench build/release/tests/benchmark/qkv_bench
"""

import argparse
import json
import math
import os
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


def qkv_steps_per_second(bench, threads, seconds):
    env = dict(os.environ, QKV_THREADS=str(threads))
    result = subprocess.run([bench, "--benchmark_filter=BM_TrainStep", "--benchmark_format=json",
                             f"--benchmark_min_time={seconds}"], env=env, check=True, capture_output=True, text=True)
    rates = {}
    for b in json.loads(result.stdout)["benchmarks"]:
        name = b["name"].split("/")[2]
        rates[name] = 1.0 / (b["real_time"] * {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]])
    return rates


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="build/release/tests/benchmark/qkv_bench")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    qkv = qkv_steps_per_second(args.bench, args.threads, args.seconds)
    print(f"{'model':12} {'qkv_bench steps/s':>18} {'torch f32 steps/s':>18}   ({args.threads} threads)")
    for name in ("induction", "gpt2_tiny"):
        shape = recipe() if name == "induction" else SHAPES[name]
        peer = torch_steps_per_second(shape, args.threads, args.seconds)
        print(f"{name:12} {qkv.get(name, float('nan')):18.2f} {peer:18.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
