// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Score Terms tab: the attention score of the selected cell (query i, key j) of a head cut from a model,
// taken apart by the components of the residual stream (qkv::decomposeScore), computed off the GUI thread
// whenever the selection, the head or the model changes (the newest request wins), only while on screen.

#include "DecompositionView.h"
#include "LatestJob.h"

#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace qkv {
class Model;
}

namespace qkv::ui {

class Document;
class ModelLoading;
class OnScreenRefresh;

class DecompositionPanel : public QWidget {
    Q_OBJECT
public:
    DecompositionPanel(ModelLoading* loading, Document* document, QWidget* parent = nullptr);

    DecompositionView* view() const { return m_view; }
    /// True while the newest decomposition is being computed.
    bool isBusy() const { return m_job.isBusy(); }

    /// How many of the largest terms are told in words.
    static constexpr int largestTermCount = 10;

private:
    /// What a decomposition is computed for: the same request shows the same terms.
    struct Request {
        std::shared_ptr<const Model> model;
        DecomposeRequest cell;
        friend bool operator==(const Request& a, const Request& b)
        {
            return a.model == b.model && a.cell.layer == b.cell.layer && a.cell.head == b.cell.head &&
                   a.cell.ids == b.cell.ids && a.cell.query == b.cell.query && a.cell.key == b.cell.key;
        }
    };

    void refresh();
    void showMessage(const QString& message);

    ModelLoading* m_loading;
    Document* m_document;
    DecompositionView* m_view;
    OnScreenRefresh* m_refresh;
    std::optional<Request> m_requested;    ///< of the terms shown or being computed
    LatestJob<DecompositionDisplay> m_job; // last: destroyed (waited for) first
};

} // namespace qkv::ui
