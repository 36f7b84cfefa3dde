// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A snapshot against the current result: one matrix side by side and as a difference heatmap.

#include "Figure.h"
#include "LatestJob.h"
#include "MatrixDifference.h"
#include "Snapshots.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace qkv::ui {

class Document;
class Heatmap;
class OnScreenRefresh;

/// Picks a snapshot (kept in the session: Edit ▸ Take Snapshot…) and a matrix, and shows that matrix now,
/// in the snapshot (computed from the snapshot's inputs) and their difference now − snapshot (diverging,
/// white at 0), with the largest changes listed (cell, snapshot, now, Δ). Matrices of different shapes are
/// reported, not compared. "Delete" removes the snapshot (one undo step). Only draws: the difference comes
/// from core (compareMatrices).
class SnapshotDiffView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit SnapshotDiffView(Document* document, QWidget* parent = nullptr);
    ~SnapshotDiffView() override;

    /// Rows listed in the table of largest changes.
    static constexpr std::size_t listedChanges = 20;

    /// Chooses the snapshot (an index into the session's snapshots) and the matrix.
    void setSnapshot(int index);
    int snapshot() const;
    void setComparedMatrix(ComparedMatrix which);
    ComparedMatrix comparedMatrix() const;

    // What is shown, for tests and export.
    /// The last comparison (empty delta when nothing is compared).
    const MatrixDifference& difference() const { return m_difference; }
    /// Why nothing is compared ("" while the heatmaps show a comparison).
    QString message() const { return m_message; }
    Heatmap* currentMap() const { return m_current; }
    Heatmap* snapshotMap() const { return m_snapshotMap; }
    Heatmap* differenceMap() const { return m_differenceMap; }
    /// Blocks until the chosen snapshot's result is computed and shown.
    void waitForSnapshot() const;

    QString figureName() const override { return QStringLiteral("diff"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override { return {1500, 560}; }

private:
    struct Computed {
        std::shared_ptr<const Session> session; ///< what was computed
        std::shared_ptr<const AttentionResult> result;
        QString error;
    };
    void syncSnapshots();
    void refresh();
    void display(const Computed& computed);
    void showMessage(const QString& message);
    void deleteSnapshot();

    Document* m_document;
    OnScreenRefresh* m_refresh;
    QComboBox* m_snapshots;
    QComboBox* m_matrices;
    QPushButton* m_delete;
    QLabel* m_messageLabel;
    Heatmap* m_current;
    Heatmap* m_snapshotMap;
    Heatmap* m_differenceMap;
    QTableWidget* m_changes;
    mutable LatestJob<Computed> m_job{this};
    Computed m_computed; // the last snapshot result, reused while its session is chosen
    std::vector<std::shared_ptr<const Session>> m_listed; // the snapshots the list shows
    MatrixDifference m_difference;
    QString m_message;
    QString m_title;
};

} // namespace qkv::ui
