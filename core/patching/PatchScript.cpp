// SPDX-License-Identifier: GPL-3.0-or-later
#include "PatchScript.h"

#include "Error.h"
#include "JsonText.h"
#include "ModelConfig.h"

namespace qkv {

namespace {

// The script after its settings, in three parts. It reads config.json itself, so one text serves every
// model of both families.

// The safetensors reader and RoPE's frequencies.
constexpr const char* safetensorsReader = R"py(
DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    """Every tensor of a safetensors file as float64: an 8-byte header length, a JSON header, the bytes."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] not in DTYPES:
            continue
        begin, end = info["data_offsets"]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[info["dtype"]]) if end > begin \
            else torch.zeros(0, dtype=DTYPES[info["dtype"]])
        tensors[name] = flat.reshape(info["shape"]).to(torch.float64)
    return tensors


def read_weights(folder):
    """model.safetensors, or the shards model.safetensors.index.json lists."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.exists(single):
        return read_safetensors(single)
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    tensors = {}
    for shard in shards:
        tensors.update(read_safetensors(os.path.join(folder, shard)))
    return tensors


def rope_frequencies(dh, base, scaling):
    """Frequency r of the pair (r, r + dh/2): base^(-2r/dh), with linear or llama3 scaling."""
    kind = "default"
    if isinstance(scaling, dict):
        kind = scaling.get("rope_type", scaling.get("type", "default"))
    frequencies = []
    for r in range(dh // 2):
        theta = math.pow(base, -2.0 * r / dh)
        if kind == "linear":
            theta /= scaling["factor"]
        elif kind == "llama3":
            factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
            wavelength, original = 2.0 * math.pi / theta, scaling["original_max_position_embeddings"]
            if wavelength > original / low:
                theta /= factor
            elif not wavelength < original / high:
                smooth = (original / wavelength - low) / (high - low)
                theta = (1.0 - smooth) * theta / factor + smooth * theta
        frequencies.append(theta)
    return torch.tensor(frequencies, dtype=torch.float64)
)py";

// The model, every activation a hook.
constexpr const char* transformerModel = R"py(
class Transformer:
    """The model of a Hugging Face folder (GPT-2 or LLaMA family) in float64, every activation hookable."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        w = read_weights(folder)
        self.gpt2 = c["model_type"] == "gpt2"
        if self.gpt2 and "transformer.wte.weight" in w:
            w = {name[len("transformer."):] if name.startswith("transformer.") else name: value
                 for name, value in w.items()}
        self.w = w
        if self.gpt2:
            self.d, self.heads, self.layers = c["n_embd"], c["n_head"], c["n_layer"]
            self.kv_heads, self.eps = self.heads, c["layer_norm_epsilon"]
            self.dh = self.d // self.heads
            self.unembedding = w["wte.weight"]
        else:
            self.d, self.heads, self.layers = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
            self.kv_heads = c.get("num_key_value_heads") or self.heads
            self.dh = c.get("head_dim") or self.d // self.heads
            self.eps = c["rms_norm_eps"]
            llama = c["model_type"] == "llama"
            self.qkv_bias = c["model_type"] == "qwen2" or (llama and c.get("attention_bias", False))
            self.output_bias = llama and c.get("attention_bias", False)
            self.mlp_bias = llama and c.get("mlp_bias", False)
            self.frequencies = rope_frequencies(self.dh, c.get("rope_theta") or 10000.0, c.get("rope_scaling"))
            self.unembedding = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        self.mlp = c.get("qkvlab_mlp", True) is not False

    def norm(self, x, name):
        if self.gpt2:
            return torch.nn.functional.layer_norm(x, (self.d,), self.w[name + ".weight"], self.w[name + ".bias"],
                                                  self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w[name + ".weight"]

    def linear(self, x, name, bias):
        """HF's nn.Linear (weight outputs × inputs)."""
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if bias else y

    def rope(self, x):
        """Rotates dimension r with r + dh/2 by position × frequency r (x: n × heads × dh)."""
        angle = torch.arange(x.shape[0], dtype=torch.float64)[:, None] * self.frequencies[None, :]
        cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]
        first, second = x[..., : self.dh // 2], x[..., self.dh // 2:]
        return torch.cat([first * cos - second * sin, first * sin + second * cos], -1)

    def attention_inputs(self, l, a):
        """q (n × heads × dh), k and v (n × kv heads × dh), after biases and RoPE."""
        n = a.shape[0]
        if self.gpt2:
            q, k, v = (a @ self.w[f"h.{l}.attn.c_attn.weight"] + self.w[f"h.{l}.attn.c_attn.bias"]).split(self.d, -1)
        else:
            p = f"model.layers.{l}.self_attn."
            q, k, v = (self.linear(a, p + name, self.qkv_bias) for name in ("q_proj", "k_proj", "v_proj"))
        q = q.reshape(n, self.heads, self.dh)
        k = k.reshape(n, self.kv_heads, self.dh)
        v = v.reshape(n, self.kv_heads, self.dh)
        if not self.gpt2:
            q, k = self.rope(q), self.rope(k)
        return q, k, v

    def output(self, l, z):
        if self.gpt2:
            return z @ self.w[f"h.{l}.attn.c_proj.weight"] + self.w[f"h.{l}.attn.c_proj.bias"]
        return self.linear(z, f"model.layers.{l}.self_attn.o_proj", self.output_bias)

    def feed_forward(self, l, h):
        if self.gpt2:
            m = self.norm(h, f"h.{l}.ln_2")
            u = torch.nn.functional.gelu(m @ self.w[f"h.{l}.mlp.c_fc.weight"] + self.w[f"h.{l}.mlp.c_fc.bias"],
                                         approximate="tanh")
            return u @ self.w[f"h.{l}.mlp.c_proj.weight"] + self.w[f"h.{l}.mlp.c_proj.bias"]
        p = f"model.layers.{l}."
        m = self.norm(h, p + "post_attention_layernorm")
        gate = torch.nn.functional.silu(self.linear(m, p + "mlp.gate_proj", self.mlp_bias))
        return self.linear(gate * self.linear(m, p + "mlp.up_proj", self.mlp_bias), p + "mlp.down_proj",
                           self.mlp_bias)

    def logits(self, ids, replace=None, record=None, start=0, resid=None, grad=False):
        """The logits (n × vocab). `replace` maps a hook (name, layer) to a function of its value; `record`
        receives every hook's value (with its gradient kept when `grad`); the run starts at layer `start`
        from the residual `resid` when given."""
        n = len(ids)

        def hook(name, x):
            if replace is not None and name in replace:
                x = replace[name](x)
            if record is not None:
                if grad:
                    x.retain_grad()
                record[name] = x
            return x

        if resid is None:
            h = self.w["wte.weight" if self.gpt2 else "model.embed_tokens.weight"][torch.tensor(ids)]
            if self.gpt2:
                h = h + self.w["wpe.weight"][:n]
            h = h.detach().requires_grad_(grad)
        else:
            h = resid
        mask = torch.ones(n, n, dtype=torch.bool).tril()
        group = self.heads // self.kv_heads
        for l in range(start, self.layers):
            h = hook(("resid_pre", l), h)
            q, k, v = self.attention_inputs(l, self.norm(h, f"h.{l}.ln_1" if self.gpt2
                                                          else f"model.layers.{l}.input_layernorm"))
            q, k, v = hook(("q", l), q), hook(("k", l), k), hook(("v", l), v)
            scores = torch.einsum("qhd,khd->hqk", q, k.repeat_interleave(group, 1)) / math.sqrt(self.dh)
            pattern = hook(("pattern", l), scores.masked_fill(~mask, float("-inf")).softmax(-1))
            z = hook(("z", l), torch.einsum("hqk,khd->qhd", pattern, v.repeat_interleave(group, 1)))
            h = h + hook(("attn_out", l), self.output(l, z.reshape(n, self.heads * self.dh)))
            if self.mlp:
                h = h + hook(("mlp_out", l), self.feed_forward(l, h))
        final = self.norm(h, "ln_f" if self.gpt2 else "model.norm")
        return final @ self.unembedding.T
)py";

// The grid and the JSON.
constexpr const char* patchingMain = R"py(
# Each site: its hook, and the axis of a grid column ("position", "head", "kv", "head_position").
SITES = {"resid_pre": ("resid_pre", "position"), "attn_out": ("attn_out", "position"),
         "mlp_out": ("mlp_out", "position"), "head_out": ("z", "head"), "head_out_pos": ("z", "head_position"),
         "head_pattern": ("pattern", "head"), "head_q": ("q", "head"), "head_k": ("k", "kv"),
         "head_v": ("v", "kv")}


def cells(model, site, first, last):
    """Every cell of the grid in row-major order: (layer, index into the hook's value)."""
    hook, axis = SITES[site]
    for l in range(model.layers):
        if axis == "position":
            yield from ((l, (p,)) for p in range(first, last + 1))
        elif axis == "head_position":
            yield from ((l, (p, h)) for h in range(model.heads) for p in range(first, last + 1))
        else:
            count = model.heads if axis == "head" else model.kv_heads
            yield from ((l, (g,) if hook == "pattern" else (slice(None), g)) for g in range(count))


def metric(logits):
    return (logits[-1, SETTINGS["answer"]] - logits[-1, SETTINGS["wrong"]]).item()


def patched_value(clean_value, index):
    def replace(x):
        y = x.clone()
        y[index] = clean_value[index]
        return y
    return replace


def patch_grid(model, clean, corrupt, m_corrupt, site, method, first, last):
    hook = SITES[site][0]
    values = []
    if method == "attribution":
        record = {}
        logits = model.logits(SETTINGS["corrupt"]["ids"], record=record, grad=True)
        (logits[-1, SETTINGS["answer"]] - logits[-1, SETTINGS["wrong"]]).backward()
        for l, index in cells(model, site, first, last):
            a = record[(hook, l)]
            delta = clean[(hook, l)][index] - a.detach()[index]
            values.append(m_corrupt + (delta * a.grad[index]).sum().item())
        return values
    for l, index in cells(model, site, first, last):
        replace = {(hook, l): patched_value(clean[(hook, l)], index)}
        values.append(metric(model.logits(SETTINGS["corrupt"]["ids"], replace=replace, start=l,
                                          resid=corrupt[("resid_pre", l)])))
    return values


def nested(flat, rows, cols, depth):
    if "positions" not in SETTINGS:
        return [flat[r * cols: (r + 1) * cols] for r in range(rows)]
    return [[flat[(r * cols + c) * depth: (r * cols + c + 1) * depth] for c in range(cols)] for r in range(rows)]


def main():
    torch.set_default_dtype(torch.float64)
    folder = sys.argv[1] if len(sys.argv) > 1 else SETTINGS["model"]
    model = Transformer(folder)
    clean, corrupt = {}, {}
    with torch.no_grad():
        m_clean = metric(model.logits(SETTINGS["clean"]["ids"], record=clean))
        m_corrupt = metric(model.logits(SETTINGS["corrupt"]["ids"], record=corrupt))
    if abs(m_clean - m_corrupt) < 1e-9 * max(1.0, abs(m_clean)):
        sys.exit("clean and corrupted give the same logit difference")
    site, method = SETTINGS["what"], SETTINGS["method"]
    if site == "mlp_out" and not model.mlp:
        sys.exit("this model has no MLP: mlp_out has nothing to patch")
    first, last = SETTINGS["first_position"], SETTINGS["last_position"]
    if method == "exact":
        with torch.no_grad():
            values = patch_grid(model, clean, corrupt, m_corrupt, site, method, first, last)
    else:
        values = patch_grid(model, clean, corrupt, m_corrupt, site, method, first, last)
    normalized = [(v - m_corrupt) / (m_clean - m_corrupt) for v in values]
    rows, cols = len(SETTINGS["rows"]), len(SETTINGS["cols"])
    depth = len(values) // (rows * cols)
    result = {"what": site, "method": method,
              "clean": {"ids": SETTINGS["clean"]["ids"], "tokens": SETTINGS["clean"]["tokens"], "metric": m_clean},
              "corrupt": {"ids": SETTINGS["corrupt"]["ids"], "tokens": SETTINGS["corrupt"]["tokens"],
                          "metric": m_corrupt},
              "rows": SETTINGS["rows"], "cols": SETTINGS["cols"]}
    if "positions" in SETTINGS:
        result["positions"] = SETTINGS["positions"]
    result["values"] = nested(values, rows, cols, depth)
    result["normalized"] = nested(normalized, rows, cols, depth)
    sys.stdout.buffer.write((json.dumps(result, ensure_ascii=False, separators=(",", ":")) + "\n").encode())


if __name__ == "__main__":
    main()
)py";

/// `text` (ASCII: JSON written with every other character escaped) as a Python string literal.
std::string pythonStringLiteral(const std::string& text)
{
    std::string literal = "\"";
    for (char c : text) {
        if (c == '\\' || c == '"')
            literal += '\\';
        literal += c;
    }
    return literal + "\"";
}

json::Json prompt(const std::vector<std::int64_t>& ids, const std::vector<std::string>& tokens)
{
    return json::Json{{"ids", ids}, {"tokens", tokens}};
}

std::string settingsJson(const PatchScriptRequest& request)
{
    json::Json settings{{"model", request.modelFolder},
                        {"clean", prompt(request.pair.clean, request.cleanTokens)},
                        {"corrupt", prompt(request.pair.corrupt, request.corruptTokens)},
                        {"answer", request.pair.answer},
                        {"wrong", request.pair.wrong},
                        {"what", patchSiteName(request.site)},
                        {"method", patchMethodName(request.method)},
                        {"first_position", request.firstPosition},
                        {"last_position", request.lastPosition},
                        {"rows", request.rows},
                        {"cols", request.cols}};
    if (request.site == PatchSite::HeadOutPos)
        settings["positions"] = request.positions;
    // ASCII only, so that the literal means the same whatever encoding the script is read in.
    return settings.dump(-1, ' ', true, json::Json::error_handler_t::replace);
}

} // namespace

std::string patchScript(const PatchScriptRequest& request, const ModelConfig& config)
{
    if (config.attentionNormalizer.type != NormalizerType::Softmax)
        throw Error(std::string("the script rebuilds softmax attention only, and this model's heads "
                                "normalize with ") +
                    toString(config.attentionNormalizer.type));
    if (config.slidingWindow > 0)
        throw Error("the script does not rebuild sliding-window attention (sliding_window " +
                    std::to_string(config.slidingWindow) + ")");
    std::string script =
        "#!/usr/bin/env python3\n"
        "# Written by qkvlab patch: recomputes its " +
        patchSiteName(request.site) + " grid (" + patchMethodName(request.method) +
        " patching)\n# in float64 from the model folder and prints the same JSON.\n"
        "# Needs PyTorch only. Usage: python3 SCRIPT [MODEL_FOLDER]\n"
        "# The metric is logit[answer] - logit[wrong] at the last position; a cell's value is "
        "the\n# metric with that activation of the corrupted run replaced by the clean run's "
        "(exact), or its\n# first-order estimate m_corrupt + sum((a_clean - a_corrupt) * "
        "dm/da) at the corrupted run\n# (attribution); normalized = (value - m_corrupt) / "
        "(m_clean - m_corrupt).\n\n"
        "import json\nimport math\nimport os\nimport struct\nimport sys\n\nimport torch\n\n"
        "SETTINGS = json.loads(" +
        pythonStringLiteral(settingsJson(request)) + ")\n\n";
    script += safetensorsReader;
    script += "\n\n\n";
    script += transformerModel;
    script += "\n\n\n";
    script += patchingMain;
    script += "\n";
    return script;
}

} // namespace qkv
