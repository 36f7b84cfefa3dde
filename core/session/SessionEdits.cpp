// SPDX-License-Identifier: GPL-3.0-or-later
#include "SessionEdits.h"

#include "Error.h"
#include "Masks.h"
#include "NumpyRandom.h"
#include "Positions.h"

#include <algorithm>
#include <set>
#include <utility>

namespace qkv {

namespace {

// Each new matrix gets its own seed, so two matrices resized together do not receive equal entries. NumPy's
// seeds are 32 bits wide, so its derived seeds are kept to 32 bits.
InitializerSpec derived(const InitializerSpec& init, std::uint64_t salt)
{
    InitializerSpec spec = init;
    spec.seed = init.seed * 0x9E3779B97F4A7C15ull + salt;
    if (init.kind == Initializer::NumpyLegacy)
        spec.seed &= NumpyRandom::maxSeed;
    return spec;
}

template <typename MatrixType>
MatrixType
insertRow(const MatrixType& m, Index at,
          const Eigen::Ref<const Eigen::Matrix<typename MatrixType::Scalar, 1, Eigen::Dynamic>>& row)
{
    MatrixType out(m.rows() + 1, m.cols());
    out.topRows(at) = m.topRows(at);
    out.row(at) = row;
    out.bottomRows(m.rows() - at) = m.bottomRows(m.rows() - at);
    return out;
}

template <typename MatrixType> MatrixType removeRow(const MatrixType& m, Index at)
{
    MatrixType out(m.rows() - 1, m.cols());
    out.topRows(at) = m.topRows(at);
    out.bottomRows(m.rows() - at - 1) = m.bottomRows(m.rows() - at - 1);
    return out;
}

template <typename MatrixType> MatrixType moveRow(const MatrixType& m, Index from, Index to)
{
    MatrixType out = m;
    if (from < to)
        for (Index r = from; r < to; ++r)
            out.row(r) = m.row(r + 1);
    else
        for (Index r = to; r < from; ++r)
            out.row(r + 1) = m.row(r);
    out.row(to) = m.row(from);
    return out;
}

template <typename T> void moveItem(std::vector<T>& items, Index from, Index to)
{
    T item = items[static_cast<std::size_t>(from)];
    items.erase(items.begin() + from);
    items.insert(items.begin() + to, item);
}

// In self-attention there is one sequence: a context-side edit is a query-side edit (mask rows and columns).
Side sideOf(const Session& s, Side side)
{
    return s.context ? side : Side::Query;
}

// The custom mask follows the tokens: rows are queries, columns are keys.
bool queryRowsOf(Side side)
{
    return side == Side::Query;
}
bool keyColumnsOf(const Session& s, Side side)
{
    return side == Side::Context || !s.context;
}

} // namespace

Matrix resizedMatrix(const Matrix& m, Index rows, Index cols, const InitializerSpec& init)
{
    Matrix out = initializeMatrix(init, rows, cols);
    const Index keepRows = std::min(rows, m.rows()), keepCols = std::min(cols, m.cols());
    out.topLeftCorner(keepRows, keepCols) = m.topLeftCorner(keepRows, keepCols);
    return out;
}

// A bias follows its dimension: kept entries keep their values, new ones are 0 (no shift), and a head
// without the bias stays without it.
Vector resizedBias(const Vector& bias, Index size)
{
    if (bias.size() == 0)
        return bias;
    Vector out = Vector::Zero(size);
    const Index keep = std::min(size, bias.size());
    out.head(keep) = bias.head(keep);
    return out;
}

void insertToken(Session& s, Side side, Index at, const std::string& text, const InitializerSpec& init)
{
    side = sideOf(s, side);
    const bool context = side == Side::Context && s.context;
    Matrix& embeddings = context ? s.context->Z : s.X;
    std::vector<std::string>& tokens = context ? s.context->tokens : s.tokens;
    std::vector<bool>& pad = context ? s.context->pad : s.pad;
    // The seed varies with the position, the length and the side, so tokens added one after another get
    // different embeddings, and the same insertion (a redo) the same one.
    const std::uint64_t salt = 0x5EED0000ull + static_cast<std::uint64_t>(tokens.size()) * 4099u +
                               static_cast<std::uint64_t>(at) * 2u + (context ? 1u : 0u);
    const RowVector row = initializeMatrix(derived(init, salt), 1, embeddings.cols()).row(0);
    embeddings = insertRow(embeddings, at, row);
    // A learned table needs a row for every position: one more, at 0 (no shift), when the side outgrows it.
    Matrix& P = s.positions.P;
    if (P.size() > 0 && P.rows() < embeddings.rows() && P.rows() < Limits::maxTokens)
        P = insertRow(P, P.rows(), RowVector::Zero(P.cols()));
    tokens.insert(tokens.begin() + at, text);
    pad.insert(pad.begin() + at, false);
    if (s.mask.allowed.size() > 0) {
        if (queryRowsOf(side))
            s.mask.allowed = insertRow(s.mask.allowed, at, MaskMatrix::Ones(1, s.mask.allowed.cols()).row(0));
        if (keyColumnsOf(s, side)) {
            const MaskMatrix transposed = s.mask.allowed.transpose();
            s.mask.allowed =
                insertRow<MaskMatrix>(transposed, at, MaskMatrix::Ones(1, transposed.cols()).row(0))
                    .transpose();
        }
    }
}

void removeToken(Session& s, Side side, Index at)
{
    side = sideOf(s, side);
    const bool context = side == Side::Context && s.context;
    Matrix& embeddings = context ? s.context->Z : s.X;
    std::vector<std::string>& tokens = context ? s.context->tokens : s.tokens;
    std::vector<bool>& pad = context ? s.context->pad : s.pad;
    embeddings = removeRow(embeddings, at);
    tokens.erase(tokens.begin() + at);
    pad.erase(pad.begin() + at);
    if (s.mask.allowed.size() > 0) {
        if (queryRowsOf(side))
            s.mask.allowed = removeRow(s.mask.allowed, at);
        if (keyColumnsOf(s, side)) {
            const MaskMatrix transposed = s.mask.allowed.transpose();
            s.mask.allowed = removeRow<MaskMatrix>(transposed, at).transpose();
        }
    }
}

void moveToken(Session& s, Side side, Index from, Index to)
{
    if (from == to)
        return;
    side = sideOf(s, side);
    const bool context = side == Side::Context && s.context;
    Matrix& embeddings = context ? s.context->Z : s.X;
    embeddings = moveRow(embeddings, from, to);
    moveItem(context ? s.context->tokens : s.tokens, from, to);
    std::vector<bool>& pad = context ? s.context->pad : s.pad;
    const bool flag = pad[static_cast<std::size_t>(from)];
    pad.erase(pad.begin() + from);
    pad.insert(pad.begin() + to, flag);
    if (s.mask.allowed.size() > 0) {
        if (queryRowsOf(side))
            s.mask.allowed = moveRow(s.mask.allowed, from, to);
        if (keyColumnsOf(s, side)) {
            const MaskMatrix transposed = s.mask.allowed.transpose();
            s.mask.allowed = moveRow<MaskMatrix>(transposed, from, to).transpose();
        }
    }
}

namespace {

// Names follow their columns; new columns are unnamed, and names that are all unnamed are none at all.
void resizeNames(std::vector<std::string>& dims, Index dModel)
{
    if (dims.empty())
        return;
    dims.resize(static_cast<std::size_t>(dModel));
    if (std::all_of(dims.begin(), dims.end(), [](const std::string& name) { return name.empty(); }))
        dims.clear();
}

} // namespace

void resizeDModel(Session& s, Index dModel, const InitializerSpec& init)
{
    resizeNames(s.dims, dModel);
    if (s.context)
        resizeNames(s.context->dims, dModel);
    s.X = resizedMatrix(s.X, s.X.rows(), dModel, derived(init, 1));
    if (s.positions.P.size() > 0) { // the learned table's columns follow X's; new ones are 0
        Matrix P = Matrix::Zero(s.positions.P.rows(), dModel);
        const Index keep = std::min(dModel, s.positions.P.cols());
        P.leftCols(keep) = s.positions.P.leftCols(keep);
        s.positions.P = P;
    }
    if (s.context)
        s.context->Z = resizedMatrix(s.context->Z, s.context->Z.rows(), dModel, derived(init, 2));
    std::uint64_t salt = 10;
    for (Head& head : s.heads) {
        head.W_Q = resizedMatrix(head.W_Q, dModel, head.W_Q.cols(), derived(init, salt++));
        head.W_K = resizedMatrix(head.W_K, dModel, head.W_K.cols(), derived(init, salt++));
        head.W_V = resizedMatrix(head.W_V, dModel, head.W_V.cols(), derived(init, salt++));
    }
}

void resizeDK(Session& s, Index dK, const InitializerSpec& init)
{
    std::uint64_t salt = 100;
    for (Head& head : s.heads) {
        head.W_Q = resizedMatrix(head.W_Q, head.W_Q.rows(), dK, derived(init, salt++));
        head.W_K = resizedMatrix(head.W_K, head.W_K.rows(), dK, derived(init, salt++));
        head.b_Q = resizedBias(head.b_Q, dK);
        head.b_K = resizedBias(head.b_K, dK);
        if (head.W_S.size() > 0)
            head.W_S = resizedMatrix(head.W_S, dK, dK, derived(init, salt++));
        if (head.W_a.size() > 0)
            head.W_a = resizedMatrix(head.W_a, dK, head.W_a.cols(), derived(init, salt++));
        if (head.U_a.size() > 0)
            head.U_a = resizedMatrix(head.U_a, dK, head.U_a.cols(), derived(init, salt++));
    }
}

void resizeDV(Session& s, Index dV, const InitializerSpec& init)
{
    const Index oldDV = s.dV();
    std::uint64_t salt = 200;
    for (Head& head : s.heads) {
        head.W_V = resizedMatrix(head.W_V, head.W_V.rows(), dV, derived(init, salt++));
        head.b_V = resizedBias(head.b_V, dV);
    }
    if (s.W_O) {
        // W_O has one block of d_v rows per head; each block grows or shrinks on its own.
        const Index heads = s.headCount();
        Matrix resized(heads * dV, s.W_O->cols());
        for (Index h = 0; h < heads; ++h)
            resized.middleRows(h * dV, dV) =
                resizedMatrix(s.W_O->middleRows(h * oldDV, oldDV), dV, s.W_O->cols(), derived(init, salt++));
        s.W_O = resized;
    }
}

void setHeadCount(Session& s, int heads, const InitializerSpec& init)
{
    const Index dModel = s.dModel(), dK = s.dK(), dV = s.dV();
    const Head model = s.heads.front();
    std::uint64_t salt = 300;
    while (s.headCount() > heads)
        s.heads.pop_back();
    while (s.headCount() < heads) {
        salt += 10 * static_cast<std::uint64_t>(s.headCount());
        Head head;
        head.W_Q = initializeMatrix(derived(init, salt + 1), dModel, dK);
        head.W_K = initializeMatrix(derived(init, salt + 2), dModel, dK);
        head.W_V = initializeMatrix(derived(init, salt + 3), dModel, dV);
        if (model.W_S.size() > 0)
            head.W_S = initializeMatrix(derived(init, salt + 4), dK, dK);
        if (model.W_a.size() > 0) {
            head.W_a = initializeMatrix(derived(init, salt + 5), dK, model.W_a.cols());
            head.U_a = initializeMatrix(derived(init, salt + 6), dK, model.U_a.cols());
            head.v_a = initializeMatrix(derived(init, salt + 7), model.v_a.size(), 1).col(0);
        }
        // New heads have the biases the first head has, at 0.
        head.b_Q = Vector::Zero(model.b_Q.size());
        head.b_K = Vector::Zero(model.b_K.size());
        head.b_V = Vector::Zero(model.b_V.size());
        s.heads.push_back(std::move(head));
    }
    if (s.W_O)
        s.W_O = resizedMatrix(*s.W_O, static_cast<Index>(heads) * dV, s.W_O->cols(), derived(init, salt + 9));
    if (!s.positions.slopes
             .empty()) { // ALiBi slopes set by hand: kept; new heads get Press et al.'s for H heads
        const std::size_t kept = s.positions.slopes.size();
        const std::vector<double> defaults = alibiSlopes(heads);
        s.positions.slopes.resize(static_cast<std::size_t>(heads));
        for (std::size_t h = kept; h < s.positions.slopes.size(); ++h)
            s.positions.slopes[h] = defaults[h];
    }
}

void renameDimension(Session& s, Side side, Index column, const std::string& name)
{
    if (column < 0 || column >= s.dModel())
        throw Error("dims[" + std::to_string(column) +
                    "]: no such column (d_model = " + std::to_string(s.dModel()) + ")");
    std::vector<std::string>& dims = sideOf(s, side) == Side::Context ? s.context->dims : s.dims;
    if (dims.empty())
        dims.assign(static_cast<std::size_t>(s.dModel()), std::string());
    dims[static_cast<std::size_t>(column)] = name;
    resizeNames(dims, s.dModel()); // all unnamed again: none
}

void setCrossAttention(Session& s, bool on)
{
    if (on == s.context.has_value())
        return;
    if (on) {
        s.context = Context{s.tokens, s.X, s.pad, s.dims};
    } else {
        s.context.reset();
        if (s.mask.allowed.size() > 0)
            s.mask.allowed = MaskMatrix::Ones(s.n(), s.n()); // the key side changed shape
    }
}

void ensureScoreParameters(Session& s, const InitializerSpec& init)
{
    const Index dK = s.dK();
    // Every head shares d_a: take it from parameters already there (a file may carry them on some heads
    // only).
    Index dA = dK;
    for (const Head& head : s.heads) {
        if (head.W_a.size() > 0 || head.U_a.size() > 0 || head.v_a.size() > 0) {
            dA = head.W_a.size() > 0   ? head.W_a.cols()
                 : head.U_a.size() > 0 ? head.U_a.cols()
                                       : head.v_a.size();
            break;
        }
    }
    std::uint64_t salt = 400;
    for (Head& head : s.heads) {
        if (s.score == ScoreFunction::General && head.W_S.size() == 0)
            head.W_S = initializeMatrix(derived(init, salt++), dK, dK);
        if (s.score == ScoreFunction::Additive) {
            if (head.W_a.size() == 0)
                head.W_a = initializeMatrix(derived(init, salt++), dK, dA);
            if (head.U_a.size() == 0)
                head.U_a = initializeMatrix(derived(init, salt++), dK, dA);
            if (head.v_a.size() == 0)
                head.v_a = initializeMatrix(derived(init, salt++), dA, 1).col(0);
        }
    }
}

} // namespace qkv

namespace qkv {

namespace {

// NumPy legacy: one stream seeded once, drawn in the order the articles write their code.
void redrawWeightsFromNumpy(Session& s, const InitializerSpec& init)
{
    NumpyRandom random(init.seed);
    const auto draw = [&](Matrix& m) { m = random.randn(m.rows(), m.cols()) * init.scale; };
    for (Head& head : s.heads) {
        draw(head.W_Q);
        draw(head.W_K);
        draw(head.W_V);
        if (head.W_S.size() > 0)
            draw(head.W_S);
        if (head.W_a.size() > 0)
            draw(head.W_a);
        if (head.U_a.size() > 0)
            draw(head.U_a);
        if (head.v_a.size() > 0)
            head.v_a = random.randn(head.v_a.size(), 1).col(0) * init.scale;
    }
    if (s.W_O)
        draw(*s.W_O);
}

} // namespace

void reinitializeWeights(Session& s, const InitializerSpec& init)
{
    if (init.kind == Initializer::NumpyLegacy) {
        redrawWeightsFromNumpy(s, init);
        return;
    }
    std::uint64_t salt = 1000;
    for (Head& head : s.heads) {
        head.W_Q = initializeMatrix(derived(init, salt + 1), head.W_Q.rows(), head.W_Q.cols());
        head.W_K = initializeMatrix(derived(init, salt + 2), head.W_K.rows(), head.W_K.cols());
        head.W_V = initializeMatrix(derived(init, salt + 3), head.W_V.rows(), head.W_V.cols());
        if (head.W_S.size() > 0)
            head.W_S = initializeMatrix(derived(init, salt + 4), head.W_S.rows(), head.W_S.cols());
        if (head.W_a.size() > 0)
            head.W_a = initializeMatrix(derived(init, salt + 5), head.W_a.rows(), head.W_a.cols());
        if (head.U_a.size() > 0)
            head.U_a = initializeMatrix(derived(init, salt + 6), head.U_a.rows(), head.U_a.cols());
        if (head.v_a.size() > 0)
            head.v_a = initializeMatrix(derived(init, salt + 7), head.v_a.size(), 1).col(0);
        salt += 16;
    }
    if (s.W_O)
        s.W_O = initializeMatrix(derived(init, 999), s.W_O->rows(), s.W_O->cols());
}

void reinitializeEmbeddings(Session& s, const InitializerSpec& init)
{
    if (init.kind == Initializer::NumpyLegacy) {
        NumpyRandom random(init.seed);
        s.X = random.randn(s.X.rows(), s.X.cols()) * init.scale;
        if (s.context)
            s.context->Z = random.randn(s.context->Z.rows(), s.context->Z.cols()) * init.scale;
        return;
    }
    s.X = initializeMatrix(derived(init, 2001), s.X.rows(), s.X.cols());
    if (s.context)
        s.context->Z = initializeMatrix(derived(init, 2002), s.context->Z.rows(), s.context->Z.cols());
}

Session blankSession(Index n, Index dModel, Index dK, Index dV, const InitializerSpec& init)
{
    Session s;
    s.title = "Untitled";
    for (Index i = 0; i < n; ++i)
        s.tokens.push_back("tok" + std::to_string(i));
    s.pad.assign(static_cast<std::size_t>(n), false);
    InitializerSpec embeddings = init;
    embeddings.kind = Initializer::Normal;
    embeddings.scale = 1.0;
    s.X = initializeMatrix(embeddings, n, dModel);
    Head head;
    head.W_Q = initializeMatrix(derived(init, 1), dModel, dK);
    head.W_K = initializeMatrix(derived(init, 2), dModel, dK);
    head.W_V = initializeMatrix(derived(init, 3), dModel, dV);
    s.heads.push_back(std::move(head));
    return s;
}

void setScoreFunction(Session& session, ScoreFunction score, const InitializerSpec& init)
{
    session.score = score;
    session.scale = defaultScale(score);
    ensureScoreParameters(session, init);
}

void setMaskType(Session& session, MaskType type)
{
    session.mask.type = type;
    const MaskMatrix& allowed = session.mask.allowed;
    if (type == MaskType::Custom && (allowed.rows() != session.n() || allowed.cols() != session.m()))
        session.mask.allowed = MaskMatrix::Ones(session.n(), session.m());
    // A window of 1 is the identity mask: the window starts where it shows something.
    if (type == MaskType::Sliding && session.mask.window <= 1)
        session.mask.window = std::max<Index>(1, std::min<Index>(3, session.n()));
}

void setMaskCell(Session& session, Index query, Index key, bool allow)
{
    if (session.mask.type != MaskType::Custom) {
        MaskMatrix pattern(session.n(), session.m());
        for (Index i = 0; i < session.n(); ++i)
            for (Index j = 0; j < session.m(); ++j)
                pattern(i, j) = patternAllows(session.mask, i, j) ? 1 : 0;
        session.mask.type = MaskType::Custom;
        session.mask.allowed = pattern;
    }
    session.mask.allowed(query, key) = allow ? 1 : 0;
}

void setOutputProjection(Session& session, bool on, const InitializerSpec& init, Index dOut)
{
    session.b_O.resize(0); // the output bias belongs to the W_O it was made for
    if (!on) {
        session.W_O.reset();
        return;
    }
    const Index rows = static_cast<Index>(session.headCount()) * session.dV();
    session.W_O = initializeMatrix(init, rows, dOut > 0 ? dOut : session.dModel());
    if (hasBiases(session))
        session.b_O = Vector::Zero(session.W_O->cols());
}

bool hasBiases(const Session& session)
{
    return session.b_O.size() > 0 ||
           std::any_of(session.heads.begin(), session.heads.end(), [](const Head& h) {
               return h.b_Q.size() > 0 || h.b_K.size() > 0 || h.b_V.size() > 0;
           });
}

void setBiases(Session& session, bool on)
{
    const auto zeroUnlessSet = [on](Vector& bias, Index size) {
        if (!on)
            bias.resize(0);
        else if (bias.size() == 0)
            bias = Vector::Zero(size);
    };
    for (Head& head : session.heads) {
        zeroUnlessSet(head.b_Q, head.W_Q.cols());
        zeroUnlessSet(head.b_K, head.W_K.cols());
        zeroUnlessSet(head.b_V, head.W_V.cols());
    }
    if (session.W_O)
        zeroUnlessSet(session.b_O, session.W_O->cols());
    else
        session.b_O.resize(0);
}

void resizeDOut(Session& session, Index dOut, const InitializerSpec& init)
{
    if (session.W_O) {
        session.W_O = resizedMatrix(*session.W_O, session.W_O->rows(), dOut, init);
        session.b_O = resizedBias(session.b_O, dOut);
    }
}

void setPadding(Session& session, Side side, Index at, bool padding)
{
    std::vector<bool>& pad = side == Side::Query ? session.pad : session.context->pad;
    pad[static_cast<std::size_t>(at)] = padding;
}

std::string newTokenName(const Session& session, Side side)
{
    const std::vector<std::string>& tokens = side == Side::Query ? session.tokens : session.context->tokens;
    const std::set<std::string> taken(tokens.begin(), tokens.end());
    std::size_t number = tokens.size();
    while (taken.count("tok" + std::to_string(number)) > 0)
        ++number;
    return "tok" + std::to_string(number);
}

} // namespace qkv
