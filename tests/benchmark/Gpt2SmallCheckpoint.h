// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The GPT-2-small-shaped checkpoint the model benchmarks open (124M random F32 weights of GPT-2's initial
// scale), and the token ids they run it on. compare_peers.py builds its PyTorch peers with the same shapes.

#include "EigenTypes.h"
#include "Safetensors.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace gpt2small {

constexpr qkv::Index dModel = 768, heads = 12, layers = 12, inner = 3072, vocab = 50257, positions = 1024;
constexpr qkv::Index headDim = dModel / heads;

/// Writes config.json and model.safetensors into `folder` (created when missing).
inline void writeCheckpoint(const std::filesystem::path& folder)
{
    const auto d = std::uint64_t(dModel), i = std::uint64_t(inner);
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    const auto tensor = [&state](const std::string& name, std::vector<std::uint64_t> shape,
                                 double centre = 0.0) {
        std::uint64_t count = 1;
        for (std::uint64_t s : shape)
            count *= s;
        qkv::SafetensorsTensor t{name, "F32", std::move(shape), std::vector<double>(count)};
        for (double& v : t.values) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            v = centre + (double(state >> 11) * 0x1p-53 - 0.5) * 0.04;
        }
        return t;
    };
    std::filesystem::create_directories(folder);
    std::vector<qkv::SafetensorsTensor> tensors;
    tensors.push_back(tensor("wte.weight", {std::uint64_t(vocab), d}));
    tensors.push_back(tensor("wpe.weight", {std::uint64_t(positions), d}));
    for (qkv::Index l = 0; l < layers; ++l) {
        const std::string p = "h." + std::to_string(l) + ".";
        tensors.push_back(tensor(p + "ln_1.weight", {d}, 1.0));
        tensors.push_back(tensor(p + "ln_1.bias", {d}));
        tensors.push_back(tensor(p + "attn.c_attn.weight", {d, 3 * d}));
        tensors.push_back(tensor(p + "attn.c_attn.bias", {3 * d}));
        tensors.push_back(tensor(p + "attn.c_proj.weight", {d, d}));
        tensors.push_back(tensor(p + "attn.c_proj.bias", {d}));
        tensors.push_back(tensor(p + "ln_2.weight", {d}, 1.0));
        tensors.push_back(tensor(p + "ln_2.bias", {d}));
        tensors.push_back(tensor(p + "mlp.c_fc.weight", {d, i}));
        tensors.push_back(tensor(p + "mlp.c_fc.bias", {i}));
        tensors.push_back(tensor(p + "mlp.c_proj.weight", {i, d}));
        tensors.push_back(tensor(p + "mlp.c_proj.bias", {d}));
    }
    tensors.push_back(tensor("ln_f.weight", {d}, 1.0));
    tensors.push_back(tensor("ln_f.bias", {d}));
    qkv::writeSafetensors((folder / "model.safetensors").string(), tensors);
    std::ofstream(folder / "config.json") << "{\"model_type\": \"gpt2\", \"n_embd\": 768, \"n_head\": 12, "
                                             "\"n_layer\": 12, \"n_positions\": 1024, \"vocab_size\": 50257, "
                                             "\"layer_norm_epsilon\": 1e-05, \"activation_function\": "
                                             "\"gelu_new\"}";
}

/// n token ids spread over the vocabulary (compare_peers.py's PyTorch peers use the same ones).
inline std::vector<std::int64_t> someIds(qkv::Index n)
{
    std::vector<std::int64_t> ids(static_cast<std::size_t>(n));
    for (std::size_t k = 0; k < ids.size(); ++k)
        ids[k] = std::int64_t((k * 7919) % std::size_t(vocab));
    return ids;
}

/// qkv_bench's checkpoint: written to a temporary folder on first use, removed at exit (bench_model.cpp).
const std::string& checkpointFolder();

} // namespace gpt2small
