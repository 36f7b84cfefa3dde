// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A training run's probe sequence: the loss of predicting each next token as a bar per position, the
// positions the task determines in a colour of their own. A view: it draws the losses it is given. Between
// two clear() calls its y axis only grows, so the bars of later steps compare with the earlier ones.

#include "Figure.h"

#include <QRect>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

class QCustomPlot;
class QCPBars;
class QCPTextElement;

namespace qkv::ui {

class TrainingProbeView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit TrainingProbeView(QWidget* parent = nullptr);
    ~TrainingProbeView() override;

    /// No bars, `title` above the empty axes, the y axis from 0 to 1.
    void clear(const QString& title);
    /// A bar per position i of height losses[i]; scored[i] != 0 marks the positions the task determines. A
    /// loss that is not finite or is negative gets no bar.
    void setLosses(const std::vector<double>& losses, const std::vector<std::uint8_t>& scored,
                   const QString& title);

    int barCount() const;
    int scoredBarCount() const;
    /// Where the bars are drawn, in the view's coordinates, as last laid out.
    QRect dataArea() const;

    QString figureName() const override { return QStringLiteral("training_probe"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {640, 400}; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPBars *m_scored, *m_other;
    double m_top = 0.0;
};

} // namespace qkv::ui
