// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Training workspace's list of runs: every folder a run of the window left, with its task, steps, start
// time and whether Save Model As copied it; Open asks for the selected run in the model view, Delete removes
// its folder after a question (there is no undo).

#include <QString>
#include <QWidget>

#include <functional>

class QLabel;
class QPushButton;
class QTreeWidget;

namespace qkv::ui {

class TrainingRunFolders;

class TrainingRunList : public QWidget {
    Q_OBJECT
public:
    TrainingRunList(TrainingRunFolders* folders, QWidget* parent = nullptr);

    /// Reads the folders again (the selection stays on the same run when it is still there).
    void refresh();
    /// The selected run's folder (empty when none).
    QString selectedFolder() const;
    /// Selects the run in `folder`; false when the list has no such run.
    bool select(const QString& folder);
    int runCount() const;
    /// Deletes the selected run after asking; false when nothing was deleted.
    bool deleteSelected();
    /// Replaces the delete question's dialog (for tests): given the question, true means delete.
    void setDeleteQuestion(std::function<bool(const QString&)> question)
    {
        m_deleteQuestion = std::move(question);
    }

signals:
    /// Open was pressed (or a run double-clicked): the window opens `folder`'s model.
    void openRequested(const QString& folder);
    /// A run's folder was deleted.
    void deleted(const QString& folder);
    /// What happened, for the panel's status line.
    void message(const QString& text);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void updateButtons();

    TrainingRunFolders* m_folders;
    QTreeWidget* m_tree;
    QPushButton *m_open, *m_delete, *m_refresh;
    QLabel* m_note;
    std::function<bool(const QString&)> m_deleteQuestion;
};

} // namespace qkv::ui
