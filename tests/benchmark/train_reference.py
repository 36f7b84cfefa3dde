#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""qkvlab train against PyTorch autograd, in float64.

Writes tiny GPT-2, LLaMA (grouped-query attention, untied unembedding) and Qwen2 (q/k/v biases, tied
unembedding) model folders and a file of token ids, runs `qkvlab train --init DIR --data-ids FILE --steps 3
--precision float64` with SGD and with AdamW, rebuilds each model in torch from the same folder, takes the
same steps with torch.optim.SGD / torch.optim.AdamW (their defaults), and compares every step's loss and
every saved tensor. A third run per model trains on sequences of different lengths in one batch, against
Hugging Face's loss over the batch right-padded with labels -100. Exit 1 when a difference exceeds the
tolerance (1e-9), 77 (ctest's skip) without numpy or torch.

    /usr/bin/python3 tests/benchmark/train_reference.py --qkvlab build/release/app/qkvlab
"""

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as missing:  # ctest reads 77 as skipped
    print(f"skipped: {missing.name} is not installed")
    sys.exit(77)

DTYPES = {"F64": np.float64, "F32": np.float32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    start = 8 + length
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(data[start + begin : start + end], dtype=DTYPES[info["dtype"]])
        tensors[name] = array.reshape(info["shape"]).astype(np.float64)
    return tensors


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype=np.float64).tobytes()
        header[name] = {"dtype": "F64", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_model(folder, kind, rng):
    d, layers, inner, vocab, positions = 16, 2, 24, 29, 16
    heads, kv = (2, 2) if kind == "gpt2" else (4, 2)
    dh = d // heads
    t = {}

    def add(name, shape, centre=0.0):
        t[name] = centre + 0.3 * rng.standard_normal(shape)

    if kind == "gpt2":
        add("wte.weight", (vocab, d))
        add("wpe.weight", (positions, d))
        for l in range(layers):
            p = f"h.{l}."
            add(p + "ln_1.weight", (d,), 1.0)
            add(p + "ln_1.bias", (d,))
            add(p + "attn.c_attn.weight", (d, 3 * d))
            add(p + "attn.c_attn.bias", (3 * d,))
            add(p + "attn.c_proj.weight", (d, d))
            add(p + "attn.c_proj.bias", (d,))
            add(p + "ln_2.weight", (d,), 1.0)
            add(p + "ln_2.bias", (d,))
            add(p + "mlp.c_fc.weight", (d, inner))
            add(p + "mlp.c_fc.bias", (inner,))
            add(p + "mlp.c_proj.weight", (inner, d))
            add(p + "mlp.c_proj.bias", (d,))
        add("ln_f.weight", (d,), 1.0)
        add("ln_f.bias", (d,))
        config = {"model_type": "gpt2", "n_embd": d, "n_head": heads, "n_layer": layers, "n_inner": inner,
                  "n_positions": positions, "vocab_size": vocab, "layer_norm_epsilon": 1e-5,
                  "activation_function": "gelu_new"}
    else:
        add("model.embed_tokens.weight", (vocab, d))
        for l in range(layers):
            p = f"model.layers.{l}."
            add(p + "input_layernorm.weight", (d,), 1.0)
            add(p + "self_attn.q_proj.weight", (heads * dh, d))
            add(p + "self_attn.k_proj.weight", (kv * dh, d))
            add(p + "self_attn.v_proj.weight", (kv * dh, d))
            if kind == "qwen2":
                add(p + "self_attn.q_proj.bias", (heads * dh,))
                add(p + "self_attn.k_proj.bias", (kv * dh,))
                add(p + "self_attn.v_proj.bias", (kv * dh,))
            add(p + "self_attn.o_proj.weight", (d, heads * dh))
            add(p + "post_attention_layernorm.weight", (d,), 1.0)
            add(p + "mlp.gate_proj.weight", (inner, d))
            add(p + "mlp.up_proj.weight", (inner, d))
            add(p + "mlp.down_proj.weight", (d, inner))
        add("model.norm.weight", (d,), 1.0)
        if kind == "llama":
            add("lm_head.weight", (vocab, d))
        config = {"model_type": kind, "hidden_size": d, "num_attention_heads": heads,
                  "num_key_value_heads": kv, "num_hidden_layers": layers, "intermediate_size": inner,
                  "vocab_size": vocab, "max_position_embeddings": positions, "rms_norm_eps": 1e-5,
                  "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": kind != "llama"}
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), t)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)
    return vocab, positions


class Reference:
    """The model of a folder in torch float64, written from the model's definition."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.c = json.load(f)
        self.mlp = self.c.get("qkvlab_mlp", True)
        self.p = {name: torch.tensor(array, dtype=torch.float64, requires_grad=True)
                  for name, array in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
        if not self.mlp:
            self.p = {n: v for n, v in self.p.items() if ".mlp." not in n and "ln_2" not in n
                      and "post_attention_layernorm" not in n}
        self.gpt2 = self.c["model_type"] == "gpt2"

    def loss(self, sequences):
        """Hugging Face's causal LM loss: sequences of different lengths right-padded, labels -100 there."""
        n = max(len(s) for s in sequences)
        ids = torch.tensor([list(s) + [0] * (n - len(s)) for s in sequences])
        labels = torch.tensor([list(s[1:]) + [-100] * (n - len(s)) for s in sequences])
        logits = self.logits(ids)
        return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                                 labels.reshape(-1), ignore_index=-100)

    def logits(self, ids, record=None):
        """The logits of a batch of ids (B × n); with `record`, every activation TransformerLens names is put
        there under its hook name (batch of one), its gradient kept by autograd."""
        p, c = self.p, self.c
        b, n = ids.shape

        def hook(name, x):
            if record is not None:
                x.retain_grad()
                record[name] = x
            return x
        if self.gpt2:
            d, heads, eps = c["n_embd"], c["n_head"], c["layer_norm_epsilon"]
            kv = heads
            h = hook("hook_embed", p["wte.weight"][ids]) + hook("hook_pos_embed", p["wpe.weight"][:n] + 0.0)
        else:
            d, heads, eps = c["hidden_size"], c["num_attention_heads"], c["rms_norm_eps"]
            kv = c["num_key_value_heads"]
            h = hook("hook_embed", p["model.embed_tokens.weight"][ids])
        dh = c.get("head_dim", d // heads)
        mask = torch.ones(n, n, dtype=torch.bool).tril()

        def layer_norm(x, w, bias):
            return torch.nn.functional.layer_norm(x, (d,), w, bias, eps)

        def rms_norm(x, w):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w

        def rope(x):
            inv = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh))
            angle = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
            cos, sin = torch.cat([angle.cos()] * 2, -1), torch.cat([angle.sin()] * 2, -1)
            half = torch.cat([-x[..., dh // 2 :], x[..., : dh // 2]], -1)
            return x * cos + half * sin

        layers = c["n_layer"] if self.gpt2 else c["num_hidden_layers"]
        for l in range(layers):
            block = f"blocks.{l}."
            h = hook(block + "hook_resid_pre", h + 0.0)
            if self.gpt2:
                pre = f"h.{l}."
                a = layer_norm(h, p[pre + "ln_1.weight"], p[pre + "ln_1.bias"])
                q, k, v = (a @ p[pre + "attn.c_attn.weight"] + p[pre + "attn.c_attn.bias"]).split(d, -1)
            else:
                pre = f"model.layers.{l}."
                a = rms_norm(h, p[pre + "input_layernorm.weight"])

                def project(name):
                    y = a @ p[pre + f"self_attn.{name}.weight"].T
                    bias = p.get(pre + f"self_attn.{name}.bias")
                    return y if bias is None else y + bias

                q, k, v = project("q_proj"), project("k_proj"), project("v_proj")
            q, k, v = (hook(block + "attn.hook_" + name, x) for name, x in (("q", q), ("k", k), ("v", v)))
            q = q.view(b, n, heads, dh).transpose(1, 2)
            k = k.view(b, n, kv, dh).transpose(1, 2)
            v = v.view(b, n, kv, dh).transpose(1, 2)
            if not self.gpt2:
                q, k = rope(q), rope(k)
            k = k.repeat_interleave(heads // kv, 1)
            v = v.repeat_interleave(heads // kv, 1)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
            s = s.masked_fill(~mask, float("-inf"))
            w = hook(block + "attn.hook_pattern", s.softmax(-1))
            z = hook(block + "attn.hook_z", (w @ v).transpose(1, 2).reshape(b, n, heads * dh))
            if self.gpt2:
                o = z @ p[pre + "attn.c_proj.weight"] + p[pre + "attn.c_proj.bias"]
            else:
                o = z @ p[pre + "self_attn.o_proj.weight"].T
                if pre + "self_attn.o_proj.bias" in p:
                    o = o + p[pre + "self_attn.o_proj.bias"]
            h = h + hook(block + "hook_attn_out", o)
            if not self.mlp:
                h = hook(block + "hook_resid_post", h + 0.0)
                continue
            if self.gpt2:
                m = layer_norm(h, p[pre + "ln_2.weight"], p[pre + "ln_2.bias"])
                u = torch.nn.functional.gelu(m @ p[pre + "mlp.c_fc.weight"] + p[pre + "mlp.c_fc.bias"],
                                             approximate="tanh")
                mlp = u @ p[pre + "mlp.c_proj.weight"] + p[pre + "mlp.c_proj.bias"]
            else:
                m = rms_norm(h, p[pre + "post_attention_layernorm.weight"])
                g = torch.nn.functional.silu(m @ p[pre + "mlp.gate_proj.weight"].T)
                mlp = (g * (m @ p[pre + "mlp.up_proj.weight"].T)) @ p[pre + "mlp.down_proj.weight"].T
            h = hook(block + "hook_resid_post", h + hook(block + "hook_mlp_out", mlp))
        if self.gpt2:
            f = hook("ln_final.hook_normalized", layer_norm(h, p["ln_f.weight"], p["ln_f.bias"]))
            return f @ p["wte.weight"].T
        f = hook("ln_final.hook_normalized", rms_norm(h, p["model.norm.weight"]))
        return f @ p.get("lm_head.weight", p["model.embed_tokens.weight"]).T


def compare(qkvlab, kind, optimizer, lr, work, rng, ragged=False):
    folder = os.path.join(work, kind)
    vocab, positions = write_model(folder, kind, rng)
    batch, steps, n = 2, 3, 11
    sequences = rng.integers(0, vocab, size=(batch * steps + 1, n)).tolist()  # wraps around at step 3
    if ragged:  # sequences of 3 to 11 tokens in one batch
        sequences = [s[: int(rng.integers(3, n + 1))] for s in sequences]
    data = os.path.join(work, kind + "-ids.json")
    with open(data, "w") as f:
        json.dump(sequences, f)
    out = os.path.join(work, f"{kind}-{optimizer}" + ("-ragged" if ragged else ""))
    subprocess.run([qkvlab, "train", "--init", folder, "--data-ids", data, "--steps", str(steps), "--batch",
                    str(batch), "--optimizer", optimizer, "--lr", repr(lr), "--precision", "float64", "--quiet",
                    "--out", out], check=True)
    with open(os.path.join(out, "training.json")) as f:
        losses = [s["loss"] for s in json.load(f)["steps"]]
    model = Reference(folder)
    params = list(model.p.values())
    opt = torch.optim.AdamW(params, lr=lr) if optimizer == "adamw" else torch.optim.SGD(params, lr=lr)
    torch_losses = []
    for step in range(steps):
        ids = [sequences[(step * batch + i) % len(sequences)] for i in range(batch)]
        opt.zero_grad()
        loss = model.loss(ids)
        torch_losses.append(loss.item())
        loss.backward()
        opt.step()
    saved = read_safetensors(os.path.join(out, "model.safetensors"))
    loss_error = max(abs(a - b) for a, b in zip(losses, torch_losses))
    tensor_error = max(float(np.max(np.abs(saved[name] - value.detach().numpy())))
                       for name, value in model.p.items())
    return loss_error, tensor_error, losses


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qkvlab", default="build/release/app/qkvlab")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(38)
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for kind in ("gpt2", "llama", "qwen2"):
            for optimizer, lr, ragged in (("sgd", 0.1, False), ("adamw", 0.01, False), ("adamw", 0.01, True)):
                loss_error, tensor_error, losses = compare(args.qkvlab, kind, optimizer, lr, work, rng, ragged)
                worst = max(worst, loss_error, tensor_error)
                print(f"{kind:6} {optimizer:5}{' ragged' if ragged else '       '}  losses {', '.join(f'{x:.6f}' for x in losses)}  "
                      f"max |loss − torch| {loss_error:.2e}  max |tensor − torch| {tensor_error:.2e}")
    print(f"largest difference {worst:.2e} (tolerance {args.tolerance:.0e})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
