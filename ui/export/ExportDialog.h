// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The figure export dialog: which view, which format, what size; then a file, a folder or the clipboard.

#include "FigureExport.h"

#include <QDialog>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;

namespace qkv::ui {

class Figure;

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    /// `all`: every figure goes to one folder (the view choice is hidden).
    ExportDialog(const QList<const Figure*>& figures, int current, bool all, QWidget* parent = nullptr);

    const Figure* figure() const;
    FigureFormat format() const;
    /// Figure pixels; 0 × 0 means each view's own default (export all).
    QSize figureSize() const;
    double scale() const;

signals:
    void copyRequested();

private:
    void useDefaultSize();

    QList<const Figure*> m_figures;
    QComboBox* m_view;
    QComboBox* m_format;
    QSpinBox* m_width;
    QSpinBox* m_height;
    QDoubleSpinBox* m_scale;
};

} // namespace qkv::ui
