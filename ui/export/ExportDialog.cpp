// SPDX-License-Identifier: GPL-3.0-or-later
#include "ExportDialog.h"

#include "Figure.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace qkv::ui {

ExportDialog::ExportDialog(const QList<const Figure*>& figures, int current, bool all, QWidget* parent)
    : QDialog(parent), m_figures(figures), m_view(new QComboBox(this)), m_format(new QComboBox(this)),
      m_width(new QSpinBox(this)), m_height(new QSpinBox(this)), m_scale(new QDoubleSpinBox(this))
{
    setWindowTitle(all ? tr("Export All Views") : tr("Export Figure"));
    m_view->setObjectName(QStringLiteral("exportView"));
    for (const Figure* figure : figures)
        m_view->addItem(figure->figureTitle().isEmpty() ? figure->figureName()
                                                        : figure->figureTitle() + QStringLiteral("  (") +
                                                              figure->figureName() + QLatin1Char(')'));
    m_view->setCurrentIndex(std::max(0, current));
    m_format->setObjectName(QStringLiteral("exportFormat"));
    m_format->addItem(tr("PNG image"), int(FigureFormat::Png));
    m_format->addItem(tr("SVG vector drawing"), int(FigureFormat::Svg));
    m_format->addItem(tr("PDF document"), int(FigureFormat::Pdf));
    m_format->setToolTip(tr("SVG and PDF keep text and lines as vectors, for papers and slides"));
    for (QSpinBox* side : {m_width, m_height}) {
        side->setRange(minimumFigureSide, maximumFigureSide);
        side->setSuffix(tr(" px"));
        side->setToolTip(tr("Figure size in pixels of 1/96 inch; text keeps its size, so a larger figure has "
                            "relatively smaller labels"));
    }
    m_width->setObjectName(QStringLiteral("exportWidth"));
    m_height->setObjectName(QStringLiteral("exportHeight"));
    m_scale->setObjectName(QStringLiteral("exportScale"));
    m_scale->setRange(minimumFigureScale, maximumFigureScale);
    m_scale->setSingleStep(0.5);
    m_scale->setValue(2.0);
    m_scale->setSuffix(QStringLiteral("×"));
    m_scale->setToolTip(
        tr("PNG only: pixels per figure pixel (2 gives a sharp image on high-resolution screens "
           "and in print)"));
    auto* defaultSize = new QCheckBox(tr("Each view's own size"), this);
    defaultSize->setObjectName(QStringLiteral("exportDefaultSize"));
    defaultSize->setVisible(all);

    auto* form = new QFormLayout;
    if (!all)
        form->addRow(tr("View:"), m_view);
    form->addRow(tr("Format:"), m_format);
    form->addRow(tr("Width:"), m_width);
    form->addRow(tr("Height:"), m_height);
    form->addRow(QString(), defaultSize);
    form->addRow(tr("PNG scale:"), m_scale);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
    buttons->addButton(all ? tr("Choose Folder…") : tr("Save As…"), QDialogButtonBox::AcceptRole)
        ->setDefault(true);
    if (!all) {
        QPushButton* copy = buttons->addButton(tr("Copy to Clipboard"), QDialogButtonBox::ActionRole);
        copy->setObjectName(QStringLiteral("exportCopy"));
        connect(copy, &QPushButton::clicked, this, &ExportDialog::copyRequested);
    }
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);

    connect(m_view, &QComboBox::currentIndexChanged, this, &ExportDialog::useDefaultSize);
    connect(m_format, &QComboBox::currentIndexChanged, this,
            [this] { m_scale->setEnabled(format() == FigureFormat::Png); });
    connect(defaultSize, &QCheckBox::toggled, this, [this](bool on) {
        m_width->setEnabled(!on);
        m_height->setEnabled(!on);
    });
    defaultSize->setChecked(all);
    useDefaultSize();
}

const Figure* ExportDialog::figure() const
{
    return m_figures.value(m_view->currentIndex());
}

FigureFormat ExportDialog::format() const
{
    return static_cast<FigureFormat>(m_format->currentData().toInt());
}

QSize ExportDialog::figureSize() const
{
    return m_width->isEnabled() ? QSize(m_width->value(), m_height->value()) : QSize();
}

double ExportDialog::scale() const
{
    return m_scale->value();
}

void ExportDialog::useDefaultSize()
{
    if (const Figure* current = figure()) {
        m_width->setValue(current->defaultFigureSize().width());
        m_height->setValue(current->defaultFigureSize().height());
    }
}

} // namespace qkv::ui
