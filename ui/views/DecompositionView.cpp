// SPDX-License-Identifier: GPL-3.0-or-later
#include "DecompositionView.h"

#include "Heatmap.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace qkv::ui {

namespace {

QString signedValue(double value)
{
    return (value >= 0 ? QStringLiteral("+") : QString()) + QString::number(value, 'f', 3);
}

QString name(const ScoreDecomposition& decomposition, Index component)
{
    return QString::fromStdString(decomposition.components[std::size_t(component)]);
}

/// The terms with the rows' sums as a last column, the columns' sums as a last row, the score in the corner.
Matrix withSums(const ScoreDecomposition& decomposition)
{
    const Index count = decomposition.terms.rows();
    Matrix shown(count + 1, count + 1);
    shown.topLeftCorner(count, count) = decomposition.terms;
    for (Index c = 0; c < count; ++c) {
        shown(c, count) = decomposition.query[std::size_t(c)];
        shown(count, c) = decomposition.key[std::size_t(c)];
    }
    shown(count, count) = decomposition.score;
    return shown;
}

} // namespace

DecompositionView::DecompositionView(QWidget* parent)
    : QWidget(parent), m_message(new QLabel(this)), m_score(new QLabel(this)), m_heatmap(new Heatmap(this)),
      m_terms(new QLabel), m_termsScroll(new QScrollArea(this))
{
    setObjectName(QStringLiteral("decompositionView"));
    m_message->setObjectName(QStringLiteral("decompositionMessage"));
    m_message->setWordWrap(true);
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setForegroundRole(QPalette::PlaceholderText);
    m_score->setObjectName(QStringLiteral("decompositionScore"));
    m_score->setWordWrap(true);
    m_score->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_score->setToolTip(tr("Rows: the query's part from each component of the residual stream; columns: the "
                           "key's part from each; Σ: a row's or a column's sum; the corner: the score"));
    m_heatmap->setObjectName(QStringLiteral("decompositionHeatmap"));
    m_heatmap->setFigureName(QStringLiteral("score_terms"));
    m_heatmap->setAxisTitles(tr("query side"), tr("key side"));
    m_heatmap->setColorMode(Heatmap::ColorMode::Diverging);
    m_heatmap->setColorBarLabel(tr("term"));
    m_terms->setObjectName(QStringLiteral("decompositionTerms"));
    m_terms->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_terms->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_terms->setMargin(4);
    m_termsScroll->setWidget(m_terms);
    m_termsScroll->setWidgetResizable(true);
    m_termsScroll->setFrameShape(QFrame::NoFrame);
    m_termsScroll->setMinimumWidth(fontMetrics().horizontalAdvance(QLatin1Char('x')) * 30);
    m_score->setMaximumWidth(fontMetrics().horizontalAdvance(QLatin1Char('x')) * 60);
    m_termsScroll->setMaximumWidth(fontMetrics().horizontalAdvance(QLatin1Char('x')) * 60);

    // The heatmap takes the whole height, the score and the largest terms are the column beside it.
    auto* words = new QVBoxLayout;
    words->setContentsMargins(0, 0, 0, 0);
    words->addWidget(m_score);
    words->addWidget(m_termsScroll, 1);
    auto* mapAndWords = new QHBoxLayout;
    mapAndWords->setContentsMargins(0, 0, 0, 0);
    mapAndWords->addWidget(m_heatmap, 1);
    mapAndWords->addLayout(words, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 2, 4, 2);
    layout->setSpacing(2);
    layout->addWidget(m_message, 1);
    layout->addLayout(mapAndWords, 1);
    m_heatmap->setCellDescriber([this](Index row, Index column) {
        if (!m_display.decomposition)
            return QString();
        const ScoreDecomposition& d = *m_display.decomposition;
        const Index count = d.terms.rows();
        const double value = m_heatmap->values()(row, column);
        if (row == count && column == count)
            return tr("the score, the sum of every term: %1").arg(signedValue(value));
        if (column == count)
            return tr("query side ‘%1’ with the whole key side: %2").arg(name(d, row), signedValue(value));
        if (row == count)
            return tr("key side ‘%1’ with the whole query side: %2").arg(name(d, column), signedValue(value));
        return tr("query side ‘%1’ × key side ‘%2’: %3")
            .arg(name(d, row), name(d, column), signedValue(value));
    });
    showMessage(tr("Select a cell of the attention to take its score apart."));
}

void DecompositionView::showMessage(const QString& message)
{
    m_message->setText(message);
    m_message->show();
    m_score->hide();
    m_heatmap->clear();
    m_heatmap->hide();
    m_termsScroll->hide();
}

void DecompositionView::setDisplay(const DecompositionDisplay& display)
{
    m_display = display;
    if (!display.decomposition) {
        showMessage(display.message);
        return;
    }
    const ScoreDecomposition& d = *display.decomposition;
    QStringList labels;
    for (const std::string& component : d.components)
        labels << QString::fromStdString(component);
    labels << QStringLiteral("Σ");
    m_heatmap->setMatrix(withSums(d), labels, labels);
    // Centred at 0 and spanning the terms, so the sums (often larger) do not wash the terms out.
    const double extent = d.terms.size() ? d.terms.cwiseAbs().maxCoeff() : 0.0;
    const double bound = extent > 0 && std::isfinite(extent) ? extent : 1.0;
    m_heatmap->setFixedRange(-bound, bound);
    // Room for most rows' names (the dock scrolls when it is lower).
    const int line = fontMetrics().height();
    m_heatmap->setMinimumHeight(std::clamp(int(d.terms.rows() + 1) * line * 4 / 5 + 3 * line, 140, 480));
    m_score->setText(tr("<b>%1</b>: score %2, the sum of %3 × %3 terms")
                         .arg(display.title.toHtmlEscaped(), signedValue(d.score))
                         .arg(d.components.size()));

    QStringList lines{tr("<b>Largest terms</b>")};
    int rank = 0;
    for (const DecompositionTerm& term : display.largest)
        lines << tr("%1. query side %2, key side %3: %4 of %5")
                     .arg(++rank)
                     .arg(name(d, term.row).toHtmlEscaped(), name(d, term.column).toHtmlEscaped(),
                          signedValue(term.value), signedValue(d.score));
    m_terms->setText(lines.join(QStringLiteral("<br>")));
    m_message->hide();
    m_score->show();
    m_heatmap->show();
    m_termsScroll->show();
}

QString DecompositionView::scoreText() const
{
    return m_score->isHidden() ? QString() : m_score->text();
}

QString DecompositionView::termsText() const
{
    return m_termsScroll->isHidden() ? QString() : m_terms->text();
}

QString DecompositionView::message() const
{
    return m_message->isHidden() ? QString() : m_message->text();
}

} // namespace qkv::ui
