#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The hook points' values and gradients against PyTorch autograd, in float64.

Writes the tiny GPT-2, LLaMA (grouped-query attention, lm_head) and Qwen2 (q/k/v biases) folders of
train_reference.py, runs hook_gradients (tests/benchmark/hook_gradients.cpp) on them for the mean loss and
for a logit difference, rebuilds each model in torch (train_reference.Reference) with every activation
TransformerLens names kept, takes the same objective's gradient with autograd and compares every hook's value
and gradient. Exit 1 when a difference exceeds the tolerance (1e-9), 77 (ctest's skip) without torch.

    /usr/bin/python3 tests/benchmark/hook_reference.py --tool build/release/tests/benchmark/hook_gradients
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as missing:
    print(f"skipped: {missing.name} is not installed")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_reference  # noqa: E402  (the models and the torch reference)


def compare(tool, kind, objective, work, rng):
    folder = os.path.join(work, kind)
    vocab, positions = train_reference.write_model(folder, kind, rng)
    ids = rng.integers(0, vocab, size=9).tolist()
    extra = ["loss"] if objective == "loss" else ["logit", "5", str(ids[3]), str((ids[3] + 7) % vocab)]
    ours = json.loads(subprocess.run([tool, folder, ",".join(map(str, ids))] + extra, check=True,
                                     capture_output=True, text=True).stdout)
    model = train_reference.Reference(folder)
    record = {}
    logits = model.logits(torch.tensor([ids]), record)
    if objective == "loss":
        value = torch.nn.functional.cross_entropy(logits[0, :-1], torch.tensor(ids[1:]))
    else:
        value = logits[0, 5, int(extra[2])] - logits[0, 5, int(extra[3])]
    value.backward()
    if set(record) != set(ours["gradients"]):
        raise SystemExit(f"{kind}: hooks differ: {sorted(set(record) ^ set(ours['gradients']))}")
    value_error = gradient_error = 0.0
    for name, tensor in record.items():
        expected_value = np.asarray(ours["values"][name])
        expected_gradient = np.asarray(ours["gradients"][name])
        value_error = max(value_error, float(np.max(np.abs(
            tensor.detach().numpy().reshape(expected_value.shape) - expected_value))))
        gradient_error = max(gradient_error, float(np.max(np.abs(
            tensor.grad.numpy().reshape(expected_gradient.shape) - expected_gradient))))
    return len(record), value_error, gradient_error


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", default="build/release/tests/benchmark/hook_gradients")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(52)
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for kind in ("gpt2", "llama", "qwen2"):
            for objective in ("loss", "logit difference"):
                hooks, value_error, gradient_error = compare(args.tool, kind, objective, work, rng)
                worst = max(worst, value_error, gradient_error)
                print(f"{kind:6} {objective:16}  {hooks} hooks  max |value − torch| {value_error:.2e}  "
                      f"max |gradient − torch| {gradient_error:.2e}")
    print(f"largest difference {worst:.2e} (tolerance {args.tolerance:.0e})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
