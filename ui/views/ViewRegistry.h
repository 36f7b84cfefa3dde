// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one list of the views drawn from the document: the main window shows them and the figure catalogue
// draws them for export, both from this list.

#include <QCoreApplication>
#include <QList>
#include <QString>

#include <functional>

class QWidget;

namespace qkv::ui {

class Document;
class Figure;

/// A view of the document: what it is called, how it is made and which figures it exports.
struct RegisteredView {
    /// How the window finds it to place it: "results", "qk_space", "math"…
    QString id;
    /// Its dock or tab title in the window ("Q/K Space").
    QString title;
    /// Makes the view, following `document`, as a child of `parent` (none: a top-level widget).
    std::function<QWidget*(Document* document, QWidget* parent)> create;
    /// The figures the view exports, in order.
    std::function<QList<const Figure*>(QWidget* view)> figures;
};

/// Every view drawn from the document. The model view is not among them: it draws a model's attention, not
/// the document's (ModelView).
class ViewRegistry {
    Q_DECLARE_TR_FUNCTIONS(ViewRegistry)
public:
    /// In the order their figures are listed (the export dialog, Export All Views, `qkvlab export --help`):
    /// the result heatmaps and the pipeline canvas first.
    static QList<RegisteredView> views();
    /// The view with `id` (asserted to exist).
    static RegisteredView view(const QString& id);
};

} // namespace qkv::ui
