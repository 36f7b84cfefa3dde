#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The scripts `qkvlab patch --script` writes, run by PyTorch, against the grids qkvlab prints.

Writes tiny model folders in float64 (GPT-2; LLaMA with 4 query heads over 2 key/value heads and an
untied lm_head; Qwen2 with q/k/v biases and a tied unembedding; a LLaMA with every bias LLaMA's config can
ask for and llama3 RoPE scaling), runs `qkvlab patch ... --script FILE` for every site and both methods,
runs each script (in this process; one per model also as its own python3 process, as a user would) and
compares the metrics and every cell of the grid (normalized cells times m_clean − m_corrupt, the metric's
units). The scripts rebuild the model in torch from the folder
and patch by re-running (exact) or with torch.autograd (attribution), so this also checks qkvlab's
attribution patching against PyTorch's gradients. Exit 1 when a difference exceeds the tolerance (1e-9),
77 (ctest's skip) without torch.

    /usr/bin/python3 tests/app/patch_script_reference.py --qkvlab build/release/app/qkvlab
"""

import argparse
import contextlib
import io
import json
import os
import runpy
import struct
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError as missing:  # ctest reads 77 as skipped
    print(f"skipped: {missing.name} is not installed")
    sys.exit(77)

SITES = ["resid_pre", "attn_out", "mlp_out", "head_out", "head_out_pos", "head_pattern", "head_q", "head_k",
         "head_v"]
VOCAB = 40


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        values = tensor.flatten().tolist()
        blob = struct.pack(f"<{len(values)}d", *values)
        header[name] = {"dtype": "F64", "shape": list(tensor.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_model(folder, kind, generator):
    """A random checkpoint of `kind`: gpt2, llama, qwen2 or llama-biases (attention_bias, mlp_bias, llama3
    rope_scaling whose thresholds fall between the head's frequencies)."""
    d, layers, inner, positions = 16, 2, 48, 24
    heads, kv = (2, 2) if kind == "gpt2" else (4, 2)
    dh = d // heads
    t = {}

    def add(name, shape, centre=0.0):
        t[name] = centre + 0.35 * torch.randn(shape, generator=generator, dtype=torch.float64)

    if kind == "gpt2":
        add("wte.weight", (VOCAB, d))
        add("wpe.weight", (positions, d))
        for l in range(layers):
            p = f"h.{l}."
            for norm in ("ln_1", "ln_2"):
                add(p + norm + ".weight", (d,), 1.0)
                add(p + norm + ".bias", (d,))
            add(p + "attn.c_attn.weight", (d, 3 * d))
            add(p + "attn.c_attn.bias", (3 * d,))
            add(p + "attn.c_proj.weight", (d, d))
            add(p + "attn.c_proj.bias", (d,))
            add(p + "mlp.c_fc.weight", (d, inner))
            add(p + "mlp.c_fc.bias", (inner,))
            add(p + "mlp.c_proj.weight", (inner, d))
            add(p + "mlp.c_proj.bias", (d,))
        add("ln_f.weight", (d,), 1.0)
        add("ln_f.bias", (d,))
        config = {"model_type": "gpt2", "n_embd": d, "n_head": heads, "n_layer": layers, "n_inner": inner,
                  "n_positions": positions, "vocab_size": VOCAB, "layer_norm_epsilon": 1e-5,
                  "activation_function": "gelu_new"}
    else:
        biases = kind == "llama-biases"
        add("model.embed_tokens.weight", (VOCAB, d))
        for l in range(layers):
            p = f"model.layers.{l}."
            add(p + "input_layernorm.weight", (d,), 1.0)
            add(p + "post_attention_layernorm.weight", (d,), 1.0)
            for name, rows in (("q_proj", heads * dh), ("k_proj", kv * dh), ("v_proj", kv * dh)):
                add(p + f"self_attn.{name}.weight", (rows, d))
                if kind == "qwen2" or biases:
                    add(p + f"self_attn.{name}.bias", (rows,))
            add(p + "self_attn.o_proj.weight", (d, heads * dh))
            for name, shape in (("gate_proj", (inner, d)), ("up_proj", (inner, d)), ("down_proj", (d, inner))):
                add(p + f"mlp.{name}.weight", shape)
                if biases:
                    add(p + f"mlp.{name}.bias", (shape[0],))
            if biases:
                add(p + "self_attn.o_proj.bias", (d,))
        add("model.norm.weight", (d,), 1.0)
        if kind != "qwen2":
            add("lm_head.weight", (VOCAB, d))
        config = {"model_type": "qwen2" if kind == "qwen2" else "llama", "hidden_size": d,
                  "num_attention_heads": heads, "num_key_value_heads": kv, "num_hidden_layers": layers,
                  "intermediate_size": inner, "vocab_size": VOCAB, "max_position_embeddings": positions,
                  "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
                  "tie_word_embeddings": kind == "qwen2"}
        if biases:
            config.update({"attention_bias": True, "mlp_bias": True, "rope_theta": 100.0,
                           "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                                            "high_freq_factor": 4.0, "original_max_position_embeddings": 16}})
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), t)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f)


def run_script(path):
    """The script run in this process (torch is imported once), its standard output parsed."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    arguments = sys.argv
    sys.argv = [path]
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    finally:
        sys.argv = arguments
    out.flush()
    return json.loads(out.buffer.getvalue())


def flattened(grid):
    if isinstance(grid, list):
        return [value for item in grid for value in flattened(item)]
    return [grid]


def difference(ours, theirs):
    """The largest difference of the metrics and grids; the labels and ids must be equal."""
    for key in ("what", "method", "rows", "cols", "positions"):
        if ours.get(key) != theirs.get(key):
            raise SystemExit(f"{key} differs: {ours.get(key)} and {theirs.get(key)}")
    for prompt in ("clean", "corrupt"):
        if ours[prompt]["ids"] != theirs[prompt]["ids"] or ours[prompt]["tokens"] != theirs[prompt]["tokens"]:
            raise SystemExit(f"the {prompt} prompt differs")
    worst = max(abs(ours[p]["metric"] - theirs[p]["metric"]) for p in ("clean", "corrupt"))
    # A normalized cell is a value divided by m_clean − m_corrupt, and so is its difference: compared in the
    # metric's units, at the same tolerance as the values.
    span = abs(ours["clean"]["metric"] - ours["corrupt"]["metric"])
    for key, scale in (("values", 1.0), ("normalized", span)):
        a, b = flattened(ours[key]), flattened(theirs[key])
        if len(a) != len(b):
            raise SystemExit(f"{key}: {len(a)} cells and {len(b)}")
        worst = max([worst] + [abs(x - y) * scale for x, y in zip(a, b)])
    return worst


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qkvlab", default="build/release/app/qkvlab")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(61)
    worst = 0.0
    with tempfile.TemporaryDirectory() as work:
        for kind in ("gpt2", "llama", "qwen2", "llama-biases"):
            folder = os.path.join(work, kind)
            write_model(folder, kind, generator)
            clean = torch.randint(0, VOCAB, (7,), generator=generator).tolist()
            corrupt = list(clean)
            corrupt[2], corrupt[4] = (clean[2] + 5) % VOCAB, (clean[4] + 9) % VOCAB
            answer, wrong = clean[6], (clean[6] + 1) % VOCAB
            kind_worst = 0.0
            for site in SITES:
                for method in ("exact", "attribution"):
                    script = os.path.join(work, f"{kind}-{site}-{method}.py")
                    positions = "3..3" if site in ("attn_out", "head_out_pos") else "1..6"  # one position too
                    ours = subprocess.run(
                        [args.qkvlab, "patch", folder, "--clean-ids", ",".join(map(str, clean)), "--corrupt-ids",
                         ",".join(map(str, corrupt)), "--answer-id", str(answer), "--wrong-id", str(wrong),
                         "--what", site, "--method", method, "--positions", positions, "--script", script],
                        check=True, capture_output=True).stdout
                    kind_worst = max(kind_worst, difference(json.loads(ours), run_script(script)))
            # One script as a user runs it: its own process, the model folder given on the command line.
            alone = subprocess.run([sys.executable, os.path.join(work, f"{kind}-head_q-attribution.py"), folder],
                                   check=True, capture_output=True).stdout
            ours = subprocess.run(
                [args.qkvlab, "patch", folder, "--clean-ids", ",".join(map(str, clean)), "--corrupt-ids",
                 ",".join(map(str, corrupt)), "--answer-id", str(answer), "--wrong-id", str(wrong), "--what",
                 "head_q", "--method", "attribution", "--positions", "1..6"], check=True, capture_output=True).stdout
            kind_worst = max(kind_worst, difference(json.loads(ours), json.loads(alone)))
            print(f"{kind:12}  {len(SITES)} sites × 2 methods  max |qkvlab − script| {kind_worst:.2e}")
            worst = max(worst, kind_worst)
    print(f"largest difference {worst:.2e} (tolerance {args.tolerance:.0e})")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
