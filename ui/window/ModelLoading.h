// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A head of a real model in the window: File ▸ Open Model… (the dialog, then the forward pass in the
// background while a busy indicator shows) and Edit ▸ Reset to Model (the head as it was loaded, one undo
// step, after any edits).

#include "ModelSession.h"

#include <QObject>

#include <functional>
#include <memory>
#include <optional>

class QWidget;

namespace qkv::ui {

class Document;

/// The model link a head opened from `model` gets: its folder, ids, layer and head, and the interventions:
/// the head itself (kind Session, so its edits reach the prediction), then those of `current` that are not
/// of kind Session when `current` links the same folder and ids (another head of the same text).
ModelLink linkFor(const Model& model, const ModelHeadRequest& request, const Session& current);

class ModelLoading : public QObject {
    Q_OBJECT
public:
    /// `mayReplace` asks whether the open session may be replaced (it offers to save unsaved changes).
    ModelLoading(Document* document, QWidget* window, std::function<bool()> mayReplace);

    /// The document the heads open into.
    Document* document() const { return m_document; }
    /// File ▸ Open Model…: the dialog, then open().
    void openDialog();
    /// Runs the forward pass for `request` on a worker thread (the window shows a busy indicator and waits,
    /// taking no clicks or keys meanwhile) and replaces the document's session with the head. False, with the
    /// message in `error` (and shown when `showErrors`), when the model refuses or another open is still
    /// running.
    bool open(const std::shared_ptr<const Model>& model, const ModelHeadRequest& request,
              QString* error = nullptr, bool showErrors = true);
    /// Opens layer `layer`, query head `head` of the model opened last, for the same tokens and precision,
    /// as open() does, after asking whether the session may be replaced. False when there is no model, the
    /// person keeps the session, or the model refuses.
    bool openHead(Index layer, Index head);
    /// The same on other token ids (`text` titles them, "" when they came from no text): the head as it reads
    /// those tokens (a patching experiment's clean prompt).
    bool openHead(Index layer, Index head, const std::vector<std::int64_t>& ids, const std::string& text);
    /// Opens the same layer and heads of the model opened last on other token ids (`text` titles them, ""
    /// when they came from no text), as openHead() does.
    bool openIds(const std::vector<std::int64_t>& ids, const std::string& text = std::string());
    /// The model opened last and what was asked of it (null before any model was opened).
    std::shared_ptr<const Model> model() const { return m_model; }
    const ModelHeadRequest& request() const { return m_request; }
    /// Opens the model folder `link` names in the background for the session open (saved with that link),
    /// without replacing the session: model() and request() then name it and modelOpened() is emitted. A
    /// folder that cannot be opened is told to `problem`; nothing happens when another session was opened
    /// meanwhile.
    void reopen(const ModelLink& link, std::function<void(const QString&)> problem);
    /// Edit ▸ Reset to Model: the session as loaded, as one undo step.
    void resetToModel();
    bool hasModelSession() const { return m_loaded.has_value(); }
    /// True while open() waits for a forward pass.
    bool isOpening() const { return m_opening; }

signals:
    void modelSessionChanged(bool available);
    /// A head of a model was opened: model() and request() say which.
    void modelOpened();
    /// open() started (true) or finished (false) waiting for a forward pass.
    void openingChanged(bool opening);

private:
    Document* m_document;
    QWidget* m_window;
    std::function<bool()> m_mayReplace;
    std::optional<Session> m_loaded;
    std::shared_ptr<const Model> m_model;
    ModelHeadRequest m_request;
    bool m_opening = false;
    quint64 m_reopenGeneration = 0;
};

} // namespace qkv::ui
