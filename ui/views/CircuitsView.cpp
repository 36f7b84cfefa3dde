// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitsView.h"

#include "CircuitSpectrumPlot.h"
#include "EigenvaluePlot.h"
#include "Heatmap.h"
#include "SeriesPalette.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QSplitter>
#include <QVBoxLayout>

#include <cmath>

namespace qkv::ui {

namespace {

// A note under a plot: grey, wrapped, hidden when empty.
QLabel* newNote(const QString& name, QWidget* parent)
{
    auto* label = new QLabel(parent);
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setForegroundRole(QPalette::PlaceholderText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->hide();
    return label;
}

void setNote(QLabel* label, const QString& text)
{
    label->setText(text);
    label->setVisible(!text.isEmpty());
}

QWidget* column(QWidget* parent, std::initializer_list<QWidget*> widgets)
{
    auto* box = new QWidget(parent);
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    for (QWidget* widget : widgets)
        layout->addWidget(widget, widget->inherits("QLabel") ? 0 : 1);
    return box;
}

QListWidget* newList(const QString& name, QWidget* parent)
{
    auto* list = new QListWidget(parent);
    list->setObjectName(name);
    list->setSelectionMode(QAbstractItemView::NoSelection);
    list->setFocusPolicy(Qt::NoFocus);
    list->setMinimumHeight(list->fontMetrics().height() * 3);
    return list;
}

// The tokens alone, which a narrow list still shows; each value in its item's tooltip.
void fillList(QListWidget* list, const QList<CircuitToken>& tokens)
{
    list->clear();
    for (const CircuitToken& token : tokens) {
        auto* item = new QListWidgetItem(token.label, list);
        item->setToolTip(QStringLiteral("%1: %2").arg(token.label, CircuitsView::formatNumber(token.value)));
    }
}

} // namespace

CircuitsView::CircuitsView(QWidget* parent)
    : QWidget(parent), m_title(new QLabel(this)), m_busy(new QProgressBar(this)),
      m_logarithmic(new QCheckBox(tr("&Log scale"), this)), m_spectrum(new CircuitSpectrumPlot(this)),
      m_eigenvalues(new EigenvaluePlot(this)),
      m_spectraMessage(newNote(QStringLiteral("circuitSpectraMessage"), this)), m_copying(new QLabel(this)),
      m_fullCopying(new QLabel(this)), m_qkTable(new Heatmap(this)),
      m_qkMessage(newNote(QStringLiteral("circuitQkMessage"), this)), m_lookup(new QComboBox(this)),
      m_topKeys(newList(QStringLiteral("circuitTopKeys"), this)),
      m_topWrites(newList(QStringLiteral("circuitTopWrites"), this)),
      m_listsMessage(newNote(QStringLiteral("circuitListsMessage"), this))
{
    setObjectName(QStringLiteral("circuitsView"));
    m_title->setObjectName(QStringLiteral("circuitTitle"));
    QFont bold = m_title->font();
    bold.setBold(true);
    m_title->setFont(bold);
    m_busy->setObjectName(QStringLiteral("circuitBusy"));
    m_busy->setRange(0, 0);
    m_busy->setMaximumWidth(100);
    m_busy->setMaximumHeight(m_title->sizeHint().height());
    m_busy->setToolTip(tr("Computing the model's circuits in the background"));
    QSizePolicy keepRoom = m_busy->sizePolicy();
    keepRoom.setRetainSizeWhenHidden(true); // the header does not jump when it shows
    m_busy->setSizePolicy(keepRoom);
    m_busy->hide();
    m_logarithmic->setObjectName(QStringLiteral("circuitLogScale"));
    m_logarithmic->setToolTip(tr("Singular values on a logarithmic axis"));
    m_copying->setObjectName(QStringLiteral("circuitCopyingScore"));
    m_fullCopying->setObjectName(QStringLiteral("circuitFullOvCopyingScore"));
    for (QLabel* label : {m_copying, m_fullCopying}) {
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        label->setToolTip(tr("Σ Re λ / Σ |λ| over the eigenvalues: near 1, attending to a token raises that "
                             "token's own logit (copying); near −1, lowers it"));
    }
    m_qkTable->setObjectName(QStringLiteral("circuitQkTable"));
    m_qkTable->setFigureName(QStringLiteral("circuits_qk"));
    m_qkTable->setColorMode(Heatmap::ColorMode::Diverging);
    m_qkTable->setAxisTitles(tr("query"), tr("key"));
    m_qkTable->setColorBarLabel(tr("x·W_QK·yᵀ"));
    m_qkTable->setMinimumSize(160, 110);

    auto* header = new QHBoxLayout;
    header->setContentsMargins(4, 2, 4, 0);
    header->addWidget(m_title);
    header->addWidget(m_busy);
    header->addSpacing(8);
    header->addWidget(m_copying);
    header->addSpacing(8);
    header->addWidget(m_fullCopying);
    header->addStretch(1);
    header->addWidget(m_logarithmic);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->setObjectName(QStringLiteral("circuitSplitter"));
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(column(splitter, {m_spectrum, m_spectraMessage}));
    splitter->addWidget(m_eigenvalues);
    splitter->addWidget(column(splitter, {m_qkTable, m_qkMessage}));
    splitter->addWidget(createLists());
    // The lists need room for a token and its value; the plots share the rest.
    for (int i = 0; i < splitter->count(); ++i)
        splitter->setStretchFactor(i, i == splitter->count() - 1 ? 3 : 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addLayout(header);
    layout->addWidget(splitter, 1);

    connect(m_logarithmic, &QCheckBox::toggled, m_spectrum, &CircuitSpectrumPlot::setLogarithmic);
    connect(m_lookup, qOverload<int>(&QComboBox::activated), this, &CircuitsView::lookupTokenChosen);
    setSessionDisplay({});
    setModelDisplay({});
}

CircuitsView::~CircuitsView() = default;

QWidget* CircuitsView::createLists()
{
    auto* box = new QWidget(this);
    box->setObjectName(QStringLiteral("circuitLists"));
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(2, 0, 2, 0);
    layout->setSpacing(2);
    m_listsBox = new QWidget(box);
    auto* inner = new QVBoxLayout(m_listsBox);
    inner->setContentsMargins(0, 0, 0, 0);
    inner->setSpacing(2);
    auto* tokenRow = new QHBoxLayout;
    auto* tokenLabel = new QLabel(tr("&Token:"), m_listsBox);
    tokenLabel->setBuddy(m_lookup);
    m_lookup->setObjectName(QStringLiteral("circuitToken"));
    m_lookup->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_lookup->setMinimumContentsLength(6);
    m_lookup->setToolTip(tr("The prompt's token the lists are for (follows the selected query)"));
    tokenRow->addWidget(tokenLabel);
    tokenRow->addWidget(m_lookup, 1);
    inner->addLayout(tokenRow);
    auto* lists = new QHBoxLayout;
    lists->setSpacing(4);
    auto* seeks = new QLabel(tr("Looks for"), m_listsBox);
    seeks->setToolTip(tr("The vocabulary's keys this token as query scores highest, by the full QK circuit "
                         "W_E·W_QK·W_Eᵀ"));
    auto* writes = new QLabel(tr("Writes"), m_listsBox);
    writes->setToolTip(tr("The logits that attending to this token raises most, by the full OV circuit "
                          "W_E·W_OV·W_U"));
    m_topKeys->setToolTip(seeks->toolTip());
    m_topWrites->setToolTip(writes->toolTip());
    lists->addWidget(column(m_listsBox, {seeks, m_topKeys}));
    lists->addWidget(column(m_listsBox, {writes, m_topWrites}));
    inner->addLayout(lists, 1);
    layout->addWidget(m_listsBox, 1);
    layout->addWidget(m_listsMessage);
    layout->addStretch(0);
    box->setMinimumWidth(fontMetrics().averageCharWidth() * 30);
    return box;
}

void CircuitsView::setSessionDisplay(CircuitsSessionDisplay display)
{
    m_session = std::move(display);
    m_title->setText(m_session.title);
    m_spectrum->setSpectra(m_session.qkSingularValues, m_session.ovSingularValues);
    setNote(m_spectraMessage, m_session.spectraMessage);
    if (m_session.qkTable.size() > 0) {
        m_qkTable->setMatrix(m_session.qkTable, m_session.queryTokens, m_session.keyTokens);
        m_qkTable->setTitle(tr("QK table"));
    } else {
        m_qkTable->clear();
        m_qkTable->setTitle(QString());
    }
    setNote(m_qkMessage, m_session.qkMessage);
    updateEigenvalues();
    updateCopying();
}

void CircuitsView::setModelDisplay(CircuitsModelDisplay display)
{
    m_model = std::move(display);
    {
        const QSignalBlocker quiet(m_lookup);
        m_lookup->clear();
        m_lookup->addItems(m_model.lookupTokens);
        m_lookup->setCurrentIndex(m_model.lookupToken);
        m_lookup->setEnabled(!m_model.lookupTokens.isEmpty());
    }
    fillList(m_topKeys, m_model.topKeys);
    fillList(m_topWrites, m_model.topWrites);
    setNote(m_listsMessage, m_model.listsMessage);
    // Without a model there is nothing to list: the message alone.
    m_listsBox->setVisible(!m_model.lookupTokens.isEmpty());
    const int row = m_model.lookupToken;
    m_qkTable->setHighlight(row >= 0 && row < m_session.queryTokens.size() ? row : -1, -1);
    updateEigenvalues();
    updateCopying();
}

void CircuitsView::setBusy(bool busy)
{
    m_busy->setVisible(busy);
}

bool CircuitsView::isBusy() const
{
    return m_busy->isVisibleTo(this);
}

QString CircuitsView::copyingText() const
{
    return m_copying->text();
}

QString CircuitsView::fullOvCopyingText() const
{
    return m_fullCopying->text();
}

QString CircuitsView::formatNumber(double value)
{
    return std::isfinite(value) ? QString::number(value, 'g', 4) : QStringLiteral("—");
}

void CircuitsView::updateEigenvalues()
{
    m_eigenvalues->setEigenvalues(m_session.ovEigenvalues, m_model.fullOvEigenvalues);
}

void CircuitsView::updateCopying()
{
    // Each line starts with its series' mark in its colour: the plot's legend.
    const auto mark = [](const QString& symbol, const QColor& color) {
        return QStringLiteral("<span style=\"color:%1\">%2</span> ").arg(color.name(), symbol);
    };
    m_copying->setText(m_session.ovCopyingScore
                           ? mark(QStringLiteral("○"), seriesColor(1)) +
                                 tr("W_OV copying %1").arg(formatNumber(*m_session.ovCopyingScore))
                           : QString());
    m_copying->setVisible(m_session.ovCopyingScore.has_value());
    if (m_model.fullOvCopyingScore) {
        m_fullCopying->setForegroundRole(QPalette::WindowText);
        m_fullCopying->setText(mark(QStringLiteral("×"), seriesColor(2)) +
                               tr("full OV copying %1").arg(formatNumber(*m_model.fullOvCopyingScore)));
    } else {
        m_fullCopying->setForegroundRole(QPalette::PlaceholderText);
        m_fullCopying->setText(m_model.fullOvMessage);
    }
    m_fullCopying->setVisible(!m_fullCopying->text().isEmpty());
}

} // namespace qkv::ui
