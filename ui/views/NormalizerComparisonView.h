// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The normalizer comparison plot adapter: one query row's weights under five normalizers as grouped bars.

#include "EigenTypes.h"
#include "Figure.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

class QCustomPlot;
class QCPBarsGroup;
class QCPItemText;
class QCPTextElement;
class QMouseEvent;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// For the selected query row of the current head: its weights under softmax, sparsemax, 1.5-entmax,
/// sigmoid and hardmax at the session's temperature (compareNormalizers), one group of bars per key and one
/// colour per normalizer. Masked keys get zero bars and "(masked)" in their label. Only draws.
class NormalizerComparisonView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit NormalizerComparisonView(Document* document, QWidget* parent = nullptr);
    ~NormalizerComparisonView() override;

    /// What the bars show: one row per normalizer (seriesNames()), one column per key; empty when nothing is
    /// shown.
    Matrix shownWeights() const { return m_weights; }
    QStringList seriesNames() const { return m_names; }
    /// The number of bar series in the plot.
    int seriesCount() const;
    /// The key tick labels ("love", "love (masked)").
    QStringList keyLabels() const { return m_keyLabels; }
    QString title() const { return m_title; }
    /// Whether each bar's value is written above it (few keys, bars wide enough at the last layout).
    bool showsBarValues() const { return m_barValuesShown; }
    QCustomPlot* plot() const { return m_plot; }

    QString figureName() const override { return QStringLiteral("normalizers"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override;

private:
    void refresh();
    void clearPlot(const QString& title);
    void onMouseMove(QMouseEvent* event);
    void removeBarValues();
    void afterLayout();

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPBarsGroup* m_group;
    Matrix m_weights;
    QStringList m_names;
    QStringList m_keyLabels;
    QString m_title;
    QList<QCPItemText*> m_barValues; // created only when there are few keys
    bool m_barValuesShown = false;
};

} // namespace qkv::ui
