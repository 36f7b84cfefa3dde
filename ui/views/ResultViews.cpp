// SPDX-License-Identifier: GPL-3.0-or-later
#include "ResultViews.h"

#include "Document.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "MatrixRef.h"
#include "OnScreenRefresh.h"
#include "PipelineView.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <memory>
#include <utility>

namespace qkv::ui {

ResultViews::ResultViews(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_error(new QLabel(this)), m_tabs(new QTabWidget(this))
{
    setObjectName(QStringLiteral("resultViews"));
    m_error->setObjectName(QStringLiteral("resultError"));
    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(QStringLiteral("QLabel { color: #a40000; padding: 4px; }"));
    m_error->setToolTip(tr("The engine refused the session: nothing is computed until this is fixed"));
    m_error->hide();
    m_tabs->setObjectName(QStringLiteral("resultTabs"));
    m_tabs->setDocumentMode(true);
    m_tabs->setUsesScrollButtons(true);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_error);
    layout->addWidget(m_tabs, 1);

    // The whole computation on one canvas first; the single matrices stay for close inspection.
    m_pipeline = new PipelineView(m_document, m_tabs);
    m_tabs->addTab(m_pipeline, tr("Pipeline"));
    m_tabs->setTabToolTip(0, tr("The whole computation of the current head on one canvas"));

    const auto diverging = Heatmap::ColorMode::Diverging;
    const auto sequential = Heatmap::ColorMode::Sequential;
    struct Tab {
        const char* name;
        QString text;
        QString rows;
        QString columns;
        Heatmap::ColorMode mode;
        QString measure;
        IndexRoles roles;
    };
    const Tab tabs[] = {
        {"Q", tr("Q"), tr("query"), tr("d_k"), diverging, tr("value"), IndexRoles::QueryRows},
        {"K", tr("K"), tr("key"), tr("d_k"), diverging, tr("value"), IndexRoles::KeyRows},
        {"V", tr("V"), tr("key"), tr("d_v"), diverging, tr("value"), IndexRoles::KeyRows},
        {"scores", tr("Scores"), tr("query"), tr("key"), diverging, tr("score"), IndexRoles::QueryKey},
        {"scaled", tr("Scaled"), tr("query"), tr("key"), diverging, tr("scaled score"), IndexRoles::QueryKey},
        {"mask", tr("Mask"), tr("query"), tr("key"), Heatmap::ColorMode::Binary, QString(),
         IndexRoles::QueryKey},
        {"weights", tr("Weights"), tr("query"), tr("key"), sequential, tr("weight"), IndexRoles::QueryKey},
        {"output", tr("Output"), tr("query"), tr("d_v"), diverging, tr("value"), IndexRoles::QueryRows},
        {"finalOutput", tr("Final"), tr("query"), tr("output dimension"), diverging, tr("value"),
         IndexRoles::QueryRows},
    };
    for (const Tab& tab : tabs) {
        Heatmap* map = addHeatmap(QLatin1String(tab.name), tab.text);
        map->setAxisTitles(tab.rows, tab.columns);
        map->setColorMode(tab.mode);
        map->setColorBarLabel(tab.measure);
        m_roles.insert(map, tab.roles);
    }
    Heatmap* mask = heatmap(QStringLiteral("mask"));
    mask->setFixedRange(0.0, 1.0);
    // The mask is painted here as in the mask editor; the window applies it (views only draw).
    mask->setPaintable(true);
    mask->setToolTip(tr("Drag: allow or mask a rectangle (the first cell decides; one undo step)\n"
                        "Space: flip the selected cell · Shift+drag: pan · wheel: zoom"));
    connect(mask, &Heatmap::rectanglePainted, this, &ResultViews::maskPainted);
    heatmap(QStringLiteral("weights"))->setFixedRange(0.0, 1.0);
    m_tabs->setCurrentWidget(m_pipeline);

    for (Heatmap* map : m_tabs->findChildren<Heatmap*>()) {
        connect(map, &Heatmap::cellClicked, this,
                [this, map](int row, int column) { select(map, row, column); });
        auto* refresh = new OnScreenRefresh(map, [this, map] { refreshHeatmap(map); });
        m_refresh.insert(map, refresh);
        connect(map, &Heatmap::aboutToRenderFigure, refresh, &OnScreenRefresh::flush);
    }
    connect(m_document, &Document::selectionChanged, this, &ResultViews::showSelection);
    connect(m_document, &Document::resultChanged, this, &ResultViews::refresh);
    connect(m_document, &Document::currentHeadChanged, this, &ResultViews::refresh);
    connect(m_document, &Document::sessionChanged, this, [this](Document::Changes changes) {
        if (changes & Document::Tokens)
            refresh();
    });
    refresh();
}

Heatmap* ResultViews::heatmap(const QString& name) const
{
    return m_tabs->findChild<Heatmap*>(QStringLiteral("heatmap_") + name);
}

QList<Heatmap*> ResultViews::heatmaps() const
{
    QList<Heatmap*> maps;
    for (int tab = 0; tab < m_tabs->count(); ++tab)
        if (auto* map = qobject_cast<Heatmap*>(m_tabs->widget(tab)))
            maps << map;
    return maps;
}

Heatmap* ResultViews::addHeatmap(const QString& name, const QString& tabText)
{
    auto* map = new Heatmap(m_tabs);
    map->setObjectName(QStringLiteral("heatmap_") + name);
    map->setFigureName(name == QLatin1String("finalOutput") ? QStringLiteral("final_output") : name);
    const int tab = m_tabs->addTab(map, tabText);
    if (name == QLatin1String("finalOutput"))
        m_tabs->setTabToolTip(tab, tr("Final output: the heads' outputs side by side, times W_O"));
    return map;
}

void ResultViews::refresh()
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current)
        m_error->setText(current.error);
    m_error->setVisible(!current);
    for (auto it = m_refresh.cbegin(); it != m_refresh.cend(); ++it) {
        m_stale.insert(it.key());
        it.value()->request();
        if (it.value()->isStale())
            it.key()->releaseMatrix(); // hidden: it keeps no old result alive until it is shown
    }
}

void ResultViews::refreshHeatmap(Heatmap* map)
{
    if (m_stale.remove(map))
        showResult(map);
    highlightSelection(map);
}

namespace {

/// `matrix`, a member of `result`, shared with whoever holds the pointer (not copied).
std::shared_ptr<const Matrix> shared(const std::shared_ptr<const AttentionResult>& result,
                                     const Matrix& matrix)
{
    return std::shared_ptr<const Matrix>(result, &matrix);
}

} // namespace

void ResultViews::showResult(Heatmap* map)
{
    const CurrentHeadResult current = m_document->currentHeadResult();
    if (!current) {
        map->clear();
        return;
    }
    const std::shared_ptr<const AttentionResult>& result = current.result;
    const HeadResult& r = *current.head;
    const int head = current.index, headCount = current.count;
    const Session& session = m_document->session();
    const QString name = map->objectName().mid(QStringLiteral("heatmap_").size());
    const IndexRoles roles = m_roles.value(map);
    const QStringList queries = tokenLabels(session.tokens, r.Q.rows());
    QStringList rows = roles == IndexRoles::KeyRows ? tokenLabels(session.keyTokens(), r.K.rows()) : queries;
    if (roles == IndexRoles::QueryKey) // rows with no key to attend to are marked where keys are columns
        for (Index i : r.emptyRows)
            if (i < rows.size())
                rows[static_cast<int>(i)] += QStringLiteral(" ∅");
    const QStringList keys =
        roles == IndexRoles::QueryKey ? tokenLabels(session.keyTokens(), r.K.rows()) : QStringList();
    const QString suffix = headCount > 1 ? tr(" — head %1 of %2").arg(head + 1).arg(headCount) : QString();
    const QString keySide = session.context ? QStringLiteral("Z") : QStringLiteral("X");

    const auto show = [&](const QString& title, std::shared_ptr<const Matrix> values) {
        map->setTitle(title);
        map->setMatrix(std::move(values), rows, keys);
    };
    if (name == QLatin1String("Q")) {
        show(tr("Queries Q = X·W_Q") + suffix, shared(result, r.Q));
    } else if (name == QLatin1String("K")) {
        show(tr("Keys K = %1·W_K").arg(keySide) + suffix, shared(result, r.K));
    } else if (name == QLatin1String("V")) {
        show(tr("Values V = %1·W_V").arg(keySide) + suffix, shared(result, r.V));
    } else if (name == QLatin1String("scores")) {
        show(tr("Scores (%1)").arg(QLatin1String(toString(session.score))) + suffix,
             shared(result, r.scores));
    } else if (name == QLatin1String("scaled")) {
        show(tr("Scaled scores") + suffix, shared(result, r.scaled));
    } else if (name == QLatin1String("mask")) {
        show(tr("Mask (1 = may attend)") + suffix, std::make_shared<const Matrix>(r.allowed.cast<double>()));
    } else if (name == QLatin1String("weights")) {
        map->setMasked(std::shared_ptr<const MaskMatrix>(result, &r.allowed));
        QStringList rowStats;
        rowStats.reserve(static_cast<int>(r.rowStats.size()));
        for (const RowStats& stats : r.rowStats)
            rowStats << tr("H %1 · %2").arg(stats.entropy, 0, 'f', 2).arg(stats.support);
        map->setRowAnnotations(rowStats, tr("entropy (nats)\n· support"));
        show(tr("Attention weights") + suffix, shared(result, r.weights));
    } else if (name == QLatin1String("output")) {
        show(tr("Head output A·V") + suffix, shared(result, r.output));
    } else if (name == QLatin1String("finalOutput")) {
        show(session.W_O ? tr("Final output concat·W_O") : tr("Final output (concatenated heads)"),
             shared(result, result->output));
    }
}

void ResultViews::select(Heatmap* map, int row, int column)
{
    switch (m_roles.value(map)) {
    case IndexRoles::KeyRows:
        m_document->setSelection(m_document->selectedQuery(), row);
        break;
    case IndexRoles::QueryRows:
        m_document->setSelection(row, m_document->selectedKey());
        break;
    case IndexRoles::QueryKey:
        m_document->setSelection(row, column);
        break;
    }
}

void ResultViews::showSelection()
{
    for (OnScreenRefresh* refresh : std::as_const(m_refresh))
        refresh->request();
}

void ResultViews::highlightSelection(Heatmap* map)
{
    const int query = static_cast<int>(m_document->selectedQuery());
    const int key = static_cast<int>(m_document->selectedKey());
    switch (m_roles.value(map)) {
    case IndexRoles::KeyRows:
        map->setHighlight(key, -1);
        break;
    case IndexRoles::QueryRows:
        map->setHighlight(query, -1);
        break;
    case IndexRoles::QueryKey:
        map->setHighlight(query, key);
        break;
    }
}

void ResultViews::setColorRangesLocked(bool locked)
{
    for (Heatmap* map : m_tabs->findChildren<Heatmap*>()) {
        if (map == heatmap(QStringLiteral("weights")) || map == heatmap(QStringLiteral("mask")))
            continue; // always 0 to 1
        if (locked) {
            m_refresh.value(map)->flush(); // the range of the newest result, also for a hidden tab
            const auto [lower, upper] = map->colorRange();
            map->setFixedRange(lower, upper);
        } else {
            map->clearFixedRange();
        }
    }
}

} // namespace qkv::ui
