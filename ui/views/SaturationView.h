// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The softmax saturation experiment of Brenndoerfer's article (docs/references.md): the selected row's scores
// times a factor c, its weights and
// the gradient that still reaches each score, in four panels (the slider's c and three chosen factors).

#include "EigenTypes.h"
#include "Figure.h"
#include "SaturationExperiment.h"
#include "Session.h"

#include <QList>
#include <QString>
#include <QWidget>

#include <array>
#include <vector>

class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPLayoutGrid;
class QCPTextElement;
class QDoubleSpinBox;
class QLabel;
class QSlider;

namespace qkv::ui {

class Document;
class OnScreenRefresh;

/// For the selected query row of the current head: z = c · S'/τ (the scaled scores as the engine normalizes
/// them, times c) under the session's normalizer (or softmax, sparsemax, α-entmax), the weights as bars with
/// the top weight in %, and below them ∂L/∂z for the upstream signal ∂L/∂p = e_k (k the top key, or the
/// selected key) with its norm, on one gradient scale for all panels so vanishing gradients show. The factors
/// are view state: they never edit the session. Only draws; the numbers come from saturateRow().
class SaturationView : public QWidget, public Figure {
    Q_OBJECT
public:
    /// Which normalizer the panels use.
    enum class NormalizerChoice { Session, Softmax, Sparsemax, Entmax };
    /// Which key the unit upstream signal asks more weight for.
    enum class Upstream { TopKey, SelectedKey };

    explicit SaturationView(Document* document, QWidget* parent = nullptr);
    ~SaturationView() override;

    /// The slider's factor (0.1 … 100, logarithmic).
    double sliderFactor() const;
    void setSliderFactor(double factor);
    /// The factors of the three fixed panels (default 1, 5, 20, as the article's code).
    std::array<double, 3> panelFactors() const;
    void setPanelFactors(const std::array<double, 3>& factors);
    void setNormalizerChoice(NormalizerChoice choice);
    void setUpstream(Upstream upstream);

    /// What is shown: the slider's panel first, then the three fixed ones; empty when nothing is.
    std::vector<SaturationPanel> panels() const { return m_panels; }
    NormalizerSpec shownNormalizer() const { return m_spec; }
    QString title() const { return m_title; }
    QCustomPlot* plot() const { return m_plot; }

    QString figureName() const override { return QStringLiteral("saturation"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1280, 560}; }

private:
    void refresh();
    void clearPlot(const QString& title);
    void showSliderFactor();

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QSlider* m_slider;
    QLabel* m_sliderValue;
    std::array<QDoubleSpinBox*, 3> m_factors{};
    QComboBox* m_normalizer;
    QComboBox* m_upstream;
    QCustomPlot* m_plot;
    QCPTextElement* m_titleElement;
    QCPTextElement* m_footnote;
    QCPLayoutGrid* m_grid;
    std::array<QCPTextElement*, 4> m_captions{};
    std::array<QCPAxisRect*, 4> m_weightRects{};
    std::array<QCPAxisRect*, 4> m_gradientRects{};
    std::vector<SaturationPanel> m_panels;
    NormalizerSpec m_spec;
    QString m_title;
};

} // namespace qkv::ui
