#include "ResultViews.h"

#include "Document.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "MatrixRef.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

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

    auto* lockRange = new QCheckBox(tr("Lock colour ranges"), this);
    lockRange->setObjectName(QStringLiteral("lockColorRange"));
    lockRange->setToolTip(
        tr("Keep every heatmap's colour scale as it is now, so that two states of the session "
           "can be compared by colour"));
    m_tabs->setCornerWidget(lockRange, Qt::TopRightCorner);
    connect(lockRange, &QCheckBox::toggled, this, &ResultViews::setColorRangesLocked);

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
        {"finalOutput", tr("Final output"), tr("query"), tr("output dimension"), diverging, tr("value"),
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
    m_tabs->setCurrentWidget(heatmap(QStringLiteral("weights")));

    for (Heatmap* map : m_tabs->findChildren<Heatmap*>())
        connect(map, &Heatmap::cellClicked, this,
                [this, map](int row, int column) { select(map, row, column); });
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
        maps << static_cast<Heatmap*>(m_tabs->widget(tab));
    return maps;
}

Heatmap* ResultViews::addHeatmap(const QString& name, const QString& tabText)
{
    auto* map = new Heatmap(m_tabs);
    map->setObjectName(QStringLiteral("heatmap_") + name);
    map->setFigureName(name == QLatin1String("finalOutput") ? QStringLiteral("final_output") : name);
    m_tabs->addTab(map, tabText);
    return map;
}

void ResultViews::refresh()
{
    const std::shared_ptr<const AttentionResult> result = m_document->result();
    const QList<Heatmap*> maps = m_tabs->findChildren<Heatmap*>();
    if (!result || result->heads.empty()) {
        m_error->setText(tr("Cannot compute attention: %1").arg(m_document->resultError()));
        m_error->show();
        for (Heatmap* map : maps)
            map->clear();
        return;
    }
    m_error->hide();

    const Session& session = m_document->session();
    const int headCount = static_cast<int>(result->heads.size());
    const int head = std::clamp(m_document->currentHead(), 0, headCount - 1);
    const HeadResult& r = result->heads[static_cast<std::size_t>(head)];
    const QStringList queries = tokenLabels(session.tokens, r.Q.rows());
    QStringList queriesMarked = queries; // rows with no key to attend to are marked where keys are columns
    for (Index i : r.emptyRows)
        if (i < queriesMarked.size())
            queriesMarked[static_cast<int>(i)] += QStringLiteral(" ∅");
    const QStringList keys = tokenLabels(session.keyTokens(), r.K.rows());
    const QString suffix = headCount > 1 ? tr(" — head %1 of %2").arg(head + 1).arg(headCount) : QString();
    const QString keySide = session.context ? QStringLiteral("Z") : QStringLiteral("X");

    auto show = [this](const char* name, const QString& title, const Matrix& values, const QStringList& rows,
                       const QStringList& columns) {
        Heatmap* map = heatmap(QLatin1String(name));
        map->setTitle(title);
        map->setMatrix(values, rows, columns);
    };
    show("Q", tr("Queries Q = X·W_Q") + suffix, r.Q, queries, {});
    show("K", tr("Keys K = %1·W_K").arg(keySide) + suffix, r.K, keys, {});
    show("V", tr("Values V = %1·W_V").arg(keySide) + suffix, r.V, keys, {});
    show("scores", tr("Scores (%1)").arg(QLatin1String(toString(session.score))) + suffix, r.scores,
         queriesMarked, keys);
    show("scaled", tr("Scaled scores") + suffix, r.scaled, queriesMarked, keys);
    show("mask", tr("Mask (1 = may attend)") + suffix, r.allowed.cast<double>(), queriesMarked, keys);
    Heatmap* weights = heatmap(QStringLiteral("weights"));
    weights->setMasked(&r.allowed);
    QStringList rowStats;
    for (const RowStats& stats : r.rowStats)
        rowStats << tr("H %1 · %2").arg(stats.entropy, 0, 'f', 2).arg(stats.support);
    weights->setRowAnnotations(rowStats, tr("entropy (nats)\n· support"));
    show("weights", tr("Attention weights") + suffix, r.weights, queriesMarked, keys);
    show("output", tr("Head output A·V") + suffix, r.output, queries, {});
    show("finalOutput", session.W_O ? tr("Final output concat·W_O") : tr("Final output (concatenated heads)"),
         result->output, queries, {});
    showSelection();
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
    const int query = static_cast<int>(m_document->selectedQuery());
    const int key = static_cast<int>(m_document->selectedKey());
    for (auto it = m_roles.cbegin(); it != m_roles.cend(); ++it) {
        switch (it.value()) {
        case IndexRoles::KeyRows:
            it.key()->setHighlight(key, -1);
            break;
        case IndexRoles::QueryRows:
            it.key()->setHighlight(query, -1);
            break;
        case IndexRoles::QueryKey:
            it.key()->setHighlight(query, key);
            break;
        }
    }
}

void ResultViews::setColorRangesLocked(bool locked)
{
    for (Heatmap* map : m_tabs->findChildren<Heatmap*>()) {
        if (map == heatmap(QStringLiteral("weights")) || map == heatmap(QStringLiteral("mask")))
            continue; // always 0 to 1
        if (locked) {
            const auto [lower, upper] = map->colorRange();
            map->setFixedRange(lower, upper);
        } else {
            map->clearFixedRange();
        }
    }
}

} // namespace qkv::ui
