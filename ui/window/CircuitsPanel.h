// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Circuits tab of the head's workbench: the CircuitsView of the open head, following every edit. The
// session's own head gives the spectra and the prompt's QK table (computed at once, they are small); for a
// head cut from a model, the model opened for it (ModelLoading) gives the full OV circuit and the lists of
// what one token seeks and writes, computed off the GUI thread (the newest request wins) and only while the
// tab is on screen.

#include "CircuitsContent.h"
#include "LatestJob.h"

#include <QWidget>

#include <memory>
#include <optional>
#include <tuple>

namespace qkv::ui {

class CircuitsView;
class Document;
class ModelLoading;
class OnScreenRefresh;

class CircuitsPanel : public QWidget {
    Q_OBJECT
public:
    CircuitsPanel(ModelLoading* loading, Document* document, QWidget* parent = nullptr);
    ~CircuitsPanel() override;

    CircuitsView* view() const { return m_view; }
    /// True while the model's part for the newest request is being computed.
    bool isBusy() const { return m_job.isBusy(); }

private:
    /// What the model's part is computed for: the same model, head and token give the same part.
    struct Request {
        const Model* model = nullptr;
        Index layer = 0, head = 0;
        std::optional<std::int64_t> query;
        friend bool operator==(const Request& a, const Request& b)
        {
            return std::tie(a.model, a.layer, a.head, a.query) == std::tie(b.model, b.layer, b.head, b.query);
        }
    };

    void refresh();
    void refreshModelPart();
    /// The model's part is not available: why, in grey, in place of the full OV circuit and of the lists.
    void showModelMessage(const QString& fullOvWhy, const QString& listsWhy, const QStringList& tokens = {});
    void finish(ModelCircuitsOutcome outcome, const Request& request, const QStringList& tokens, int lookup);

    ModelLoading* m_loading;
    Document* m_document;
    CircuitsView* m_view;
    OnScreenRefresh* m_refresh;
    int m_lookupToken = 0; ///< the prompt's token the lists are for: the selected query, or the one chosen
    std::optional<Request> m_requested;
    /// Kept between requests: the model's weights as circuits, and the full OV circuit of the last head.
    std::shared_ptr<const ModelCircuits> m_circuits;
    std::weak_ptr<const Model> m_circuitsModel;
    std::optional<FullOvCircuit> m_fullOv;
    std::optional<Request> m_fullOvHead;   ///< the head m_fullOv is of (query unset)
    LatestJob<ModelCircuitsOutcome> m_job; // last: destroyed (waited for) first
};

} // namespace qkv::ui
