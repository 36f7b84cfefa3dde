// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// Activation patching between a clean and a corrupted prompt (docs/patching.md), on the hook points of the
/// one transformer (HookPoints.h): the metric m = logit[answer] − logit[wrong] at the last position; exact
/// patching runs the corrupted prompt with one site's activation replaced by the clean run's, recomputed
/// from the layer of the site (the layers below are the corrupted run's); attribution patching estimates
/// every site at once from the two runs and one backward pass of m at the corrupted run, as
/// m_corrupt + Σ (a_clean − a_corrupt) · ∂m/∂a over the site's elements.

#include "EigenTypes.h"
#include "PatchSites.h"
#include "Session.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qkv {

class Model;

/// Told (cells done, cells) while a grid is computed, after each cell and between the layers of a cell;
/// returning false stops it (qkv::Cancelled is thrown). Called on the thread that computes.
using PatchProgress = std::function<bool(Index done, Index total)>;

/// A patching grid: values[(row · cols + col) · depth + k], rows the layers, cols the positions (per-
/// position sites), the heads or the key/value heads; depth the positions of head_out_pos, else 1.
struct PatchGrid {
    PatchSite site = PatchSite::ResidPre;
    PatchMethod method = PatchMethod::Exact;
    Index rows = 0, cols = 0, depth = 1;
    Index firstPosition = 0;        ///< the position of column (or depth index) 0 of a positional axis
    std::vector<double> values;     ///< m_patch, raw
    std::vector<double> normalized; ///< (m_patch − m_corrupt) / (m_clean − m_corrupt)
    Index done = 0;                 ///< cells computed so far (a grid stopped early is partly filled)

    double value(Index row, Index col, Index k = 0) const { return values[std::size_t(index(row, col, k))]; }
    double normalizedValue(Index row, Index col, Index k = 0) const
    {
        return normalized[std::size_t(index(row, col, k))];
    }
    Index index(Index row, Index col, Index k = 0) const { return (row * cols + col) * depth + k; }
    Index cells() const { return rows * cols * depth; }
};

/// What a patching experiment compares.
struct PatchPair {
    std::vector<std::int64_t> clean, corrupt; ///< the same number of tokens, at least 1
    std::int64_t answer = 0, wrong = 0;       ///< the metric's tokens
};

/// Both prompts run once (their activations kept), ready for any number of grids. Runs on the thread that
/// calls it; one grid at a time (not thread-safe).
class PatchingRun {
public:
    /// Throws qkv::Error naming the problem: prompts of different lengths (naming both counts), an id outside
    /// the vocabulary (naming the prompt and position), more tokens than the model's positions, weights that
    /// do not fit in memory, clean and corrupted giving the same metric (within 1e-9·max(1, |m_clean|)).
    PatchingRun(const Model& model, PatchPair pair, Precision precision = Precision::Float64);
    ~PatchingRun();
    PatchingRun(const PatchingRun&) = delete;
    PatchingRun& operator=(const PatchingRun&) = delete;

    double cleanMetric() const;
    double corruptMetric() const;
    const PatchPair& pair() const;
    Index tokens() const;
    Index layers() const;
    Index heads() const;
    Index kvHeads() const;

    /// The grid of `site` by `method`, over positions first … last (inclusive; −1: the last token) for the
    /// sites with a position axis, layer by layer from layer 0. With `partial`, the grid is filled there in
    /// place as the cells are computed (`progress`, called after each cell on the computing thread, may read
    /// it). Throws qkv::Error for positions out of range (naming them and n), qkv::Cancelled when `progress`
    /// returns false (`partial` then holds the cells done).
    PatchGrid patch(PatchSite site, PatchMethod method, Index firstPosition = 0, Index lastPosition = -1,
                    const PatchProgress& progress = {}, PatchGrid* partial = nullptr);

    /// The run's state, defined where it is computed (Patching.cpp).
    struct Impl;

private:
    std::unique_ptr<Impl> m_impl;
};

} // namespace qkv
