// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The singular values of a head's QK circuit W_Q·W_Kᵀ and OV circuit W_V·W_O, largest first, as points joined
// by lines over their rank; the value axis linear or logarithmic. Only draws the values it is given.

#include <QString>
#include <QWidget>

#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPTextElement;

namespace qkv::ui {

class CircuitSpectrumPlot : public QWidget {
    Q_OBJECT
public:
    explicit CircuitSpectrumPlot(QWidget* parent = nullptr);
    ~CircuitSpectrumPlot() override;

    /// The two spectra, each descending; an empty one draws no series (a head without W_O has no OV
    /// circuit). Values that are not finite are left out.
    void setSpectra(const std::vector<double>& qk, const std::vector<double>& ov);
    /// A logarithmic value axis (zeros are left out there, having no place on it).
    void setLogarithmic(bool logarithmic);
    bool isLogarithmic() const { return m_logarithmic; }

    /// The values plotted, in rank order.
    std::vector<double> plottedQk() const;
    std::vector<double> plottedOv() const;

    QCustomPlot* plot() const { return m_plot; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void replot();

    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPGraph* m_qk;
    QCPGraph* m_ov;
    std::vector<double> m_qkValues;
    std::vector<double> m_ovValues;
    bool m_logarithmic = false;
};

} // namespace qkv::ui
