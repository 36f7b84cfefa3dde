#include "PipelineView.h"

#include "Document.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "Parallel.h"
#include "PlotFigure.h"

#include <QFontMetricsF>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace qkv::ui {

namespace {

constexpr double margin = 10;          // around the canvas
constexpr double lineGap = 10;         // between two lines of stages
constexpr double plainGap = 12;        // between two stages with no operator between them
constexpr double minimumArrow = 30;    // the shortest arrow
constexpr Index perRowColourRows = 32; // weights of more query rows are coloured per row
constexpr int imageLimit = 1024;       // stage images hold at most this many cells a side (every k-th beyond)
constexpr double minimumTextPixels = 9; // cell values smaller than this are not written
constexpr double minimumMark = 9;       // the selected cell's outline is at least this many pixels across
constexpr Index maximumLabelledTokens = 64;

/// Every how many cells along a side of `count` a stage's image takes one (1 up to imageLimit).
Index imageStep(Index count)
{
    return std::max<Index>(1, (count + imageLimit - 1) / imageLimit);
}

const QColor queryColor(255, 140, 0);
const QColor keyColor(0, 150, 160);
const QColor frameColor(120, 120, 120);
const Matrix emptyMatrix;

QString shapeText(Index rows, Index columns)
{
    return QStringLiteral("%1×%2").arg(rows).arg(columns);
}

// The widget's font in pixels (the canvas is measured in device-independent pixels on every device), a
// little larger on large canvases (a slide).
QFont canvasFont(const QFont& base, QSize size)
{
    QFont font = base;
    const double pixels = base.pixelSize() > 0 ? base.pixelSize() : base.pointSizeF() * 4.0 / 3.0;
    const double grow = std::clamp(std::min(size.width() / 1400.0, size.height() / 800.0), 1.0, 1.5);
    font.setPixelSize(std::max(9, static_cast<int>(std::lround(pixels * grow))));
    return font;
}

QFont withPixels(QFont font, double pixels)
{
    font.setPixelSize(std::max(1, static_cast<int>(std::floor(pixels))));
    return font;
}

// The colour range of a stage: symmetric about 0 for signed values, over the cells that are not masked and
// that the stage's image shows (every rowStep-th row and columnStep-th column: all of them up to imageLimit),
// so a 4096-token stage is not read in full three times per edit for colours it cannot show.
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

} // namespace

QString PipelineView::valueText(double value)
{
    // Whole numbers (embeddings and weights of 0 and 1, counts) as they are; the rest as the heatmaps write
    // them.
    if (std::isfinite(value) && value == std::round(value) && std::abs(value) < 1e5)
        return QString::number(static_cast<qint64>(value));
    return Heatmap::formatValue(value);
}

namespace {

// Cells at most three times as wide as tall, but a stage at least a third as wide as its box is tall (4096
// tokens × 32 dimensions is a readable strip, not a line).
double cellWidthIn(double boxWidth, double boxHeight, double cellHeight, Index columns)
{
    const auto count = static_cast<double>(std::max<Index>(1, columns));
    return std::min(boxWidth / count, std::max(3 * cellHeight, std::min(boxWidth, boxHeight / 3) / count));
}

void drawArrowHead(QPainter& painter, QPointF tip, double size)
{
    QPainterPath head;
    head.moveTo(tip);
    head.lineTo(tip + QPointF(-size, -size / 2));
    head.lineTo(tip + QPointF(-size, size / 2));
    head.closeSubpath();
    painter.fillPath(head, painter.pen().color());
}

} // namespace

PipelineView::PipelineView(Document* document, QWidget* parent) : QWidget(parent), m_document(document)
{
    setObjectName(QStringLiteral("pipelineView"));
    setMouseTracking(true);
    setMinimumSize(120, 90);
    setAutoFillBackground(false);
    // Its What's This text is the window's (ViewHelp), with every other view's.
    connect(m_document, &Document::resultChanged, this, &PipelineView::onResultChanged);
    connect(m_document, &Document::currentHeadChanged, this, &PipelineView::onResultChanged);
    connect(m_document, &Document::sessionChanged, this, [this](Document::Changes changes) {
        if (changes & Document::Tokens)
            onResultChanged();
    });
    connect(m_document, &Document::selectionChanged, this, [this] {
        m_paintedStale = true;
        update();
    });
}

PipelineView::~PipelineView() = default;

void PipelineView::onResultChanged()
{
    m_dirty = true;
    if (!isVisible())
        return; // built when shown (or exported)
    rebuild();
    updateLayout();
    update();
}

void PipelineView::showEvent(QShowEvent* event)
{
    QWidget::showEvent(event);
    if (m_dirty) {
        rebuild();
        updateLayout();
    }
}

void PipelineView::resizeEvent(QResizeEvent* event)
{
    QWidget::resizeEvent(event);
    if (isVisible())
        updateLayout();
}

void PipelineView::ensureBuilt() const
{
    if (m_dirty)
        rebuild();
}

void PipelineView::updateLayout()
{
    ensureBuilt();
    m_paintedStale = true;
    QFont font = canvasFont(this->font(), size());
    font.setPixelSize(std::max(9, static_cast<int>(std::lround(font.pixelSize() * m_style.fontScale))));
    m_layout = layOut(size(), font);
    m_layout.ink = m_style.foreground;
    m_layout.muted = QColor::fromRgbF((m_style.foreground.redF() * 2 + m_style.background.redF()) / 3,
                                      (m_style.foreground.greenF() * 2 + m_style.background.greenF()) / 3,
                                      (m_style.foreground.blueF() * 2 + m_style.background.blueF()) / 3);
}

void PipelineView::setPlotStyle(const PlotStyle& style)
{
    if (style == m_style)
        return;
    m_style = style;
    m_layout.size = QSize(); // laid out again (fonts, colours) when next painted
    m_paintsEverything = true;
    update();
}

// Gathers the stages of the current head from the newest result (no copies of its matrices) and the
// session's inputs, and paints each stage's image in one pass.
void PipelineView::rebuild() const
{
    m_dirty = false;
    m_paintedStale = true;
    // The stages of the last build: those of input matrices that did not change keep their images.
    const std::vector<Stage> built = std::move(m_stages);
    m_stages.clear();
    m_recoloured.clear();
    const std::shared_ptr<const AttentionResult> builtResult = m_result; // what `built`'s stages show
    const CurrentHeadResult current = m_document->currentHeadResult();
    m_result = current.result;
    m_message = current.error;
    if (!current)
        return;
    const Session& session = m_document->session();
    const int head = current.index, headCount = current.count;
    const HeadResult& r = *current.head;
    const Index n = r.Q.rows(), m = r.K.rows();
    m_queries = tokenLabels(session.tokens, n);
    m_keys = tokenLabels(session.keyTokens(), m);
    m_queryDims = dimensionLabels(session.dims, session.dModel());
    m_keyDims = dimensionLabels(session.keyDims(), session.dModel());

    // The inputs as the result was computed from them (an edit still computing may have changed the
    // session's shape: those that do not match are left out).
    // An edit changes one matrix: the others are compared (bit for bit, so that a 0 edited to −0 is seen)
    // and, when equal, neither copied nor coloured again.
    std::vector<const Matrix*> unchanged;
    const auto isCopy = [this](const Matrix* values) {
        return values == &m_X || values == &m_Z || values == &m_WQ || values == &m_WK || values == &m_WV ||
               values == &m_WO;
    };
    const auto copyIf = [&unchanged](Matrix& target, const Matrix* source, Index rows, Index columns) {
        if (!source || source->rows() != rows || source->cols() != columns) {
            target.resize(0, 0);
        } else if (sameBits(target, *source)) {
            unchanged.push_back(&target);
        } else {
            target = *source;
        }
    };
    const Index dModel = session.dModel();
    const bool cross = session.context.has_value();
    const Head* parameters =
        head < session.headCount() ? &session.heads[static_cast<std::size_t>(head)] : nullptr;
    copyIf(m_X, &session.X, n, dModel);
    copyIf(m_Z, cross ? &session.context->Z : nullptr, m, dModel);
    copyIf(m_WQ, parameters ? &parameters->W_Q : nullptr, dModel, r.Q.cols());
    copyIf(m_WK, parameters ? &parameters->W_K : nullptr, dModel, r.K.cols());
    copyIf(m_WV, parameters ? &parameters->W_V : nullptr, dModel, r.V.cols());
    copyIf(m_WO, session.W_O ? &*session.W_O : nullptr, m_result->concat.cols(), m_result->output.cols());

    const QString keySide = cross ? QStringLiteral("Z") : QStringLiteral("X");
    const auto add = [this](const QString& name, const QString& title, const Matrix& values, Indices indices,
                            const QString& top = QString(), const QString& bottom = QString()) -> Stage& {
        Stage stage;
        stage.name = name;
        stage.title = title;
        stage.values = &values;
        stage.indices = indices;
        stage.operatorTop = top;
        stage.operatorBottom = bottom;
        m_stages.push_back(stage);
        return m_stages.back();
    };
    // Sinusoidal and learned positions are added to the embeddings before the projections: a stage of their
    // own, which the projections then read.
    const QString positionType = QLatin1String(toString(session.positions.type));
    const bool positionedX = m_result->positionedX.rows() == n;
    const bool positionedZ = cross && m_result->positionedZ.rows() == m;
    if (m_X.size() > 0)
        add(QStringLiteral("X"), QStringLiteral("X"), m_X, cross ? Indices::QueryRows : Indices::Tokens);
    if (positionedX)
        add(QStringLiteral("X+PE"), QStringLiteral("X+PE"), m_result->positionedX,
            cross ? Indices::QueryRows : Indices::Tokens, QStringLiteral("+ PE"), positionType);
    if (m_Z.size() > 0)
        add(QStringLiteral("Z"), QStringLiteral("Z"), m_Z, Indices::KeyRows);
    if (positionedZ)
        add(QStringLiteral("Z+PE"), QStringLiteral("Z+PE"), m_result->positionedZ, Indices::KeyRows,
            QStringLiteral("+ PE"), positionType);
    const bool rope = session.positions.type == PositionType::Rope;
    const struct {
        const char* weight;
        const Matrix* parameters;
        const char* output;
        const Matrix* values;
        Indices indices;
        QString input;
        const Vector* bias;
        bool rotated;
    } projections[] = {
        {"W_Q", &m_WQ, "Q", &r.Q, Indices::QueryRows,
         positionedX ? QStringLiteral("(X+PE)") : QStringLiteral("X"),
         parameters ? &parameters->b_Q : nullptr, rope},
        {"W_K", &m_WK, "K", &r.K, Indices::KeyRows,
         (cross ? positionedZ : positionedX) ? QStringLiteral("(%1+PE)").arg(keySide) : keySide,
         parameters ? &parameters->b_K : nullptr, rope},
        {"W_V", &m_WV, "V", &r.V, Indices::KeyRows,
         (cross ? positionedZ : positionedX) ? QStringLiteral("(%1+PE)").arg(keySide) : keySide,
         parameters ? &parameters->b_V : nullptr, false}};
    for (const auto& projection : projections) {
        const QString weight = QLatin1String(projection.weight);
        const QString output = QLatin1String(projection.output);
        if (projection.parameters->size() > 0)
            add(weight, weight, *projection.parameters, Indices::Parameters);
        // Below the arrow, what follows the product: the bias, then RoPE's rotation (Q and K only).
        QStringList after;
        if (projection.bias && projection.bias->size() > 0)
            after << QStringLiteral("+ b_") + output;
        if (projection.rotated)
            after << QStringLiteral("RoPE");
        add(output, output, *projection.values, projection.indices,
            projection.input + QStringLiteral("·") + weight, after.join(QStringLiteral(", ")));
    }

    QString score;
    switch (session.score) {
    case ScoreFunction::Dot:
        score = QStringLiteral("Q·Kᵀ");
        break;
    case ScoreFunction::General:
        score = QStringLiteral("Q·W_S·Kᵀ");
        break;
    case ScoreFunction::Additive:
        score = QStringLiteral("v_a·tanh(…)");
        break;
    case ScoreFunction::Cosine:
        score = QStringLiteral("cos(q, k)");
        break;
    }
    add(QStringLiteral("scores"), tr("scores"), r.scores, Indices::QueryKey, score,
        QLatin1String(toString(session.score)));
    const double divisor = scaleDivisor(session.scale, r.Q.cols());
    const QString by = session.scale.kind == Scale::Kind::SqrtDk ? QStringLiteral("÷ √d_k")
                       : session.scale.kind == Scale::Kind::None ? QStringLiteral("÷ 1")
                                                                 : QStringLiteral("÷ c");
    QString scaledBottom =
        session.scale.kind == Scale::Kind::None ? QString() : QStringLiteral("= %1").arg(divisor, 0, 'g', 4);
    if (session.positions.type == PositionType::Alibi) // ALiBi's −m·|i − j| is in the scaled scores
        scaledBottom += (scaledBottom.isEmpty() ? QString() : QStringLiteral(", ")) + QStringLiteral("ALiBi");
    add(QStringLiteral("scaled"), tr("scaled"), r.scaled, Indices::QueryKey, by, scaledBottom);
    QString mask = QLatin1String(toString(session.mask.type));
    if (session.mask.type == MaskType::Prefix)
        mask += QStringLiteral(" %1").arg(session.mask.prefixLength);
    else if (session.mask.type == MaskType::Sliding)
        mask += QStringLiteral(" %1").arg(session.mask.window);
    const auto padded = [](const std::vector<bool>& pad) {
        return std::find(pad.begin(), pad.end(), true) != pad.end();
    };
    if (padded(session.pad) || (cross && padded(session.context->pad)))
        mask += tr(" + pad");
    Stage& masked =
        add(QStringLiteral("masked"), tr("masked"), r.scaled, Indices::QueryKey, tr("mask"), mask);
    masked.allowed = &r.allowed;
    masked.maskedText = QStringLiteral("−∞");
    QString normalizer = QLatin1String(toString(session.normalizer.type));
    if (session.normalizer.type == NormalizerType::Entmax)
        normalizer = QStringLiteral("%1-entmax").arg(session.normalizer.alpha, 0, 'g', 3);
    Stage& weights = add(QStringLiteral("weights"), tr("weights"), r.weights, Indices::QueryKey, normalizer,
                         QStringLiteral("÷ τ = %1").arg(session.temperature, 0, 'g', 4));
    weights.allowed = &r.allowed;
    weights.palette = Palette::Viridis;
    // On one scale of 0 to 1, a causal map of a hundred tokens is mostly one dark colour: a late row
    // spreads its weight over many keys. Past 32 rows each row is coloured against its own largest weight,
    // so where every query looks stays visible; a few rows keep the absolute scale their written values
    // match.
    const bool weightsPerRow = r.weights.rows() > perRowColourRows;
    weights.perRow = weightsPerRow;
    add(QStringLiteral("output"), tr("output"), r.output, Indices::QueryRows, QStringLiteral("· V"));
    const bool outputProjection = m_WO.size() > 0;
    if (headCount > 1)
        add(QStringLiteral("concat"), tr("concat"), m_result->concat, Indices::QueryRows, tr("concat"),
            tr("%1 heads").arg(headCount));
    if (outputProjection) {
        add(QStringLiteral("W_O"), QStringLiteral("W_O"), m_WO, Indices::Parameters);
        add(QStringLiteral("final"), tr("final"), m_result->output, Indices::QueryRows,
            QStringLiteral("· W_O"), session.b_O.size() > 0 ? QStringLiteral("+ b_O") : QString());
    }

    // Colour ranges and images: one pass over each matrix (every k-th cell of a very large one).
    const auto forbidsSome = [](const MaskMatrix* allowed) {
        return allowed && allowed->size() > 0 &&
               std::memchr(allowed->data(), 0, static_cast<std::size_t>(allowed->size())) != nullptr;
    };
    const Stage* previous = nullptr;
    const MaskMatrix* previousForbidden = nullptr;
    for (Stage& stage : m_stages) {
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
        const auto same = std::find_if(built.begin(), built.end(), [&](const Stage& old) {
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
        const Matrix& values = *stage.values;
        const Index rows = values.rows(), columns = values.cols();
        const Index rowStep = imageStep(rows);
        const Index columnStep = imageStep(columns);
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

    m_header = session.title.empty() ? QString() : tr(" · %1").arg(QString::fromStdString(session.title));
    if (headCount > 1)
        m_header += tr(" · head %1 of %2").arg(head + 1).arg(headCount);
    if (m_result->precision == Precision::Float32)
        m_header += tr(" · float32");
    if (weightsPerRow)
        m_header += tr(" · weights coloured per row");
}

QString PipelineView::figureTitle() const
{
    return tr("Attention pipeline");
}

QStringList PipelineView::recolouredStages() const
{
    ensureBuilt();
    return m_recoloured;
}

int PipelineView::stageIndex(const QString& name) const
{
    ensureBuilt();
    for (std::size_t s = 0; s < m_stages.size(); ++s)
        if (m_stages[s].name == name)
            return static_cast<int>(s);
    return -1;
}

QStringList PipelineView::stageNames() const
{
    ensureBuilt();
    QStringList names;
    for (const Stage& stage : m_stages)
        names << stage.name;
    return names;
}

QString PipelineView::stageCaption(const QString& name) const
{
    const int s = stageIndex(name);
    if (s < 0)
        return QString();
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    return stage.title + QStringLiteral("  ") + shapeText(stage.values->rows(), stage.values->cols());
}

QString PipelineView::captionOperator(const Stage& stage)
{
    return QStringLiteral("  ← ") + stage.operatorTop +
           (stage.operatorBottom.isEmpty() ? QString() : QLatin1Char(' ') + stage.operatorBottom);
}

QString PipelineView::stageOperator(const QString& name) const
{
    const int s = stageIndex(name);
    if (s < 0)
        return QString();
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    return stage.operatorBottom.isEmpty() ? stage.operatorTop
                                          : stage.operatorTop + QLatin1Char('\n') + stage.operatorBottom;
}

QColor PipelineView::stageColour(const QString& name, Index row, Index column) const
{
    const int s = stageIndex(name);
    if (s < 0)
        return QColor();
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    const Index rows = stage.values->rows(), columns = stage.values->cols();
    if (row < 0 || column < 0 || row >= rows || column >= columns)
        return QColor();
    return stage.image.pixelColor(static_cast<int>(column / imageStep(columns)),
                                  static_cast<int>(row / imageStep(rows)));
}

std::pair<Index, Index> PipelineView::stageShape(const QString& name) const
{
    const Matrix& values = stageValues(name);
    return {values.rows(), values.cols()};
}

const Matrix& PipelineView::stageValues(const QString& name) const
{
    const int s = stageIndex(name);
    return s < 0 ? emptyMatrix : *m_stages[static_cast<std::size_t>(s)].values;
}

bool PipelineView::isMasked(const QString& name, Index row, Index column) const
{
    const int s = stageIndex(name);
    if (s < 0)
        return false;
    const MaskMatrix* allowed = m_stages[static_cast<std::size_t>(s)].allowed;
    return allowed && row >= 0 && column >= 0 && row < allowed->rows() && column < allowed->cols() &&
           (*allowed)(row, column) == 0;
}

PipelineView::Indices PipelineView::stageIndices(const QString& name) const
{
    const int s = stageIndex(name);
    return s < 0 ? Indices::Parameters : m_stages[static_cast<std::size_t>(s)].indices;
}

std::pair<int, int> PipelineView::stageHighlight(const QString& name) const
{
    const int query = static_cast<int>(m_document->selectedQuery());
    const int key = static_cast<int>(m_document->selectedKey());
    switch (stageIndices(name)) {
    case Indices::Tokens:
    case Indices::QueryRows:
        return {query, -1};
    case Indices::KeyRows:
        return {key, -1};
    case Indices::QueryKey:
        return {query, key};
    case Indices::Parameters:
        break;
    }
    return {-1, -1};
}

QStringList PipelineView::rowLabelsOf(const Stage& stage) const
{
    switch (stage.indices) {
    case Indices::Tokens:
    case Indices::QueryRows:
    case Indices::QueryKey:
        return m_queries;
    case Indices::KeyRows:
        return m_keys;
    case Indices::Parameters:
        break;
    }
    return {};
}

QStringList PipelineView::columnLabelsOf(const Stage& stage) const
{
    return stage.indices == Indices::QueryKey ? m_keys : QStringList();
}

// Lays the stages out left to right in formula order, wrapping onto as many lines as make the cells
// largest: every stage gets the same box, its cells as wide as the box allows (at most three times as wide as
// tall), its rows as tall as the box (so stages with the same rows line up). Token labels go left of a stage
// whose rows differ from its left neighbour's, key labels below the query × key stages.
PipelineView::Layout PipelineView::layOut(QSize size, const QFont& font) const
{
    Layout layout;
    layout.size = size;
    layout.font = font;
    QFont bold = font;
    bold.setBold(true);
    const QFontMetricsF metrics(font), boldMetrics(bold);
    // The title line, on canvases tall enough to spare it (the window's Step by Step names the cell too).
    const double headerHeight = size.height() >= 360 ? boldMetrics.height() * 1.3 + 4 : 0.0;
    layout.header = QRectF(margin, margin, std::max(1.0, size.width() - 2 * margin), headerHeight);
    const auto count = static_cast<int>(m_stages.size());
    if (count == 0)
        return layout;

    const Index tokens = std::max(m_queries.size(), m_keys.size());
    layout.labels = tokens > 0 && tokens <= maximumLabelledTokens;
    double labelWidth = 0; // the widest token label, as written
    if (layout.labels) {
        for (const QStringList* labels : {&m_queries, &m_keys})
            for (const QString& label : *labels)
                labelWidth = std::max(labelWidth, metrics.horizontalAdvance(elidedLabel(label)));
    }
    const double rowLabelWidth = labelWidth + tickLabelPadding + 2;
    const double captionHeight = boldMetrics.height() + 4;
    // A row label is centred on its row and reaches beyond the first and last rows when the rows are lower
    // than a line: room above the cells (below the caption) and between the cells and the key labels.
    const Index tokenRows = std::max(m_queries.size(), m_keys.size());
    const auto overflowFor = [&](double boxHeight) {
        return layout.labels
                   ? std::max(0.0, (metrics.height() - boxHeight / static_cast<double>(tokenRows)) / 2 + 1)
                   : 0.0;
    };
    std::vector<double> gaps(static_cast<std::size_t>(count));
    for (int s = 0; s < count; ++s) {
        const Stage& stage = m_stages[static_cast<std::size_t>(s)];
        gaps[static_cast<std::size_t>(s)] =
            stage.hasArrow()
                ? std::max(minimumArrow, std::max(metrics.horizontalAdvance(stage.operatorTop),
                                                  metrics.horizontalAdvance(stage.operatorBottom)) +
                                             12)
                : plainGap;
    }
    // Token labels go left of a stage unless a stage before it in its line has the same ones: rows of the
    // same count line up across a line, so one set of labels serves them all.
    const auto labelsRows = [&](int s, int lineStart) {
        const Stage& stage = m_stages[static_cast<std::size_t>(s)];
        if (!layout.labels || stage.indices == Indices::Parameters)
            return false;
        for (int previous = s - 1; previous >= lineStart; --previous) {
            const Stage& before = m_stages[static_cast<std::size_t>(previous)];
            if (before.indices != Indices::Parameters)
                return rowLabelsOf(before) != rowLabelsOf(stage);
        }
        return true;
    };
    // The widest value of each stage at the canvas font (infinite when there are too many to write).
    std::vector<double> widest(static_cast<std::size_t>(count), std::numeric_limits<double>::infinity());
    for (int s = 0; s < count; ++s) {
        const Stage& stage = m_stages[static_cast<std::size_t>(s)];
        const Matrix& values = *stage.values;
        if (values.size() > 4096 || tokenRows > maximumLabelledTokens) // beyond 64 tokens: colour only
            continue;
        double width = metrics.horizontalAdvance(stage.maskedText);
        for (Index i = 0; i < values.rows(); ++i)
            for (Index j = 0; j < values.cols(); ++j)
                width = std::max(width, metrics.horizontalAdvance(valueText(values(i, j))));
        widest[static_cast<std::size_t>(s)] = width;
    }
    const double basePixels = font.pixelSize();

    const double availableWidth = size.width() - 2 * margin;
    const double availableHeight = size.height() - 2 * margin - headerHeight;
    // Per line count k: the box every stage gets, then how large its cells are.
    struct Candidate {
        int perLine = 1;
        double boxWidth = 0;
        double boxHeight = 0;
        double score = -1;
        double overflow = 0;
    };
    const auto evaluate = [&](int perLine, bool verticalColumns, double overflow) {
        Candidate candidate;
        candidate.perLine = perLine;
        candidate.overflow = overflow;
        const double captionBlock = captionHeight + overflow;
        const double columnLabelHeight = (verticalColumns ? labelWidth : metrics.height()) +
                                         tickLabelPadding + std::max(0.0, overflow - tickLabelPadding) + 2;
        const int lines = (count + perLine - 1) / perLine;
        double boxWidth = std::numeric_limits<double>::infinity();
        double fixedHeight = 0;
        for (int line = 0; line < lines; ++line) {
            double fixed = 0;
            bool columnLabels = false;
            for (int s = line * perLine; s < std::min(count, (line + 1) * perLine); ++s) {
                const bool first = s == line * perLine;
                const Stage& stage = m_stages[static_cast<std::size_t>(s)];
                if (!first)
                    fixed += gaps[static_cast<std::size_t>(s)];
                if (labelsRows(s, line * perLine))
                    fixed += rowLabelWidth;
                columnLabels = columnLabels || (layout.labels && stage.indices == Indices::QueryKey);
            }
            boxWidth = std::min(boxWidth, (availableWidth - fixed) / perLine);
            fixedHeight += captionBlock + (columnLabels ? columnLabelHeight : 0.0);
        }
        const double boxHeight = (availableHeight - fixedHeight - (lines - 1) * lineGap) / lines;
        candidate.boxWidth = boxWidth;
        candidate.boxHeight = boxHeight;
        if (boxWidth < 4 || boxHeight < 4)
            return candidate;
        // First the font at which every value fits its cell (when one does), then the size of the cells.
        double score = std::numeric_limits<double>::infinity();
        double text = basePixels;
        for (int s = 0; s < count; ++s) {
            const Stage& stage = m_stages[static_cast<std::size_t>(s)];
            const double cellHeight =
                boxHeight / static_cast<double>(std::max<Index>(1, stage.values->rows()));
            const double cellWidth = cellWidthIn(boxWidth, boxHeight, cellHeight, stage.values->cols());
            score = std::min(score, std::sqrt(cellWidth * cellHeight)); // the cells' area
            const double byWidth = basePixels * (cellWidth - 4) / widest[static_cast<std::size_t>(s)];
            const double byHeight = basePixels * (cellHeight - 2) / metrics.ascent(); // digits: no descent
            text = std::min({text, byWidth, byHeight});
        }
        text = std::floor(text);
        if (text >= minimumTextPixels)
            score += 1e6 * text;
        candidate.score = score;
        return candidate;
    };

    // The room the row labels need depends on the row height it leaves: grow it until it suffices.
    const auto settle = [&](int perLine, bool verticalColumns) {
        double overflow = 0;
        Candidate candidate = evaluate(perLine, verticalColumns, overflow);
        for (int pass = 0; pass < 4 && overflowFor(candidate.boxHeight) > overflow; ++pass) {
            overflow = overflowFor(candidate.boxHeight) + 0.5;
            candidate = evaluate(perLine, verticalColumns, overflow);
        }
        return candidate;
    };

    bool verticalColumns = false;
    for (int attempt = 0; attempt < 2; ++attempt) {
        Candidate best;
        for (int perLine = count; perLine >= 1; --perLine) {
            const Candidate candidate = settle(perLine, verticalColumns);
            if (candidate.score > best.score + 1e-9)
                best = candidate;
        }
        if (best.score < 0)
            best = settle(count, verticalColumns);
        layout.columnLabelOffset = std::max(0.0, best.overflow - tickLabelPadding);
        const double captionBlock = captionHeight + best.overflow;
        const double columnLabelHeight = (verticalColumns ? labelWidth : metrics.height()) +
                                         tickLabelPadding + layout.columnLabelOffset + 2;
        const double boxWidth = std::max(1.0, best.boxWidth);
        const double boxHeight = std::max(1.0, best.boxHeight);

        layout.tiles.assign(static_cast<std::size_t>(count), Tile());
        double y = margin + headerHeight;
        bool needsVertical = false;
        for (int first = 0; first < count; first += best.perLine) {
            double x = margin;
            bool keyLabels = false;
            for (int s = first; s < std::min(count, first + best.perLine); ++s) {
                const Stage& stage = m_stages[static_cast<std::size_t>(s)];
                Tile& tile = layout.tiles[static_cast<std::size_t>(s)];
                const bool isFirst = s == first;
                // The operator into a stage that starts a line is written in its caption: an arrow from the
                // margin would take the room of its cells.
                const double gap = isFirst ? 0.0 : gaps[static_cast<std::size_t>(s)];
                tile.operatorInCaption = isFirst && stage.hasArrow();
                tile.arrow = QRectF(x, y + captionBlock, gap, boxHeight);
                x += gap;
                tile.rowLabels = labelsRows(s, first);
                const double labels = tile.rowLabels ? rowLabelWidth : 0.0;
                const Index rows = std::max<Index>(1, stage.values->rows());
                const Index columns = std::max<Index>(1, stage.values->cols());
                tile.cellHeight = boxHeight / static_cast<double>(rows);
                tile.cellWidth = cellWidthIn(boxWidth, boxHeight, tile.cellHeight, columns);
                const double width = tile.cellWidth * static_cast<double>(columns);
                tile.matrix = QRectF(x + labels, y + captionBlock, width, boxHeight);
                const QString caption =
                    stageCaption(stage.name) + (tile.operatorInCaption ? captionOperator(stage) : QString());
                const double captionWidth = boldMetrics.horizontalAdvance(caption) + 4;
                const double advance = std::max(labels + width, std::min(boxWidth + labels, captionWidth));
                // The caption may reach over the arrow to the next stage (the last: to the margin).
                const bool last = s + 1 == std::min(count, first + best.perLine);
                const double room =
                    last ? size.width() - margin - x : advance + gaps[static_cast<std::size_t>(s + 1)] - 6;
                tile.caption = QRectF(x, y, std::max(advance, std::min(captionWidth, room)), captionHeight);
                x += advance;
                tile.columnLabels = layout.labels && stage.indices == Indices::QueryKey;
                keyLabels = keyLabels || tile.columnLabels;
                if (tile.rowLabels || tile.columnLabels) {
                    const QStringList rowLabels =
                        tile.rowLabels ? rowLabelsOf(stage) : QStringList{QString()};
                    const QStringList columnLabels =
                        tile.columnLabels ? columnLabelsOf(stage) : QStringList{QString()};
                    tile.ticks = planTicks(tile.matrix.size().toSize(), QFontMetrics(layout.font), rowLabels,
                                           columnLabels);
                    needsVertical = needsVertical || (tile.columnLabels && tile.ticks.columnsVertical);
                }
            }
            y += captionBlock + boxHeight + lineGap + (keyLabels ? columnLabelHeight : 0.0);
        }
        if (!needsVertical || verticalColumns)
            break;
        verticalColumns = true; // lay out again with room for upright key labels
    }

    // Cell values: one font for the canvas, as large as the default (smaller where needed, never below
    // minimumTextPixels); a stage whose cells cannot hold it writes none.
    // Large cells (a slide) write their values larger, up to 1.4 times the canvas font.
    const double largest = std::floor(basePixels * 1.4);
    double common = largest;
    std::vector<double> fits(static_cast<std::size_t>(count), 0.0);
    for (int s = 0; s < count; ++s) {
        const Tile& tile = layout.tiles[static_cast<std::size_t>(s)];
        if (tile.cellWidth < 14 || tile.cellHeight < minimumTextPixels)
            continue;
        const double byWidth = basePixels * (tile.cellWidth - 4) / widest[static_cast<std::size_t>(s)];
        const double byHeight = basePixels * (tile.cellHeight - 2) / metrics.ascent();
        const double fit = std::floor(std::min({largest, byWidth, byHeight}));
        fits[static_cast<std::size_t>(s)] = fit;
        if (fit >= minimumTextPixels)
            common = std::min(common, fit);
    }
    layout.cellFont = withPixels(font, common);
    for (int s = 0; s < count; ++s)
        layout.tiles[static_cast<std::size_t>(s)].cellText =
            fits[static_cast<std::size_t>(s)] >= minimumTextPixels;
    return layout;
}

void PipelineView::paintEvent(QPaintEvent*)
{
    ensureBuilt();
    if (m_layout.size != size())
        updateLayout();
    const qreal ratio = devicePixelRatioF();
    if (m_painted.devicePixelRatio() != ratio || m_painted.size() != size() * ratio) {
        m_painted = QPixmap(size() * ratio);
        m_painted.setDevicePixelRatio(ratio);
        m_paintedStale = true;
        m_paintsEverything = true;
    }
    if (m_paintedStale) {
        m_paintedStale = false;
        PaintedCanvas now = paintedCanvas();
        const QRegion region = m_paintsEverything ? QRegion(rect()) : changedRegion(now);
        m_paintsEverything = false;
        m_paintedCanvas = std::move(now);
        m_lastRepainted = region;
        QPainter painter(&m_painted);
        painter.setRenderHint(QPainter::Antialiasing);
        painter.setRenderHint(QPainter::TextAntialiasing);
        if (region == QRegion(rect())) {
            m_painted.fill(m_style.background);
            paint(painter, m_layout);
        } else {
            // Stage by stage, each clipped to a rectangle (a scaled image clipped to a region of several
            // rectangles is sampled on other pixels than one drawn whole), with its caption and labels,
            // which may reach into the pixel around the cells.
            for (std::size_t s = 0; s < m_stages.size() && s < m_layout.tiles.size(); ++s) {
                const QRect cells = repaintRect(m_paintedCanvas.stages[s].area);
                if (!region.intersects(cells))
                    continue;
                painter.save();
                painter.setClipRect(cells);
                painter.fillRect(cells, m_style.background);
                paintStage(painter, m_stages[s], m_layout.tiles[s], m_layout);
                painter.restore();
            }
        }
    }
    QPainter(this).drawPixmap(0, 0, m_painted);
}

PipelineView::PaintedCanvas PipelineView::paintedCanvas() const
{
    PaintedCanvas canvas;
    canvas.header =
        m_header + QStringLiteral("|%1|%2").arg(m_document->selectedQuery()).arg(m_document->selectedKey());
    canvas.message = m_message;
    canvas.labels = m_queries + m_keys + m_queryDims + m_keyDims;
    canvas.headerBox = m_layout.header;
    for (std::size_t s = 0; s < m_stages.size() && s < m_layout.tiles.size(); ++s) {
        const Stage& stage = m_stages[s];
        const Tile& tile = m_layout.tiles[s];
        canvas.stages.push_back({cellArea(stage, tile), tile.caption, tile.arrow, stage.title,
                                 stage.operatorTop, stage.operatorBottom, stage.image.cacheKey(),
                                 stageHighlight(stage.name), tile.cellText});
    }
    return canvas;
}

QRegion PipelineView::changedRegion(const PaintedCanvas& now) const
{
    const PaintedCanvas& before = m_paintedCanvas;
    const QRegion everything(rect());
    if (now.header != before.header || now.message != before.message || now.labels != before.labels ||
        now.headerBox != before.headerBox || now.stages.size() != before.stages.size())
        return everything;
    QRegion changed;
    for (std::size_t s = 0; s < now.stages.size(); ++s) {
        const PaintedStage &a = now.stages[s], &b = before.stages[s];
        if (a.area != b.area || a.caption != b.caption || a.arrow != b.arrow || a.title != b.title ||
            a.operatorTop != b.operatorTop || a.operatorBottom != b.operatorBottom ||
            a.highlight != b.highlight || a.cellText != b.cellText)
            return everything;
        if (a.image == b.image)
            continue;
        if (a.cellText) // numbers may reach past their cells
            return everything;
        changed += repaintRect(a.area);
    }
    return changed;
}

void PipelineView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    ensureBuilt();
    QPainter painter;
    if (!beginFigure(painter, device, size))
        return;
    paint(painter, layOut(size, canvasFont(font(), size)));
    painter.end();
}

void PipelineView::paint(QPainter& painter, const Layout& layout) const
{
    QFont bold = layout.font;
    bold.setBold(true);
    painter.setPen(layout.ink);
    if (m_stages.empty()) {
        painter.setFont(layout.font);
        const QRectF page(margin, margin, layout.size.width() - 2 * margin,
                          layout.size.height() - 2 * margin);
        painter.drawText(page, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
                         m_message.isEmpty() ? tr("Nothing computed yet") : m_message);
        return;
    }
    if (layout.header.height() > 0)
        paintHeader(painter, layout);
    for (std::size_t s = 0; s < m_stages.size() && s < layout.tiles.size(); ++s) {
        paintArrow(painter, m_stages[s], layout.tiles[s], layout);
        paintStage(painter, m_stages[s], layout.tiles[s], layout);
    }
}

// The title line: what is shown, and the selected cell in words.
void PipelineView::paintHeader(QPainter& painter, const Layout& layout) const
{
    QFont bold = layout.font;
    bold.setBold(true);
    QFont headerFont = bold;
    headerFont.setPixelSize(static_cast<int>(std::lround(layout.font.pixelSize() * 1.2)));
    painter.setFont(headerFont);
    const Index query = m_document->selectedQuery(), key = m_document->selectedKey();
    const QString selection = tr("query ‘%1’ (i = %2) → key ‘%3’ (j = %4)")
                                  .arg(elidedLabel(m_queries.value(static_cast<int>(query))))
                                  .arg(query)
                                  .arg(elidedLabel(m_keys.value(static_cast<int>(key))))
                                  .arg(key);
    // The title as a text of its own (figures are searched for it), then what is shown and selected.
    const QString title = figureTitle();
    painter.drawText(layout.header, Qt::AlignLeft | Qt::AlignVCenter, title);
    const double titleWidth = QFontMetricsF(headerFont).horizontalAdvance(title);
    QFont details = headerFont;
    details.setBold(false);
    painter.setFont(details);
    const QRectF rest = layout.header.adjusted(titleWidth, 0, 0, 0);
    painter.drawText(rest, Qt::AlignLeft | Qt::AlignVCenter,
                     QFontMetricsF(details).elidedText(m_header + QStringLiteral("   ·   ") + selection,
                                                       Qt::ElideRight, rest.width()));
}

void PipelineView::paintArrow(QPainter& painter, const Stage& stage, const Tile& tile,
                              const Layout& layout) const
{
    if (!stage.hasArrow() || tile.arrow.width() <= 0)
        return;
    const double y = tile.matrix.center().y();
    const double left = tile.arrow.left() + 4, right = tile.arrow.right() - 4;
    painter.setPen(QPen(layout.ink, 1.5));
    painter.drawLine(QPointF(left, y), QPointF(right - 6, y));
    drawArrowHead(painter, QPointF(right, y), 8);
    painter.setFont(layout.font);
    painter.setPen(layout.ink);
    const QFontMetricsF metrics(layout.font);
    const double height = metrics.height();
    painter.drawText(QRectF(tile.arrow.left(), y - height - 4, tile.arrow.width(), height),
                     Qt::AlignHCenter | Qt::AlignBottom, stage.operatorTop);
    painter.setPen(layout.muted);
    painter.drawText(QRectF(tile.arrow.left(), y + 5, tile.arrow.width(), height),
                     Qt::AlignHCenter | Qt::AlignTop, stage.operatorBottom);
}

std::pair<QString, QFont> PipelineView::fittedTitle(const Stage& stage, const Tile& tile,
                                                    const Layout& layout)
{
    // A narrow stage (the window at a scale factor of 2) writes its title smaller before it elides it:
    // "weig…" was all a reader got.
    QFont bold = layout.font;
    bold.setBold(true);
    const int pixels = layout.font.pixelSize();
    for (int percent = 90; percent >= 70 && pixels > 0; percent -= 10) {
        if (QFontMetricsF(bold).horizontalAdvance(stage.title) <= tile.caption.width())
            break;
        bold.setPixelSize(std::max(1, pixels * percent / 100));
    }
    return {QFontMetricsF(bold).elidedText(stage.title, Qt::ElideRight, tile.caption.width()), bold};
}

std::pair<QString, QFont> PipelineView::captionTitle(const QString& name) const
{
    const int s = stageIndex(name);
    if (s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size())
        return {};
    return fittedTitle(m_stages[static_cast<std::size_t>(s)], m_layout.tiles[static_cast<std::size_t>(s)],
                       m_layout);
}

void PipelineView::paintStage(QPainter& painter, const Stage& stage, const Tile& tile,
                              const Layout& layout) const
{
    const Matrix& values = *stage.values;
    const Index rows = values.rows(), columns = values.cols();
    // The caption: the title in bold, the shape beside it when it fits whole.
    const auto [title, titleFont] = fittedTitle(stage, tile, layout);
    painter.setFont(titleFont);
    painter.setPen(layout.ink);
    painter.drawText(tile.caption, Qt::AlignLeft | Qt::AlignVCenter, title);
    const double titleWidth = QFontMetricsF(titleFont).horizontalAdvance(title);
    painter.setFont(layout.font);
    painter.setPen(layout.muted);
    const QRectF shapeBox = tile.caption.adjusted(titleWidth + 6, 0, 0, 0);
    const QString shape = shapeText(rows, columns);
    const double shapeWidth = QFontMetricsF(layout.font).horizontalAdvance(shape);
    const bool shapeFits = shapeWidth <= shapeBox.width(); // "…" alone would say nothing
    if (shapeFits)
        painter.drawText(shapeBox, Qt::AlignLeft | Qt::AlignVCenter, shape);
    if (tile.operatorInCaption) {
        const QRectF operatorBox = shapeBox.adjusted(shapeFits ? shapeWidth : 0.0, 0, 0, 0);
        painter.setPen(layout.ink);
        painter.drawText(operatorBox, Qt::AlignLeft | Qt::AlignVCenter,
                         QFontMetricsF(layout.font)
                             .elidedText(captionOperator(stage), Qt::ElideRight, operatorBox.width()));
    }
    if (rows == 0 || columns == 0)
        return;

    // The cells: rectangles while they are a few pixels across (crisp in vector files), else the image.
    const double cw = tile.cellWidth, ch = tile.cellHeight;
    const QRectF area = cellArea(stage, tile);
    if (cw >= 3 && ch >= 3 && stage.image.width() == columns && stage.image.height() == rows) {
        painter.save();
        painter.setRenderHint(QPainter::Antialiasing, false);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < columns; ++j) {
                const QRectF cell(area.left() + static_cast<double>(j) * cw,
                                  area.top() + static_cast<double>(i) * ch, cw, ch);
                painter.fillRect(
                    cell.adjusted(0, 0, 0.5, 0.5),
                    QColor::fromRgb(stage.image.pixel(static_cast<int>(j), static_cast<int>(i))));
            }
        painter.restore();
    } else {
        painter.save();
        painter.setRenderHint(QPainter::SmoothPixmapTransform, false);
        painter.drawImage(area, stage.image);
        painter.restore();
    }
    painter.setPen(QPen(frameColor, 1));
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(area);

    // The selection under the values: they stay readable on the bands.
    paintHighlight(painter, stage, tile);
    if (tile.cellText) {
        painter.setFont(layout.cellFont);
        for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < columns; ++j) {
                const bool masked = stage.allowed && (*stage.allowed)(i, j) == 0;
                const QString text = masked ? stage.maskedText : valueText(values(i, j));
                if (text.isEmpty())
                    continue;
                const QRgb background = stage.image.pixel(static_cast<int>(j), static_cast<int>(i));
                painter.setPen(textColorOn(background));
                painter.drawText(QRectF(area.left() + static_cast<double>(j) * cw,
                                        area.top() + static_cast<double>(i) * ch, cw, ch),
                                 Qt::AlignCenter | Qt::TextDontClip, text);
            }
    }

    // Token labels: every k-th as planned, never overlapping.
    painter.setFont(layout.font);
    painter.setPen(layout.ink);
    const QFontMetricsF metrics(layout.font);
    if (tile.rowLabels) {
        const QStringList labels = rowLabelsOf(stage);
        for (int i = 0; i < labels.size(); i += std::max(1, tile.ticks.rowStride)) {
            const double centre = area.top() + (i + 0.5) * ch;
            painter.drawText(QRectF(tile.caption.left(), centre - metrics.height() / 2,
                                    area.left() - tickLabelPadding - tile.caption.left(), metrics.height()),
                             Qt::AlignRight | Qt::AlignVCenter, elidedLabel(labels.at(i)));
        }
    }
    if (tile.columnLabels) {
        const QStringList labels = columnLabelsOf(stage);
        const QList<QRectF> rects =
            tickLabelRects(tile.ticks, area.adjusted(0, 0, 0, layout.columnLabelOffset),
                           QFontMetrics(layout.font), QStringList{QString()}, labels)
                .mid(1);
        int index = 0;
        for (int j = 0; j < labels.size() && index < rects.size();
             j += std::max(1, tile.ticks.columnStride), ++index) {
            const QRectF box = rects.at(index);
            const QString text = elidedLabel(labels.at(j));
            if (tile.ticks.columnsVertical) {
                painter.save();
                painter.translate(box.center());
                painter.rotate(90);
                painter.drawText(QRectF(-box.height() / 2, -box.width() / 2, box.height(), box.width()),
                                 Qt::AlignLeft | Qt::AlignVCenter, text);
                painter.restore();
            } else {
                painter.drawText(box, Qt::AlignCenter, text);
            }
        }
    }
}

void PipelineView::paintHighlight(QPainter& painter, const Stage& stage, const Tile& tile) const
{
    const auto [row, column] = stageHighlight(stage.name);
    const Index rows = stage.values->rows(), columns = stage.values->cols();
    const double cw = tile.cellWidth, ch = tile.cellHeight;
    const QRectF area = cellArea(stage, tile);
    const auto band = [&](const QRectF& rect, const QColor& colour) {
        QColor fill = colour;
        fill.setAlpha(55);
        QColor line = colour;
        line.setAlpha(200);
        painter.setPen(QPen(line, 1.5));
        painter.setBrush(fill);
        painter.drawRect(rect);
    };
    // A row or column band at least 3 pixels thick, however small the cells.
    const auto rowBand = [&](int i, const QColor& colour) {
        if (i < 0 || i >= rows)
            return;
        const double grow = std::max(0.0, (3 - ch) / 2);
        band(QRectF(area.left(), area.top() + i * ch - grow, area.width(), ch + 2 * grow), colour);
    };
    const auto columnBand = [&](int j, const QColor& colour) {
        if (j < 0 || j >= columns)
            return;
        const double grow = std::max(0.0, (3 - cw) / 2);
        band(QRectF(area.left() + j * cw - grow, area.top(), cw + 2 * grow, area.height()), colour);
    };
    painter.save();
    switch (stage.indices) {
    case Indices::Tokens:
        if (m_document->selectedKey() != row)
            rowBand(static_cast<int>(m_document->selectedKey()), keyColor);
        rowBand(row, queryColor);
        break;
    case Indices::QueryRows:
        rowBand(row, queryColor);
        break;
    case Indices::KeyRows:
        rowBand(row, keyColor);
        break;
    case Indices::QueryKey:
        if (row >= 0 && row < rows && column >= 0 && column < columns) {
            columnBand(column, keyColor);
            rowBand(row, queryColor);
            const double growX = std::max(0.0, (minimumMark - cw) / 2);
            const double growY = std::max(0.0, (minimumMark - ch) / 2);
            painter.setPen(QPen(queryColor.darker(120), 2.5));
            painter.setBrush(Qt::NoBrush);
            painter.drawRect(QRectF(area.left() + column * cw - growX, area.top() + row * ch - growY,
                                    cw + 2 * growX, ch + 2 * growY));
        }
        break;
    case Indices::Parameters:
        break;
    }
    painter.restore();
}

bool PipelineView::showsCellValues() const
{
    return std::any_of(m_layout.tiles.begin(), m_layout.tiles.end(),
                       [](const Tile& tile) { return tile.cellText; });
}

bool PipelineView::showsTokenLabels() const
{
    return std::any_of(m_layout.tiles.begin(), m_layout.tiles.end(),
                       [](const Tile& tile) { return tile.rowLabels || tile.columnLabels; });
}

QString PipelineView::cellText(const QString& name, Index row, Index column) const
{
    const int s = stageIndex(name);
    if (s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size() ||
        !m_layout.tiles[static_cast<std::size_t>(s)].cellText)
        return QString();
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    if (row < 0 || column < 0 || row >= stage.values->rows() || column >= stage.values->cols())
        return QString();
    if (stage.allowed && (*stage.allowed)(row, column) == 0)
        return stage.maskedText;
    return valueText((*stage.values)(row, column));
}

QRectF PipelineView::cellRect(const QString& name, Index row, Index column) const
{
    const int s = stageIndex(name);
    if (s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size())
        return QRectF();
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    const Tile& tile = m_layout.tiles[static_cast<std::size_t>(s)];
    if (row < 0 || column < 0 || row >= stage.values->rows() || column >= stage.values->cols())
        return QRectF();
    return QRectF(tile.matrix.left() + static_cast<double>(column) * tile.cellWidth,
                  tile.matrix.top() + static_cast<double>(row) * tile.cellHeight, tile.cellWidth,
                  tile.cellHeight);
}

QFont PipelineView::cellFont() const
{
    return m_layout.cellFont;
}

QRectF PipelineView::cellArea(const Stage& stage, const Tile& tile)
{
    return QRectF(tile.matrix.topLeft(), QSizeF(tile.cellWidth * static_cast<double>(stage.values->cols()),
                                                tile.cellHeight * static_cast<double>(stage.values->rows())));
}

QRect PipelineView::repaintRect(const QRectF& cells)
{
    return cells.adjusted(-1, -1, 1, 1).toAlignedRect(); // with the frame's and the bands' strokes
}

QRectF PipelineView::stageRect(const QString& name) const
{
    const int s = stageIndex(name);
    if (s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size())
        return QRectF();
    return cellArea(m_stages[static_cast<std::size_t>(s)], m_layout.tiles[static_cast<std::size_t>(s)]);
}

QRectF PipelineView::captionRect(const QString& name) const
{
    const int s = stageIndex(name);
    return s < 0 || static_cast<std::size_t>(s) >= m_layout.tiles.size()
               ? QRectF()
               : m_layout.tiles[static_cast<std::size_t>(s)].caption;
}

QList<QRectF> PipelineView::drawnLabelRects() const
{
    QList<QRectF> rects;
    const QFontMetrics metrics(m_layout.font);
    const QStringList none{QString()}; // the side without labels: one empty placeholder
    for (std::size_t s = 0; s < m_stages.size() && s < m_layout.tiles.size(); ++s) {
        const Stage& stage = m_stages[s];
        const Tile& tile = m_layout.tiles[s];
        const QRectF area = stageRect(stage.name);
        if (tile.rowLabels) {
            const QStringList labels = rowLabelsOf(stage);
            const int drawn =
                (static_cast<int>(labels.size()) + tile.ticks.rowStride - 1) / tile.ticks.rowStride;
            rects << tickLabelRects(tile.ticks, area, metrics, labels, none).mid(0, drawn);
        }
        if (tile.columnLabels)
            rects << tickLabelRects(tile.ticks, area.adjusted(0, 0, 0, m_layout.columnLabelOffset), metrics,
                                    none, columnLabelsOf(stage))
                         .mid(1);
    }
    return rects;
}

bool PipelineView::cellAt(const QPointF& position, int* stage, Index* row, Index* column) const
{
    for (std::size_t s = 0; s < m_stages.size() && s < m_layout.tiles.size(); ++s) {
        const QRectF area = stageRect(m_stages[s].name);
        if (!area.contains(position))
            continue;
        const Tile& tile = m_layout.tiles[s];
        *stage = static_cast<int>(s);
        *row = std::clamp<Index>(static_cast<Index>((position.y() - area.top()) / tile.cellHeight), 0,
                                 m_stages[s].values->rows() - 1);
        *column = std::clamp<Index>(static_cast<Index>((position.x() - area.left()) / tile.cellWidth), 0,
                                    m_stages[s].values->cols() - 1);
        return true;
    }
    return false;
}

void PipelineView::mousePressEvent(QMouseEvent* event)
{
    int s = 0;
    Index row = 0, column = 0;
    if (event->button() != Qt::LeftButton || !cellAt(event->position(), &s, &row, &column)) {
        QWidget::mousePressEvent(event);
        return;
    }
    switch (m_stages[static_cast<std::size_t>(s)].indices) {
    case Indices::QueryKey:
        m_document->setSelection(row, column);
        break;
    case Indices::Tokens:
    case Indices::QueryRows:
        m_document->setSelection(row, m_document->selectedKey());
        break;
    case Indices::KeyRows:
        m_document->setSelection(m_document->selectedQuery(), row);
        break;
    case Indices::Parameters:
        break;
    }
    event->accept();
}

void PipelineView::mouseMoveEvent(QMouseEvent* event)
{
    int s = 0;
    Index row = 0, column = 0;
    if (!cellAt(event->position(), &s, &row, &column)) {
        QToolTip::hideText();
        return;
    }
    QToolTip::showText(event->globalPosition().toPoint(),
                       cellDescription(m_stages[static_cast<std::size_t>(s)].name, row, column), this);
}

QString PipelineView::cellDescription(const QString& name, Index row, Index column) const
{
    ensureBuilt();
    const int s = stageIndex(name);
    if (s < 0)
        return {};
    const Stage& stage = m_stages[static_cast<std::size_t>(s)];
    if (row < 0 || column < 0 || row >= stage.values->rows() || column >= stage.values->cols())
        return {};
    QStringList rows = rowLabelsOf(stage), columns = columnLabelsOf(stage);
    // The d_model axis: X's and Z's columns, the rows of the projections.
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
    const QString value = masked ? tr("masked") : valueText((*stage.values)(row, column));
    return tr("%1 [%2, %3] = %4").arg(stage.title, label(rows, row), label(columns, column), value);
}

} // namespace qkv::ui
