// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model's next-token prediction at one position: the top tokens of the unmodified model and of the model
// with the interventions side by side, the loss at every position of both as a strip under the tokens, the
// mean losses and a logit difference. Only draws: the numbers arrive finished (PredictionDisplay).

#include "Figure.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <optional>
#include <vector>

class QCPAxisRect;
class QCPColorMap;
class QCPItemRect;
class QCPLayoutGrid;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;

namespace qkv::ui {

/// One bar: a next token and its probability.
struct PredictionBar {
    QString token;
    double probability = 0.0;
    double logProbability = 0.0;
    /// Its log-probability in this run minus in the other one (the unmodified run shows none).
    std::optional<double> delta;
};

/// What one run (unmodified, or with the interventions) shows.
struct PredictionRunDisplay {
    QList<PredictionBar> top; ///< most probable first
    std::vector<double> loss; ///< one per position; NaN at the last (no next token)
    std::optional<double> meanLoss;
    std::optional<double> logitDifference; ///< logit(A) − logit(B) at the position, when a pair is picked
};

/// Everything the view draws, finished.
struct PredictionDisplay {
    QString title;      ///< the model and its text
    QStringList tokens; ///< the input tokens' labels
    int position = -1;  ///< the query position whose next token is shown
    PredictionRunDisplay clean;
    PredictionRunDisplay modified;
    QString interventions; ///< "L0.H1 session, L3.H2 zero"; empty when none is switched on
    QString logitLabel;    ///< "logit(␣Mary) − logit(␣John)"; empty without a pair
    QString message;       ///< shown instead of the plots (no model, an error) when not empty
};

class PredictionView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit PredictionView(QWidget* parent = nullptr);
    ~PredictionView() override;

    void setDisplay(PredictionDisplay display);
    const PredictionDisplay& display() const { return m_display; }
    /// The text under the plots: the mean losses and the logit difference, as drawn.
    QString summaryText() const;

    QString figureName() const override { return QStringLiteral("prediction"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1100, 720}; }

    /// How a number is written here: `digits` significant digits, "—" when it is not finite.
    static QString formatNumber(double value, int digits = 3);

protected:
    void resizeEvent(QResizeEvent* event) override;

signals:
    /// A cell of the loss strip was clicked: show the prediction after that position.
    void positionClicked(int position);

private:
    void draw();
    void drawBars(QCPAxisRect* rect, const PredictionRunDisplay& run, const QColor& color, double upper,
                  int limit);
    /// How many bars fit a plot `height` pixels high (3 to 10).
    int barLimitFor(int height) const;
    void drawLossStrip();
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    /// The position under `pixel` of the loss strip, −1 outside it.
    int positionAt(const QPoint& pixel) const;

    PredictionDisplay m_display;
    int m_barLimit = 10;
    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPLayoutGrid* m_barGrid;
    QCPTextElement* m_cleanCaption;
    QCPTextElement* m_modifiedCaption;
    QCPAxisRect* m_cleanBars;
    QCPAxisRect* m_modifiedBars;
    QCPAxisRect* m_strip;
    QCPColorMap* m_lossMap;
    QCPItemRect* m_marker;
    QCPTextElement* m_summary;
};

} // namespace qkv::ui
