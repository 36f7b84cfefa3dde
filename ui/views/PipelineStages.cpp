// SPDX-License-Identifier: GPL-3.0-or-later
#include "PipelineStages.h"

#include "Document.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

namespace qkv::ui {

namespace {

constexpr Index perRowColourRows = 32; // weights of more query rows are coloured per row

// The colour range of a stage: symmetric about 0 for signed values, over the cells that are not masked and
// that the stage's image shows (every rowStep-th row and columnStep-th column: all of them up to the image
// limit), so a 4096-token stage is not read in full three times per edit for colours it cannot show.
std::pair<double, double> divergingRange(const Matrix& values, const MaskMatrix* allowed, Index rowStep,
                                         Index columnStep)
{
    double extent = 0;
    if (!allowed && rowStep == 1 && columnStep == 1) {
        if (values.size() > 0)
            extent = values.cwiseAbs().maxCoeff();
    } else {
        for (Index i = 0; i < values.rows(); i += rowStep) { // along the rows, as they lie in memory
            const double* row = values.row(i).data();
            const std::uint8_t* allowedRow = allowed ? allowed->row(i).data() : nullptr;
            for (Index j = 0; j < values.cols(); j += columnStep)
                if (!allowedRow || allowedRow[j] != 0)
                    extent = std::max(extent, std::abs(row[j]));
        }
    }
    if (!std::isfinite(extent) || extent <= 0)
        extent = 1;
    return {-extent, extent};
}

// A mask that forbids nothing colours nothing grey.
bool forbidsSome(const MaskMatrix* allowed)
{
    return allowed && allowed->size() > 0 &&
           std::memchr(allowed->data(), 0, static_cast<std::size_t>(allowed->size())) != nullptr;
}

// Gives the stage its colour range and its image: one pixel per cell, every k-th cell of a very large one.
void paintImage(PipelineStage& stage, const MaskMatrix* forbidden)
{
    const Matrix& values = *stage.values;
    const Index rows = values.rows(), columns = values.cols();
    const Index rowStep = stageImageStep(rows);
    const Index columnStep = stageImageStep(columns);
    if (stage.palette == Palette::Viridis) {
        stage.lower = 0.0;
        stage.upper = 1.0;
    } else {
        std::tie(stage.lower, stage.upper) = divergingRange(values, forbidden, rowStep, columnStep);
    }
    const int width = static_cast<int>((columns + columnStep - 1) / columnStep);
    const int height = static_cast<int>((rows + rowStep - 1) / rowStep);
    stage.image = QImage(std::max(1, width), std::max(1, height), QImage::Format_RGB32);
    const QRgb* table = paletteTable(stage.palette).constData();
    const int tableSize = static_cast<int>(paletteTable(stage.palette).size());
    const double lower = stage.lower;
    const double span = stage.upper - stage.lower;
    const QRgb grey = maskedCellColor().rgb();
    const bool perRow = stage.perRow;
    uchar* const pixels = stage.image.bits(); // detached here, once, not by each thread
    const qsizetype lineBytes = stage.image.bytesPerLine();
    // Lines on the engine's threads (up to 4 n × n stages of a million cells each at n = 1024).
    parallelFor(height, 64, [&](Index firstLine, Index endLine) {
        for (Index y = firstLine; y < endLine; ++y) {
            auto* line = reinterpret_cast<QRgb*>(pixels + y * lineBytes);
            const double* row = values.row(y * rowStep).data();
            double rowLower = lower, rowSpan = span;
            if (perRow) { // weights: 0 to the row's largest (masked weights are 0)
                const double largest = values.row(y * rowStep).maxCoeff();
                rowLower = 0.0;
                rowSpan = largest > 0.0 ? largest : 1.0;
            }
            // paletteIndex((v − lower) / span) with a product instead of a division per cell (the
            // canvas colours up to a million cells per stage); the values are finite.
            const double last = tableSize - 1;
            const double perUnit = last / rowSpan;
            const auto colour = [&](double value) {
                const double t = (value - rowLower) * perUnit;
                return table[static_cast<int>((t > 0.0 ? (t < last ? t : last) : 0.0) + 0.5)];
            };
            if (!forbidden) {
                for (Index x = 0; x < width; ++x)
                    line[x] = colour(row[x * columnStep]);
                continue;
            }
            const std::uint8_t* allowedRow = forbidden->row(y * rowStep).data();
            for (Index x = 0; x < width; ++x) {
                const Index j = x * columnStep;
                line[x] = allowedRow[j] == 0 ? grey : colour(row[j]);
            }
        }
    });
}

QString scoreOperator(ScoreFunction score)
{
    switch (score) {
    case ScoreFunction::Dot:
        return QStringLiteral("Q·Kᵀ");
    case ScoreFunction::General:
        return QStringLiteral("Q·W_S·Kᵀ");
    case ScoreFunction::Additive:
        return QStringLiteral("v_a·tanh(…)");
    case ScoreFunction::Cosine:
        return QStringLiteral("cos(q, k)");
    }
    return QString();
}

} // namespace

Index stageImageStep(Index count)
{
    return std::max<Index>(1, (count + stageImageLimit - 1) / stageImageLimit);
}

QString shapeText(Index rows, Index columns)
{
    return QStringLiteral("%1×%2").arg(rows).arg(columns);
}

QString stageValueText(double value)
{
    // Whole numbers (embeddings and weights of 0 and 1, counts) as they are; the rest as the heatmaps write
    // them.
    if (std::isfinite(value) && value == std::round(value) && std::abs(value) < 1e5)
        return QString::number(static_cast<qint64>(value));
    return Heatmap::formatValue(value);
}

std::pair<int, int> stageHighlight(StageIndices indices, Index query, Index key)
{
    switch (indices) {
    case StageIndices::Tokens:
    case StageIndices::QueryRows:
        return {static_cast<int>(query), -1};
    case StageIndices::KeyRows:
        return {static_cast<int>(key), -1};
    case StageIndices::QueryKey:
        return {static_cast<int>(query), static_cast<int>(key)};
    case StageIndices::Parameters:
        break;
    }
    return {-1, -1};
}

QString PipelineStage::caption() const
{
    return title + QStringLiteral("  ") + shapeText(values->rows(), values->cols());
}

QString PipelineStage::captionOperator() const
{
    return QStringLiteral("  ← ") + operatorTop +
           (operatorBottom.isEmpty() ? QString() : QLatin1Char(' ') + operatorBottom);
}

bool PipelineStage::isMasked(Index row, Index column) const
{
    return allowed && row >= 0 && column >= 0 && row < allowed->rows() && column < allowed->cols() &&
           (*allowed)(row, column) == 0;
}

QString PipelineStage::cellText(Index row, Index column) const
{
    if (allowed && (*allowed)(row, column) == 0)
        return maskedText;
    return stageValueText((*values)(row, column));
}

struct PipelineStages::Context {
    const Session& session;
    const CurrentHeadResult& current;
    const HeadResult& head;
    const Head* parameters; // the session's head (null when the session has fewer heads than the result)
    bool cross;             // cross-attention: keys and values come from Z
    bool positionedX;       // sinusoidal or learned positions were added to X
    bool positionedZ;
    QString keySide; // "Z" or "X"
};

void PipelineStages::build(const Document& document)
{
    // The stages of the last build: those of input matrices that did not change keep their images.
    const std::vector<PipelineStage> built = std::move(m_stages);
    m_stages.clear();
    m_recoloured.clear();
    const std::shared_ptr<const AttentionResult> builtResult = m_result; // what `built`'s stages show
    const CurrentHeadResult current = document.currentHeadResult();
    m_result = current.result;
    m_message = current.error;
    if (!current)
        return;
    const Session& session = document.session();
    const HeadResult& head = *current.head;
    const bool cross = session.context.has_value();
    const Context context{session,
                          current,
                          head,
                          current.index < session.headCount()
                              ? &session.heads[static_cast<std::size_t>(current.index)]
                              : nullptr,
                          cross,
                          m_result->positionedX.rows() == head.Q.rows(),
                          cross && m_result->positionedZ.rows() == head.K.rows(),
                          cross ? QStringLiteral("Z") : QStringLiteral("X")};
    takeLabels(context);
    const std::vector<const Matrix*> unchanged = copyInputs(context);
    addInputStages(context);
    addProjectionStages(context);
    addScoreStages(context);
    addOutputStages(context);
    colourStages(built, unchanged);
    composeHeader(context);
}

void PipelineStages::takeLabels(const Context& context)
{
    const Session& session = context.session;
    m_queries = tokenLabels(session.tokens, context.head.Q.rows());
    m_keys = tokenLabels(session.keyTokens(), context.head.K.rows());
    m_queryDims = dimensionLabels(session.dims, session.dModel());
    m_keyDims = dimensionLabels(session.keyDims(), session.dModel());
}

// The inputs as the result was computed from them (an edit still computing may have changed the session's
// shape: those that do not match are left out). An edit changes one matrix: the others are compared (bit for
// bit, so that a 0 edited to −0 is seen) and, when equal, neither copied nor coloured again. Returns those.
std::vector<const Matrix*> PipelineStages::copyInputs(const Context& context)
{
    std::vector<const Matrix*> unchanged;
    const auto copyIf = [&unchanged](Matrix& target, const Matrix* source, Index rows, Index columns) {
        if (!source || source->rows() != rows || source->cols() != columns) {
            target.resize(0, 0);
        } else if (sameBits(target, *source)) {
            unchanged.push_back(&target);
        } else {
            target = *source;
        }
    };
    const Session& session = context.session;
    const HeadResult& r = context.head;
    const Head* parameters = context.parameters;
    const Index dModel = session.dModel();
    copyIf(m_X, &session.X, r.Q.rows(), dModel);
    copyIf(m_Z, context.cross ? &session.context->Z : nullptr, r.K.rows(), dModel);
    copyIf(m_WQ, parameters ? &parameters->W_Q : nullptr, dModel, r.Q.cols());
    copyIf(m_WK, parameters ? &parameters->W_K : nullptr, dModel, r.K.cols());
    copyIf(m_WV, parameters ? &parameters->W_V : nullptr, dModel, r.V.cols());
    copyIf(m_WO, context.session.W_O ? &*context.session.W_O : nullptr, m_result->concat.cols(),
           m_result->output.cols());
    return unchanged;
}

PipelineStage& PipelineStages::add(const QString& name, const QString& title, const Matrix& values,
                                   StageIndices indices, const QString& top, const QString& bottom)
{
    PipelineStage stage;
    stage.name = name;
    stage.title = title;
    stage.values = &values;
    stage.indices = indices;
    stage.operatorTop = top;
    stage.operatorBottom = bottom;
    m_stages.push_back(stage);
    return m_stages.back();
}

// X and Z, and after each the embeddings with sinusoidal or learned positions added: a stage of their own,
// which the projections then read.
void PipelineStages::addInputStages(const Context& context)
{
    const QString positionType = QLatin1String(toString(context.session.positions.type));
    const StageIndices xIndices = context.cross ? StageIndices::QueryRows : StageIndices::Tokens;
    if (m_X.size() > 0)
        add(QStringLiteral("X"), QStringLiteral("X"), m_X, xIndices);
    if (context.positionedX)
        add(QStringLiteral("X+PE"), QStringLiteral("X+PE"), m_result->positionedX, xIndices,
            QStringLiteral("+ PE"), positionType);
    if (m_Z.size() > 0)
        add(QStringLiteral("Z"), QStringLiteral("Z"), m_Z, StageIndices::KeyRows);
    if (context.positionedZ)
        add(QStringLiteral("Z+PE"), QStringLiteral("Z+PE"), m_result->positionedZ, StageIndices::KeyRows,
            QStringLiteral("+ PE"), positionType);
}

// W_Q → Q, W_K → K, W_V → V: each weight matrix, then the projection written on the arrow into it.
void PipelineStages::addProjectionStages(const Context& context)
{
    const HeadResult& r = context.head;
    const Head* parameters = context.parameters;
    const bool rope = context.session.positions.type == PositionType::Rope;
    const bool keysPositioned = context.cross ? context.positionedZ : context.positionedX;
    const QString keyInput =
        keysPositioned ? QStringLiteral("(%1+PE)").arg(context.keySide) : context.keySide;
    const struct {
        const char* weight;
        const Matrix* parameters;
        const char* output;
        const Matrix* values;
        StageIndices indices;
        QString input;
        const Vector* bias;
        bool rotated;
    } projections[] = {{"W_Q", &m_WQ, "Q", &r.Q, StageIndices::QueryRows,
                        context.positionedX ? QStringLiteral("(X+PE)") : QStringLiteral("X"),
                        parameters ? &parameters->b_Q : nullptr, rope},
                       {"W_K", &m_WK, "K", &r.K, StageIndices::KeyRows, keyInput,
                        parameters ? &parameters->b_K : nullptr, rope},
                       {"W_V", &m_WV, "V", &r.V, StageIndices::KeyRows, keyInput,
                        parameters ? &parameters->b_V : nullptr, false}};
    for (const auto& projection : projections) {
        const QString weight = QLatin1String(projection.weight);
        const QString output = QLatin1String(projection.output);
        if (projection.parameters->size() > 0)
            add(weight, weight, *projection.parameters, StageIndices::Parameters);
        // Below the arrow, what follows the product: the bias, then RoPE's rotation (Q and K only).
        QStringList after;
        if (projection.bias && projection.bias->size() > 0)
            after << QStringLiteral("+ b_") + output;
        if (projection.rotated)
            after << QStringLiteral("RoPE");
        add(output, output, *projection.values, projection.indices,
            projection.input + QStringLiteral("·") + weight, after.join(QStringLiteral(", ")));
    }
}

// Scores → scaled → masked → weights.
void PipelineStages::addScoreStages(const Context& context)
{
    const Session& session = context.session;
    const HeadResult& r = context.head;
    add(QStringLiteral("scores"), tr("scores"), r.scores, StageIndices::QueryKey,
        scoreOperator(session.score), QLatin1String(toString(session.score)));

    const double divisor = scaleDivisor(session.scale, r.Q.cols());
    const QString by = session.scale.kind == Scale::Kind::SqrtDk ? QStringLiteral("÷ √d_k")
                       : session.scale.kind == Scale::Kind::None ? QStringLiteral("÷ 1")
                                                                 : QStringLiteral("÷ c");
    QString scaledBottom =
        session.scale.kind == Scale::Kind::None ? QString() : QStringLiteral("= %1").arg(divisor, 0, 'g', 4);
    if (session.positions.type == PositionType::Alibi) // ALiBi's −m·|i − j| is in the scaled scores
        scaledBottom += (scaledBottom.isEmpty() ? QString() : QStringLiteral(", ")) + QStringLiteral("ALiBi");
    add(QStringLiteral("scaled"), tr("scaled"), r.scaled, StageIndices::QueryKey, by, scaledBottom);

    QString mask = QLatin1String(toString(session.mask.type));
    if (session.mask.type == MaskType::Prefix)
        mask += QStringLiteral(" %1").arg(session.mask.prefixLength);
    else if (session.mask.type == MaskType::Sliding)
        mask += QStringLiteral(" %1").arg(session.mask.window);
    const auto padded = [](const std::vector<bool>& pad) {
        return std::find(pad.begin(), pad.end(), true) != pad.end();
    };
    if (padded(session.pad) || (context.cross && padded(session.context->pad)))
        mask += tr(" + pad");
    PipelineStage& masked =
        add(QStringLiteral("masked"), tr("masked"), r.scaled, StageIndices::QueryKey, tr("mask"), mask);
    masked.allowed = &r.allowed;
    masked.maskedText = QStringLiteral("−∞");

    QString normalizer = QLatin1String(toString(session.normalizer.type));
    if (session.normalizer.type == NormalizerType::Entmax)
        normalizer = QStringLiteral("%1-entmax").arg(session.normalizer.alpha, 0, 'g', 3);
    PipelineStage& weights = add(QStringLiteral("weights"), tr("weights"), r.weights, StageIndices::QueryKey,
                                 normalizer, QStringLiteral("÷ τ = %1").arg(session.temperature, 0, 'g', 4));
    weights.allowed = &r.allowed;
    weights.palette = Palette::Viridis;
    // On one scale of 0 to 1, a causal map of a hundred tokens is mostly one dark colour: a late row
    // spreads its weight over many keys. Past 32 rows each row is coloured against its own largest weight,
    // so where every query looks stays visible; a few rows keep the absolute scale their written values
    // match.
    weights.perRow = r.weights.rows() > perRowColourRows;
}

// The head's output, then with several heads their concatenation, and with W_O the final output.
void PipelineStages::addOutputStages(const Context& context)
{
    const int headCount = context.current.count;
    add(QStringLiteral("output"), tr("output"), context.head.output, StageIndices::QueryRows,
        QStringLiteral("· V"));
    if (headCount > 1)
        add(QStringLiteral("concat"), tr("concat"), m_result->concat, StageIndices::QueryRows, tr("concat"),
            tr("%1 heads").arg(headCount));
    if (m_WO.size() > 0) {
        add(QStringLiteral("W_O"), QStringLiteral("W_O"), m_WO, StageIndices::Parameters);
        add(QStringLiteral("final"), tr("final"), m_result->output, StageIndices::QueryRows,
            QStringLiteral("· W_O"), context.session.b_O.size() > 0 ? QStringLiteral("+ b_O") : QString());
    }
}

bool PipelineStages::isCopy(const Matrix* values) const
{
    return values == &m_X || values == &m_Z || values == &m_WQ || values == &m_WK || values == &m_WV ||
           values == &m_WO;
}

// Colour ranges and images: one pass over each matrix (every k-th cell of a very large one), unless the
// stage shows what the stage before it or its namesake of the last build showed.
void PipelineStages::colourStages(const std::vector<PipelineStage>& built,
                                  const std::vector<const Matrix*>& unchanged)
{
    const PipelineStage* previous = nullptr;
    const MaskMatrix* previousForbidden = nullptr;
    for (PipelineStage& stage : m_stages) {
        // A mask that forbids nothing colours nothing grey (`forbidden` is then null); the masked stage then
        // shows the scaled stage's values in its colours, and shares its image (one n × n image fewer per
        // edit).
        const MaskMatrix* forbidden = forbidsSome(stage.allowed) ? stage.allowed : nullptr;
        const bool sameAsPrevious = previous && previous->values == stage.values &&
                                    previous->palette == stage.palette && !previousForbidden && !forbidden;
        previousForbidden = forbidden;
        if (sameAsPrevious) {
            stage.lower = previous->lower;
            stage.upper = previous->upper;
            stage.image = previous->image; // implicitly shared
            previous = &stage;
            continue;
        }
        previous = &stage;
        // A stage that shows what it showed keeps its image: an input compared when it was copied, a result
        // (the last one is still alive) compared with the last build's, masked cells included (an edit of
        // W_Q changes neither K nor V).
        const auto same = std::find_if(built.begin(), built.end(), [&](const PipelineStage& old) {
            if (old.name != stage.name || old.palette != stage.palette || old.perRow != stage.perRow ||
                old.image.isNull())
                return false;
            if (isCopy(stage.values))
                return old.values == stage.values &&
                       std::find(unchanged.begin(), unchanged.end(), stage.values) != unchanged.end();
            const MaskMatrix* oldForbidden = forbidsSome(old.allowed) ? old.allowed : nullptr;
            return !isCopy(old.values) && sameBits(*old.values, *stage.values) &&
                   (oldForbidden == forbidden ||
                    (oldForbidden && forbidden && sameBits(*oldForbidden, *forbidden)));
        });
        if (same != built.end()) {
            stage.lower = same->lower;
            stage.upper = same->upper;
            stage.image = same->image;
            continue;
        }
        m_recoloured << stage.name;
        paintImage(stage, forbidden);
    }
}

void PipelineStages::composeHeader(const Context& context)
{
    const int headCount = context.current.count;
    m_header = context.session.title.empty() ? QString()
                                             : tr(" · %1").arg(QString::fromStdString(context.session.title));
    if (headCount > 1)
        m_header += tr(" · head %1 of %2").arg(context.current.index + 1).arg(headCount);
    if (m_result->precision == Precision::Float32)
        m_header += tr(" · float32");
    if (context.head.weights.rows() > perRowColourRows)
        m_header += tr(" · weights coloured per row");
}

int PipelineStages::indexOf(const QString& name) const
{
    for (std::size_t s = 0; s < m_stages.size(); ++s)
        if (m_stages[s].name == name)
            return static_cast<int>(s);
    return -1;
}

QStringList PipelineStages::rowLabelsOf(const PipelineStage& stage) const
{
    switch (stage.indices) {
    case StageIndices::Tokens:
    case StageIndices::QueryRows:
    case StageIndices::QueryKey:
        return m_queries;
    case StageIndices::KeyRows:
        return m_keys;
    case StageIndices::Parameters:
        break;
    }
    return {};
}

QStringList PipelineStages::columnLabelsOf(const PipelineStage& stage) const
{
    return stage.indices == StageIndices::QueryKey ? m_keys : QStringList();
}

QString PipelineStages::describeCell(const PipelineStage& stage, Index row, Index column) const
{
    if (row < 0 || column < 0 || row >= stage.values->rows() || column >= stage.values->cols())
        return {};
    QStringList rows = rowLabelsOf(stage), columns = columnLabelsOf(stage);
    // The d_model axis: X's and Z's columns, the rows of the projections.
    const QString& name = stage.name;
    if (name == QLatin1String("X") || name == QLatin1String("X+PE"))
        columns = m_queryDims;
    else if (name == QLatin1String("Z") || name == QLatin1String("Z+PE"))
        columns = m_keyDims;
    else if (name == QLatin1String("W_Q"))
        rows = m_queryDims;
    else if (name == QLatin1String("W_K") || name == QLatin1String("W_V"))
        rows = m_keyDims;
    const auto label = [](const QStringList& labels, Index i) {
        return i < labels.size() ? QStringLiteral("‘%1’").arg(labels.at(static_cast<int>(i)))
                                 : QString::number(i);
    };
    const bool masked = stage.allowed && (*stage.allowed)(row, column) == 0;
    const QString value = masked ? tr("masked") : stageValueText((*stage.values)(row, column));
    return tr("%1 [%2, %3] = %4").arg(stage.title, label(rows, row), label(columns, column), value);
}

} // namespace qkv::ui
