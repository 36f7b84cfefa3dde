// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Every exportable view, kept off screen and bound to a document: what "Export all views" and
// `qkvlab export` draw.

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

class QWidget;

namespace qkv::ui {

class Document;
class Figure;

/// Creates one instance of every view of ViewRegistry, bound to `document` and never shown, and lists their
/// figures by name. A model's figures are drawn from a model, not the document: ModelFigures lists them. The
/// views follow the document like the window's do (current head, result); a view lays itself out for the size
/// asked in renderFigure(), whatever the size of its hidden widget.
class FigureCatalog : public QObject {
    Q_OBJECT
public:
    explicit FigureCatalog(Document* document, QObject* parent = nullptr);
    ~FigureCatalog() override;

    /// In the registry's order: the result heatmaps first ("Q" … "final_output"), then the pipeline.
    QList<const Figure*> figures() const { return m_figures; }
    /// The figure named `name` (exact match); null when there is none.
    const Figure* figure(const QString& name) const;
    QStringList names() const;

private:
    void registerViews();
    template <typename View> View* own(View* view);
    void add(const Figure* figure);

    Document* m_document;
    std::vector<std::unique_ptr<QWidget>> m_views; // top-level and hidden: no QObject parent can own them
    QList<const Figure*> m_figures;
};

} // namespace qkv::ui
