// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Which stages the pipeline canvas shows: the matrices of the current head in the order of the formula, each
// with its title, the operator on the arrow into it and its colours.

#include "ColorScale.h"
#include "EigenTypes.h"

#include <QCoreApplication>
#include <QImage>
#include <QString>
#include <QStringList>

#include <memory>
#include <utility>
#include <vector>

namespace qkv {
struct AttentionResult;
} // namespace qkv

namespace qkv::ui {

class Document;

/// What a stage's rows and columns are: both token sides (X in self-attention), queries, keys, queries ×
/// keys, or parameter dimensions.
enum class StageIndices { Tokens, QueryRows, KeyRows, QueryKey, Parameters };

/// One matrix on the canvas. Its values belong to the result or to the PipelineStages that built it.
struct PipelineStage {
    QString name;
    QString title;
    QString operatorTop; // above the arrow into the stage ("" and "": no arrow, a small gap)
    QString operatorBottom;
    StageIndices indices = StageIndices::Parameters;
    const Matrix* values = nullptr;
    const MaskMatrix* allowed = nullptr; // cells where it is 0 are grey
    QString maskedText;                  // written in masked cells
    Palette palette = Palette::Diverging;
    double lower = -1.0;
    double upper = 1.0;
    bool perRow = false; // each row coloured from 0 to its largest value (lower and upper unused)
    QImage image;        // one pixel per cell (every k-th cell beyond stageImageLimit)

    bool hasArrow() const { return !operatorTop.isEmpty() || !operatorBottom.isEmpty(); }
    /// Its title and shape ("Q  3×3").
    QString caption() const;
    /// The operator as the caption of a stage that starts a line writes it ("  ← Q·Kᵀ dot").
    QString captionOperator() const;
    bool isMasked(Index row, Index column) const;
    /// What a cell shows: its value (stageValueText), or the masked cells' text.
    QString cellText(Index row, Index column) const;
};

/// Stage images hold at most this many cells a side (every k-th cell beyond).
inline constexpr int stageImageLimit = 1024;
/// Every how many cells along a side of `count` a stage's image takes one (1 up to stageImageLimit).
Index stageImageStep(Index count);
/// "3×2".
QString shapeText(Index rows, Index columns);
/// How the canvas writes a value: whole numbers as integers, others as the heatmaps write them.
QString stageValueText(double value);
/// The highlighted row and column of a stage of `indices` for the selected query and key (−1: none).
std::pair<int, int> stageHighlight(StageIndices indices, Index query, Index key);

/// Gathers the stages of the document's current head from its newest result (no copies of the result's
/// matrices; the session's inputs are copied, as the result was computed from them) and colours each stage's
/// image in one pass. A stage that shows the same numbers as in the build before keeps its image. Not
/// copyable: its stages point into it.
class PipelineStages {
    Q_DECLARE_TR_FUNCTIONS(PipelineStages)
public:
    PipelineStages() = default;
    PipelineStages(const PipelineStages&) = delete;
    PipelineStages& operator=(const PipelineStages&) = delete;

    /// Builds the stages of the current head of `document`'s newest result (none, and a message, without
    /// one).
    void build(const Document& document);

    /// The stages in formula order: "X", "X+PE", "Z", "Z+PE", "W_Q", "Q", "W_K", "K", "W_V", "V", "scores",
    /// "scaled", "masked", "weights", "output", "concat", "W_O", "final" (those that exist).
    const std::vector<PipelineStage>& stages() const { return m_stages; }
    /// The stage's index in stages(); −1 for an unknown name.
    int indexOf(const QString& name) const;
    /// The stages the last build coloured; the others kept their images or share the stage before them's.
    const QStringList& recoloured() const { return m_recoloured; }
    /// Token labels of the queries and keys, and the d_model dimensions of both sides.
    const QStringList& queries() const { return m_queries; }
    const QStringList& keys() const { return m_keys; }
    const QStringList& queryDimensions() const { return m_queryDims; }
    const QStringList& keyDimensions() const { return m_keyDims; }
    /// What the title line says after the title (" · head 1 of 2 · float32").
    const QString& header() const { return m_header; }
    /// Why there is nothing to show ("" when there are stages).
    const QString& message() const { return m_message; }
    /// The token labels beside a stage's rows and below its columns (none for parameters).
    QStringList rowLabelsOf(const PipelineStage& stage) const;
    QStringList columnLabelsOf(const PipelineStage& stage) const;
    /// A cell in words: "X [‘cat’, ‘noun’] = 1" (rows and columns named by token or by d_model dimension
    /// where the stage has them, else by index).
    QString describeCell(const PipelineStage& stage, Index row, Index column) const;

private:
    /// What the steps of build() share: the session, the head shown and how its inputs were positioned.
    struct Context;
    // The steps of build(), in order.
    void takeLabels(const Context& context);
    std::vector<const Matrix*> copyInputs(const Context& context);
    void addInputStages(const Context& context);
    void addProjectionStages(const Context& context);
    void addScoreStages(const Context& context);
    void addOutputStages(const Context& context);
    void colourStages(const std::vector<PipelineStage>& built, const std::vector<const Matrix*>& unchanged);
    void composeHeader(const Context& context);

    PipelineStage& add(const QString& name, const QString& title, const Matrix& values, StageIndices indices,
                       const QString& top = QString(), const QString& bottom = QString());
    /// Whether `values` is one of the inputs copied from the session.
    bool isCopy(const Matrix* values) const;

    std::shared_ptr<const AttentionResult> m_result;
    Matrix m_X, m_Z, m_WQ, m_WK, m_WV, m_WO; // the session's, as the result was computed from
    std::vector<PipelineStage> m_stages;
    QStringList m_recoloured;
    QStringList m_queries;
    QStringList m_keys;
    QStringList m_queryDims; // X's d_model dimensions: X's columns, W_Q's rows
    QStringList m_keyDims;   // the key side's: Z's columns, W_K's and W_V's rows
    QString m_header;
    QString m_message;
};

} // namespace qkv::ui
