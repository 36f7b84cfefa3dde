// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One attention score of a model's head taken apart (qkv::decomposeScore): every query-side component of
// the residual stream against every key-side one, as a heatmap with the rows' and columns' sums beside it,
// the score, and the largest terms in words.

#include "Decompose.h"

#include <QString>
#include <QWidget>

#include <optional>
#include <vector>

class QLabel;
class QScrollArea;

namespace qkv::ui {

class Heatmap;

/// One term of the decomposition: query-side component `row` with key-side component `column`.
struct DecompositionTerm {
    Index row = 0, column = 0;
    double value = 0;
};

/// What the view shows: a decomposition with its largest terms (by |value|, largest first) under `title`,
/// or, without one, `message` (what to do, what is being computed, or what went wrong).
struct DecompositionDisplay {
    std::optional<ScoreDecomposition> decomposition;
    std::vector<DecompositionTerm> largest;
    QString title;
    QString message;
};

/// Draws a DecompositionDisplay: the C × C terms plus a last column of the rows' sums (the query side's
/// parts), a last row of the columns' sums (the key side's) and their corner, the score; diverging
/// colours centred at 0 spanning the terms (a larger sum takes the end colour). Only draws.
class DecompositionView : public QWidget {
    Q_OBJECT
public:
    explicit DecompositionView(QWidget* parent = nullptr);

    void setDisplay(const DecompositionDisplay& display);
    const DecompositionDisplay& display() const { return m_display; }

    /// The terms' heatmap (objectName "decompositionHeatmap"): (C + 1) × (C + 1) with the sums.
    Heatmap* heatmap() const { return m_heatmap; }
    /// The line above the heatmap with the score (objectName "decompositionScore").
    QString scoreText() const;
    /// The largest terms in words, one a line (objectName "decompositionTerms").
    QString termsText() const;
    /// The message shown instead of a decomposition ("" when one is shown).
    QString message() const;

private:
    void showMessage(const QString& message);

    DecompositionDisplay m_display;
    QLabel* m_message;
    QLabel* m_score;
    Heatmap* m_heatmap;
    QLabel* m_terms;
    QScrollArea* m_termsScroll;
};

} // namespace qkv::ui
