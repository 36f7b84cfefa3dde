// SPDX-License-Identifier: GPL-3.0-or-later
#include "SnapshotDiffView.h"

#include "AttentionEngine.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "FigureRow.h"
#include "Heatmap.h"
#include "LabelText.h"
#include "OnScreenRefresh.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace qkv::ui {

namespace {

/// The work of computing a session's result (as Document measures it): above its limit, off the GUI thread.
double workOf(const Session& session)
{
    return double(session.n()) * double(session.m()) * double(session.dK() + session.dV()) *
           double(session.headCount());
}

QString format(double value)
{
    return QString::number(value, 'g', 6);
}

/// The row and column labels of a compared matrix.
std::pair<QStringList, QStringList> labelsOf(const Session& session, ComparedMatrix which,
                                             const Matrix& matrix)
{
    const bool keyRows = which == ComparedMatrix::K || which == ComparedMatrix::V;
    const bool keyColumns = which == ComparedMatrix::Scores || which == ComparedMatrix::Scaled ||
                            which == ComparedMatrix::Weights;
    const QStringList rows = tokenLabels(keyRows ? session.keyTokens() : session.tokens, matrix.rows());
    const QStringList columns =
        keyColumns ? tokenLabels(session.keyTokens(), matrix.cols()) : QStringList(); // indices
    return {rows, columns};
}

} // namespace

SnapshotDiffView::SnapshotDiffView(Document* document, QWidget* parent)
    : QWidget(parent), m_document(document), m_snapshots(new QComboBox(this)),
      m_matrices(new QComboBox(this)), m_delete(new QPushButton(tr("Delete"), this)),
      m_messageLabel(new QLabel(this)), m_current(new Heatmap(this)), m_snapshotMap(new Heatmap(this)),
      m_differenceMap(new Heatmap(this)), m_changes(new QTableWidget(this))
{
    setObjectName(QStringLiteral("snapshotDiffView"));
    m_snapshots->setObjectName(QStringLiteral("snapshotChoice"));
    m_matrices->setObjectName(QStringLiteral("comparedMatrixChoice"));
    m_delete->setObjectName(QStringLiteral("deleteSnapshot"));
    m_delete->setToolTip(tr("Deletes the chosen snapshot from the session (undoable)"));
    m_messageLabel->setObjectName(QStringLiteral("snapshotMessage"));
    m_messageLabel->setWordWrap(true);
    m_changes->setObjectName(QStringLiteral("largestChanges"));
    for (ComparedMatrix which : comparedMatrices())
        m_matrices->addItem(QString::fromStdString(comparedMatrixName(which)), static_cast<int>(which));
    m_matrices->setCurrentIndex(m_matrices->findData(static_cast<int>(ComparedMatrix::Weights)));

    m_current->setFigureName(QStringLiteral("diff_now"));
    m_snapshotMap->setFigureName(QStringLiteral("diff_snapshot"));
    m_differenceMap->setFigureName(QStringLiteral("diff_delta"));
    m_differenceMap->setColorMode(Heatmap::ColorMode::Diverging);
    m_differenceMap->setColorBarLabel(tr("Δ = now − snapshot"));
    for (Heatmap* map : {m_current, m_snapshotMap, m_differenceMap})
        map->setMinimumSize(200, 160);

    m_changes->setColumnCount(4);
    m_changes->setHorizontalHeaderLabels({tr("cell"), tr("snapshot"), tr("now"), tr("Δ")});
    m_changes->verticalHeader()->setVisible(false);
    m_changes->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_changes->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_changes->setMinimumWidth(220);

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Snapshot"), this));
    controls->addWidget(m_snapshots, 1);
    controls->addWidget(m_delete);
    controls->addSpacing(12);
    controls->addWidget(new QLabel(tr("Matrix"), this));
    controls->addWidget(m_matrices, 1);
    auto* maps = new QHBoxLayout;
    maps->addWidget(m_current, 3);
    maps->addWidget(m_snapshotMap, 3);
    maps->addWidget(m_differenceMap, 3);
    maps->addWidget(m_changes, 2);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(controls);
    layout->addWidget(m_messageLabel);
    layout->addLayout(maps, 1);

    connect(m_delete, &QPushButton::clicked, this, &SnapshotDiffView::deleteSnapshot);
    m_refresh = new OnScreenRefresh(this, [this] { refresh(); });
    connect(m_snapshots, qOverload<int>(&QComboBox::currentIndexChanged), m_refresh,
            &OnScreenRefresh::request);
    connect(m_matrices, qOverload<int>(&QComboBox::currentIndexChanged), m_refresh,
            &OnScreenRefresh::request);
    connect(m_document, &Document::resultChanged, m_refresh, &OnScreenRefresh::request);
    connect(m_document, &Document::currentHeadChanged, m_refresh, &OnScreenRefresh::request);
    // Any change may bring other snapshots (a session opened, an undo): the list follows when it differs.
    connect(m_document, &Document::sessionChanged, this, &SnapshotDiffView::syncSnapshots);
    m_delete->setEnabled(false);
    syncSnapshots();
    m_refresh->request();
}

SnapshotDiffView::~SnapshotDiffView() = default;

// The snapshot list follows the session's; a new snapshot (the last) is chosen, a kept one stays chosen.
void SnapshotDiffView::syncSnapshots()
{
    const std::vector<Snapshot>& snapshots = m_document->session().snapshots;
    const int count = static_cast<int>(snapshots.size());
    const int before = m_snapshots->count();
    std::vector<std::shared_ptr<const Session>> shown;
    for (const Snapshot& snapshot : snapshots)
        shown.push_back(snapshot.session);
    if (shown == m_listed && before == count)
        return;
    m_listed = std::move(shown);
    const QString chosen = m_snapshots->currentText();
    {
        const QSignalBlocker blocker(m_snapshots);
        m_snapshots->clear();
        for (const Snapshot& snapshot : snapshots)
            m_snapshots->addItem(QString::fromStdString(snapshot.name));
        int index = count > before ? count - 1 : m_snapshots->findText(chosen);
        m_snapshots->setCurrentIndex(index >= 0 ? index : count - 1);
    }
    m_delete->setEnabled(count > 0);
    m_refresh->request();
}

void SnapshotDiffView::setSnapshot(int index)
{
    m_snapshots->setCurrentIndex(index);
}

int SnapshotDiffView::snapshot() const
{
    return m_snapshots->currentIndex();
}

void SnapshotDiffView::setComparedMatrix(ComparedMatrix which)
{
    m_matrices->setCurrentIndex(m_matrices->findData(static_cast<int>(which)));
}

ComparedMatrix SnapshotDiffView::comparedMatrix() const
{
    return static_cast<ComparedMatrix>(m_matrices->currentData().toInt());
}

void SnapshotDiffView::deleteSnapshot()
{
    if (QUndoCommand* command = makeRemoveSnapshotCommand(m_document, snapshot()))
        m_document->push(command);
}

void SnapshotDiffView::showMessage(const QString& message)
{
    m_message = message;
    m_title = message;
    m_messageLabel->setText(message);
    m_messageLabel->setVisible(true);
    m_difference = MatrixDifference();
    for (Heatmap* map : {m_current, m_snapshotMap, m_differenceMap})
        map->clear();
    m_changes->setRowCount(0);
}

void SnapshotDiffView::refresh()
{
    const std::vector<Snapshot>& snapshots = m_document->session().snapshots;
    const int index = snapshot();
    if (index < 0 || index >= static_cast<int>(snapshots.size())) {
        showMessage(tr("No snapshot yet: Edit ▸ Take Snapshot… (Ctrl+K) keeps the current inputs, and this "
                       "view then shows what later edits changed."));
        return;
    }
    const std::shared_ptr<const Session> session = snapshots[static_cast<std::size_t>(index)].session;
    if (m_computed.session == session) {
        display(m_computed);
        return;
    }
    const bool heavy = workOf(*session) > Document::synchronousWorkLimit;
    if (heavy)
        showMessage(tr("Computing the snapshot…"));
    const std::uint64_t memoryLimit = m_document->memoryLimit();
    m_job.run(
        heavy,
        [session, memoryLimit]() {
            Computed computed;
            computed.session = session;
            try {
                ComputeOptions options;
                options.memoryLimit = memoryLimit;
                computed.result =
                    std::make_shared<const AttentionResult>(computeAttention(*session, options));
            } catch (const std::exception& e) {
                computed.error = QString::fromStdString(e.what());
            }
            return computed;
        },
        [this](Computed computed) {
            m_computed = std::move(computed);
            display(m_computed);
        });
}

void SnapshotDiffView::display(const Computed& computed)
{
    const std::shared_ptr<const AttentionResult> now = m_document->result();
    const QString name = m_snapshots->currentText();
    if (!computed.result) {
        showMessage(tr("The snapshot “%1” cannot be computed: %2").arg(name, computed.error));
        return;
    }
    if (!now) {
        showMessage(tr("Nothing to compare: %1").arg(m_document->resultError()));
        return;
    }
    const Session& current = m_document->session();
    const Session& old = *computed.session;
    const ComparedMatrix which = comparedMatrix();
    const int head = std::max(0, m_document->currentHead());
    const QString what =
        QString::fromStdString(comparedMatrixName(which)) +
        (isPerHead(which) && now->heads.size() > 1 ? tr(" (head %1)").arg(head + 1) : QString());
    const Matrix* after = qkv::comparedMatrix(current, *now, which, head);
    const Matrix* before = qkv::comparedMatrix(old, *computed.result, which, head);
    if (!after || !before) {
        showMessage(tr("The snapshot “%1” has no head %2 (it has %3)")
                        .arg(name)
                        .arg(head + 1)
                        .arg(computed.result->heads.size()));
        return;
    }
    m_difference = compareMatrices(*before, *after, listedChanges);
    if (!m_difference.shapeProblem.empty()) {
        const MatrixDifference kept = m_difference;
        showMessage(tr("%1 cannot be compared with “%2”: its shape differs (%3)")
                        .arg(what, name, QString::fromStdString(kept.shapeProblem)));
        m_difference = kept;
        return;
    }
    m_message.clear();
    m_messageLabel->setVisible(false);

    const auto [rows, columns] = labelsOf(current, which, *after);
    const auto [oldRows, oldColumns] = labelsOf(old, which, *before);
    const bool weights = which == ComparedMatrix::Weights;
    for (Heatmap* map : {m_current, m_snapshotMap})
        map->setColorMode(weights ? Heatmap::ColorMode::Sequential : Heatmap::ColorMode::Diverging);
    m_current->setMatrix(*after, rows, columns);
    m_snapshotMap->setMatrix(*before, oldRows, oldColumns);
    // One colour scale for both, so equal colours are equal numbers.
    if (weights) {
        m_current->setFixedRange(0.0, 1.0);
        m_snapshotMap->setFixedRange(0.0, 1.0);
    } else {
        const double extent = std::max(after->size() ? after->cwiseAbs().maxCoeff() : 0.0,
                                       before->size() ? before->cwiseAbs().maxCoeff() : 0.0);
        const double bound = extent > 0 ? extent : 1.0;
        m_current->setFixedRange(-bound, bound);
        m_snapshotMap->setFixedRange(-bound, bound);
    }
    m_current->setTitle(tr("%1 now").arg(what));
    m_snapshotMap->setTitle(tr("%1 in “%2”").arg(what, name));
    m_differenceMap->setMatrix(m_difference.delta, rows, columns);
    const double largest = m_difference.largestChange > 0 ? m_difference.largestChange : 1.0;
    m_differenceMap->setFixedRange(-largest, largest);
    m_differenceMap->setTitle(m_difference.changedCells == 0 ? tr("Δ: no cell changed")
                                                             : tr("Δ: %1 cells changed, largest |Δ| = %2")
                                                                   .arg(m_difference.changedCells)
                                                                   .arg(format(m_difference.largestChange)));

    m_changes->setRowCount(static_cast<int>(m_difference.largest.size()));
    for (int r = 0; r < static_cast<int>(m_difference.largest.size()); ++r) {
        const CellChange& change = m_difference.largest[static_cast<std::size_t>(r)];
        const QString cell =
            QStringLiteral("%1, %2").arg(rows.value(static_cast<int>(change.row)),
                                         columns.isEmpty() ? QString::number(change.column)
                                                           : columns.value(static_cast<int>(change.column)));
        const QString texts[] = {cell, format(change.before), format(change.after), format(change.delta)};
        for (int c = 0; c < 4; ++c)
            m_changes->setItem(r, c, new QTableWidgetItem(texts[c]));
    }
    m_title = tr("%1: now against “%2”").arg(what, name);
}

void SnapshotDiffView::waitForSnapshot() const
{
    m_refresh->flush();
    m_job.wait();
}

QString SnapshotDiffView::figureTitle() const
{
    waitForSnapshot();
    return m_title;
}

void SnapshotDiffView::renderFigure(QPaintDevice* device, const QSize& size) const
{
    waitForSnapshot();
    renderFigureRow(device, size, m_title, {m_current, m_snapshotMap, m_differenceMap});
}

} // namespace qkv::ui
