// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The step-by-step arithmetic behind the selected cell (i, j) of the current head, as the engine explains it.

#include "Explain.h"
#include "Figure.h"
#include "LatestJob.h"

#include <QString>
#include <QWidget>

#include <optional>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// Selectable monospace text of explainCell() for the document's selected cell and current head: q_i and
/// k_j, the products and their sum, the scale, the mask, the temperature, the normalizer over row i and
/// o_i = Σ_j a_ij v_j. When the result was computed in float32, row i's weights follow beside the same row
/// in float64 (comparePrecision(), off the GUI thread for large sessions). Buttons copy it as plain text or
/// as LaTeX. When the engine refused the session, its message is shown instead.
class MathPanel : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit MathPanel(Document* document, QWidget* parent = nullptr);

    /// The explanation as shown (or the engine's message when there is no result).
    QString plainText() const { return m_plain; }
    /// The explanation as a LaTeX align* environment ("" when there is no result).
    QString latexText() const { return m_latex; }
    /// The line above the text naming the cell ("Query ‘I’ (i = 0) → key ‘love’ (j = 1)", then
    /// " · head 2 of 3" when there are several heads, and " · float32" for a float32 result).
    QString header() const { return m_headerText; }

    QString figureName() const override { return QStringLiteral("math"); }
    QString figureTitle() const override;
    /// The header as a title over the monospace text, long lines wrapped with a hanging indent; shrunk when
    /// it would not fit `size`.
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    /// Tall enough for the whole explanation at its natural size.
    QSize defaultFigureSize() const override;

    /// Blocks until a float32 comparison running in the background is shown (for figures and tests).
    void finishComparison() const { m_comparison.wait(); }

private:
    void refresh();
    /// Starts (or clears) the float32 comparison of the selected row.
    void compareRow(int head);
    /// The cell's explanation and the comparison, as one text.
    void showText();
    void copyPlainText() const;
    void copyLatex() const;

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QLabel* m_header;
    QPlainTextEdit* m_text;
    QPushButton* m_copyPlain;
    QPushButton* m_copyLatex;
    QString m_plain;
    QString m_latex;
    QString m_headerText;
    QString m_cellPlain;
    QString m_cellLatex;
    QString m_precisionPlain;
    QString m_precisionLatex;
    mutable LatestJob<std::optional<PrecisionComparison>> m_comparison{this};
};

} // namespace qkv::ui
