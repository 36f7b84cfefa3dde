// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Scaled against unscaled attention, the comparison of Brenndoerfer's article (docs/references.md): the
// current head computed by the engine under
// two scale/temperature settings, the selected row's weights side by side and every row's entropy.

#include "EigenTypes.h"
#include "Figure.h"
#include "LatestJob.h"
#include "ScalingComparison.h"

#include <QString>
#include <QWidget>

#include <array>
#include <optional>

class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPLayoutGrid;
class QCPTextElement;
class QDoubleSpinBox;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// Two settings, A (default: ÷√d_k) and B (default: no scaling), each a scale (√d_k, none, a constant) and a
/// temperature (default: the session's). compareScaling() runs the engine on a copy of the session under each
/// (off the GUI thread for large sessions). Three panels: the selected row's weights under A, under B, and
/// the entropy of every row under both with ln m for reference. The settings are view state, never session
/// edits.
class ScalingView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit ScalingView(Document* document, QWidget* parent = nullptr);
    ~ScalingView() override;

    /// Setting `side` (0: A, 1: B). A temperature of 0 means "the session's τ".
    void setSetting(int side, Scale scale, double temperature = 0.0);
    /// The settings as computed (the session's τ filled in).
    std::array<ScalingSetting, 2> settings() const;

    /// The engine's numbers last shown (empty when nothing is).
    std::optional<ScalingComparison> comparison() const;
    QString title() const;
    QString errorText() const { return m_error; }
    QCustomPlot* plot() const { return m_plot; }
    /// Blocks until the newest computation is shown (export and tests).
    void waitForResult() const;

    QString figureName() const override { return QStringLiteral("scaling"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1200, 480}; }

private:
    struct Outcome {
        std::optional<ScalingComparison> comparison;
        QString error;
    };
    void refresh();
    void show(Outcome outcome);
    void clearPlot(const QString& title);
    QString settingText(const ScalingSide& side) const;

    Document* m_document;
    OnScreenRefresh* m_refresh;
    std::array<QComboBox*, 2> m_scale{};
    std::array<QDoubleSpinBox*, 2> m_constant{};
    std::array<QDoubleSpinBox*, 2> m_temperature{};
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPLayoutGrid* m_grid;
    std::array<QCPTextElement*, 3> m_captions{};
    std::array<QCPAxisRect*, 3> m_rects{};
    std::optional<ScalingComparison> m_comparison;
    QString m_title;
    QString m_error;
    Index m_row = 0;
    mutable LatestJob<Outcome> m_job{this};
};

} // namespace qkv::ui
