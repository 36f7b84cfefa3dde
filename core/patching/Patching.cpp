// SPDX-License-Identifier: GPL-3.0-or-later
#include "Patching.h"

#include "Error.h"
#include "HookedModel.h"
#include "Model.h"

#include <algorithm>
#include <cmath>

namespace qkv {

using transformer::ActivationCache;
using transformer::HookKind;
using transformer::HookPoint;
using transformer::HookReplacement;
using transformer::HookRequest;

namespace {

/// The metric of a run's logits (every token's at every row): logit[answer] − logit[wrong] at the last row.
template <typename Scalar> double metricOf(const MatrixOf<Scalar>& logits, const PatchPair& pair)
{
    const Index last = logits.rows() - 1;
    return double(logits(last, Index(pair.answer))) - double(logits(last, Index(pair.wrong)));
}

/// The metric of a patched run, which computed only the answer's and the wrong token's logits.
template <typename Scalar> double metricOfPair(const MatrixOf<Scalar>& logits)
{
    return double(logits(0, 0)) - double(logits(0, 1));
}

/// One cell of a grid: the hook it replaces, the head (−1: the whole hook) and the row (−1: every row).
struct Cell {
    HookPoint point;
    Index head = -1, row = -1;
};

} // namespace

struct PatchingRun::Impl {
    PatchPair pair;
    ModelConfig config;
    Index n = 0;
    double clean = 0.0, corrupt = 0.0;

    virtual ~Impl() = default;
    /// m with the cell's activation (its head's columns or rows, its row) taken from the clean run;
    /// `proceed` is asked after each layer (false: qkv::Cancelled).
    virtual double exactCell(const Cell& cell, const std::function<bool()>& proceed) = 0;
    /// Σ (a_clean − a_corrupt) · ∂m/∂a over the cell's elements.
    virtual double attributionCell(const Cell& cell) = 0;
};

namespace {

/// The rows (one head's columns, or its block of rows in the pattern) a cell covers, in a hook's value.
Eigen::Block<Matrix> cellPart(Matrix& value, const Cell& cell, const ModelConfig& c, Index n)
{
    const Index rowsFrom = cell.row < 0 ? 0 : cell.row, rows = cell.row < 0 ? n : 1;
    if (cell.head < 0)
        return value.block(rowsFrom, 0, rows, value.cols());
    if (cell.point.kind == HookKind::Pattern)
        return value.block(cell.head * n + rowsFrom, 0, rows, n);
    return value.block(rowsFrom, cell.head * c.headDim, rows, c.headDim);
}

template <typename Scalar> class HookedPatching final : public PatchingRun::Impl {
public:
    HookedPatching(const Model& model, PatchPair p) : m_model(model)
    {
        pair = std::move(p);
        config = m_model.architecture();
        n = Index(pair.clean.size());
        HookRequest keep;
        for (Index l = 0; l < config.layers; ++l)
            for (PatchSite site : allPatchSites()) {
                const std::string name = transformer::hookName({patchSiteHook(site), l});
                // An attention-only model has no hook_mlp_out.
                if (site != PatchSite::HeadOutPos && transformer::parseHookName(name, config))
                    keep.keep.push_back(name);
            }
        HookRequest cleanRun = keep;
        cleanRun.oneLogitsRow = true;
        cleanRun.logitIds = {pair.answer, pair.wrong};
        m_model.forward(pair.clean, cleanRun);
        clean = metricOfPair(m_model.network().logits());
        m_clean = m_model.network().cache();
        // Every row's logits: attribution's backward pass starts from this run.
        m_model.forward(pair.corrupt, keep);
        corrupt = metricOf(m_model.network().logits(), pair);
        m_corrupt = m_model.network().cache();
        m_holdsCorrupt = true;
    }

    double exactCell(const Cell& cell, const std::function<bool()>& proceed) override
    {
        const std::string name = transformer::hookName(cell.point);
        Matrix& from = m_clean.at(name);
        HookRequest request;
        request.oneLogitsRow = true;
        request.logitIds = {pair.answer, pair.wrong};
        request.proceed = proceed;
        if (cell.head >= 0 && cell.row < 0) { // a whole head: its part alone
            request.replace.push_back({name, Matrix(cellPart(from, cell, config, n)), cell.head});
        } else { // one row: the corrupted value with that row (or head's row) from the clean run
            Matrix value = m_corrupt.at(name);
            cellPart(value, cell, config, n) = cellPart(from, cell, config, n);
            request.replace.push_back({name, std::move(value), -1});
        }
        m_holdsCorrupt = false;
        m_model.restart(request);
        return metricOfPair(m_model.network().logits());
    }

    double attributionCell(const Cell& cell) override
    {
        if (m_contributions.empty()) {
            // One backward pass of m at the corrupted run, to every hook a site reads.
            if (!m_holdsCorrupt)
                m_model.forward(pair.corrupt, HookRequest{});
            m_holdsCorrupt = true;
            transformer::Objective metric;
            metric.kind = transformer::Objective::Kind::LogitDifference;
            metric.position = n - 1;
            metric.tokenA = pair.answer;
            metric.tokenB = pair.wrong;
            std::vector<std::string> names;
            for (const auto& [name, value] : m_corrupt)
                names.push_back(name);
            // (a_clean − a_corrupt) ⊙ ∂m/∂a once per hook; a cell sums its block.
            for (auto& [name, gradient] : m_model.gradients(metric, names))
                m_contributions[name] = (m_clean.at(name) - m_corrupt.at(name)).cwiseProduct(gradient);
        }
        return cellPart(m_contributions.at(transformer::hookName(cell.point)), cell, config, n).sum();
    }

private:
    HookedModel<Scalar> m_model;
    ActivationCache m_clean, m_corrupt;
    ActivationCache m_contributions;
    bool m_holdsCorrupt =
        false; ///< the network's last run is the corrupted prompt's, with every row's logits
};

void checkPrompt(const ModelConfig& c, const std::vector<std::int64_t>& ids, const char* which)
{
    if (ids.empty())
        throw Error(std::string("the ") + which + " prompt has no tokens");
    for (std::size_t i = 0; i < ids.size(); ++i)
        if (ids[i] < 0 || ids[i] >= c.vocabSize)
            throw Error(std::string("the ") + which + " prompt's token " + std::to_string(i) + " (id " +
                        std::to_string(ids[i]) + ") is outside the vocabulary (0 to " +
                        std::to_string(c.vocabSize - 1) + ")");
}

void checkPair(const ModelConfig& c, const PatchPair& pair)
{
    checkPrompt(c, pair.clean, "clean");
    checkPrompt(c, pair.corrupt, "corrupted");
    if (pair.clean.size() != pair.corrupt.size())
        throw Error("the clean prompt has " + std::to_string(pair.clean.size()) +
                    " tokens and the corrupted one " + std::to_string(pair.corrupt.size()) +
                    "; patching needs the same number of tokens in both");
    for (const auto& [id, what] : {std::pair{pair.answer, "answer"}, std::pair{pair.wrong, "wrong"}})
        if (id < 0 || id >= c.vocabSize)
            throw Error(std::string("the ") + what + " token id " + std::to_string(id) +
                        " is outside the vocabulary (0 to " + std::to_string(c.vocabSize - 1) + ")");
    if (pair.answer == pair.wrong)
        throw Error("the answer and the wrong token are the same token (id " + std::to_string(pair.answer) +
                    "); the metric is their logit difference");
}

} // namespace

PatchingRun::PatchingRun(const Model& model, PatchPair pair, Precision precision)
{
    checkPair(model.config(), pair);
    if (precision == Precision::Float32)
        m_impl = std::make_unique<HookedPatching<float>>(model, std::move(pair));
    else
        m_impl = std::make_unique<HookedPatching<double>>(model, std::move(pair));
    const double clean = m_impl->clean, corrupt = m_impl->corrupt;
    if (!std::isfinite(clean) || !std::isfinite(corrupt))
        throw Error("the logits overflow; choose precision float64");
    if (std::abs(clean - corrupt) < 1e-9 * std::max(1.0, std::abs(clean)))
        throw Error("clean and corrupted give the same logit difference (" + std::to_string(clean) +
                    "); nothing can be restored");
}

PatchingRun::~PatchingRun() = default;

double PatchingRun::cleanMetric() const
{
    return m_impl->clean;
}

double PatchingRun::corruptMetric() const
{
    return m_impl->corrupt;
}

const PatchPair& PatchingRun::pair() const
{
    return m_impl->pair;
}

Index PatchingRun::tokens() const
{
    return m_impl->n;
}

Index PatchingRun::layers() const
{
    return m_impl->config.layers;
}

Index PatchingRun::heads() const
{
    return m_impl->config.heads;
}

Index PatchingRun::kvHeads() const
{
    return m_impl->config.kvHeads;
}

PatchGrid PatchingRun::patch(PatchSite site, PatchMethod method, Index firstPosition, Index lastPosition,
                             const PatchProgress& progress, PatchGrid* partial)
{
    const Impl& run = *m_impl;
    const Index n = run.n;
    if (lastPosition < 0)
        lastPosition = n - 1;
    if (patchSiteHasPositions(site) &&
        (firstPosition < 0 || firstPosition > lastPosition || lastPosition >= n))
        throw Error("positions " + std::to_string(firstPosition) + ".." + std::to_string(lastPosition) +
                    " are not within the prompts' " + std::to_string(n) + " tokens (0.." +
                    std::to_string(n - 1) + ")");
    if (site == PatchSite::MlpOut && !run.config.hasMlp())
        throw Error("mlp_out: this model has no MLP (an attention-only model); choose another site");
    PatchGrid local;
    PatchGrid& grid = partial != nullptr ? *partial : local;
    grid = PatchGrid{};
    grid.site = site;
    grid.method = method;
    grid.rows = run.config.layers;
    const Index positions = lastPosition - firstPosition + 1;
    const bool perKeyValueHead = site == PatchSite::HeadK || site == PatchSite::HeadV;
    if (site == PatchSite::HeadOutPos)
        grid.cols = run.config.heads, grid.depth = positions;
    else if (patchSiteHasPositions(site))
        grid.cols = positions;
    else
        grid.cols = perKeyValueHead ? run.config.kvHeads : run.config.heads;
    grid.firstPosition = patchSiteHasPositions(site) ? firstPosition : 0;
    grid.values.assign(std::size_t(grid.cells()), 0.0);
    grid.normalized.assign(std::size_t(grid.cells()), 0.0);
    const double span = run.clean - run.corrupt;
    const HookKind hook = patchSiteHook(site);
    // Asked between the layers of a cell too, so a stop takes effect within a layer.
    const std::function<bool()> proceed = [&] { return !progress || progress(grid.done, grid.cells()); };
    for (Index row = 0; row < grid.rows; ++row) {
        for (Index col = 0; col < grid.cols; ++col) {
            for (Index k = 0; k < grid.depth; ++k) {
                Cell cell{{hook, row}, -1, -1};
                if (site == PatchSite::HeadOutPos)
                    cell.head = col, cell.row = firstPosition + k;
                else if (patchSiteHasPositions(site))
                    cell.row = firstPosition + col;
                else
                    cell.head = col;
                const double value = method == PatchMethod::Exact
                                         ? m_impl->exactCell(cell, proceed)
                                         : run.corrupt + m_impl->attributionCell(cell);
                const Index at = grid.index(row, col, k);
                grid.values[std::size_t(at)] = value;
                grid.normalized[std::size_t(at)] = (value - run.corrupt) / span;
                ++grid.done;
                if (progress && !progress(grid.done, grid.cells()))
                    throw Cancelled();
            }
        }
    }
    return grid;
}

} // namespace qkv
