#pragma once
// The step-by-step arithmetic behind the selected cell (i, j) of the current head, as the engine explains it.

#include "Figure.h"

#include <QString>
#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace qkv::ui {

class Document;

/// Selectable monospace text of explainCell() for the document's selected cell and current head: q_i and
/// k_j, the products and their sum, the scale, the mask, the temperature, the normalizer over row i and
/// o_i = Σ_j a_ij v_j. Buttons copy it as plain text or as LaTeX. When the engine refused the session, its
/// message is shown instead.
class MathPanel : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit MathPanel(Document* document, QWidget* parent = nullptr);

    /// The explanation as shown (or the engine's message when there is no result).
    QString plainText() const { return m_plain; }
    /// The explanation as a LaTeX align* environment ("" when there is no result).
    QString latexText() const { return m_latex; }
    /// The line above the text naming the cell ("Query ‘I’ (i = 0) → key ‘love’ (j = 1)", then
    /// " · head 2 of 3" when there are several heads).
    QString header() const { return m_headerText; }

    QString figureName() const override { return QStringLiteral("math"); }
    QString figureTitle() const override { return m_headerText; }
    /// The header as a title over the monospace text, long lines wrapped with a hanging indent; shrunk when
    /// it would not fit `size`.
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    /// Tall enough for the whole explanation at its natural size.
    QSize defaultFigureSize() const override;

private:
    void refresh();
    void copyPlainText() const;
    void copyLatex() const;

    Document* m_document;
    QLabel* m_header;
    QPlainTextEdit* m_text;
    QPushButton* m_copyPlain;
    QPushButton* m_copyLatex;
    QString m_plain;
    QString m_latex;
    QString m_headerText;
};

} // namespace qkv::ui
