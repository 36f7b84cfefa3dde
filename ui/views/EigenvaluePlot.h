// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Eigenvalues in the complex plane with the unit circle: those of a head's W_OV and those of its full OV
// circuit through the vocabulary, as two series of points. Only draws the values it is given.

#include <QWidget>

#include <complex>
#include <vector>

class QCustomPlot;
class QCPCurve;
class QCPGraph;
class QCPTextElement;

namespace qkv::ui {

class EigenvaluePlot : public QWidget {
    Q_OBJECT
public:
    explicit EigenvaluePlot(QWidget* parent = nullptr);
    ~EigenvaluePlot() override;

    /// Either list may be empty (no series drawn); values that are not finite are left out. The axes keep
    /// one scale for both directions and always show the unit circle.
    void setEigenvalues(const std::vector<std::complex<double>>& ov,
                        const std::vector<std::complex<double>>& fullOv);

    /// How many points each series draws.
    int ovPointCount() const;
    int fullOvPointCount() const;

    QCustomPlot* plot() const { return m_plot; }

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void fitAxes();

    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPCurve* m_circle;
    QCPGraph* m_ov;
    QCPGraph* m_fullOv;
    double m_extent = 1.0; // the largest |Re| or |Im| drawn, at least the circle's
};

} // namespace qkv::ui
