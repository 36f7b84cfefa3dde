// SPDX-License-Identifier: GPL-3.0-or-later
#include "FigureCatalog.h"

#include "Document.h"
#include "Figure.h"
#include "ViewRegistry.h"

#include <QWidget>

namespace qkv::ui {

FigureCatalog::FigureCatalog(Document* document, QObject* parent) : QObject(parent), m_document(document)
{
    registerViews();
}

FigureCatalog::~FigureCatalog() = default;

// The exportable views are the window's (ViewRegistry), each made once here, off screen.
void FigureCatalog::registerViews()
{
    for (const RegisteredView& view : ViewRegistry::views())
        for (const Figure* figure : view.figures(own(view.create(m_document, nullptr))))
            add(figure);
}

template <typename View> View* FigureCatalog::own(View* view)
{
    view->setAttribute(Qt::WA_DontShowOnScreen);
    view->resize(800, 600);
    m_views.emplace_back(view);
    return view;
}

void FigureCatalog::add(const Figure* figure)
{
    Q_ASSERT(figure && !figure->figureName().isEmpty());
    Q_ASSERT(!this->figure(figure->figureName()));
    if (figure)
        m_figures.append(figure);
}

const Figure* FigureCatalog::figure(const QString& name) const
{
    for (const Figure* candidate : m_figures)
        if (candidate->figureName() == name)
            return candidate;
    return nullptr;
}

QStringList FigureCatalog::names() const
{
    QStringList list;
    for (const Figure* figure : m_figures)
        list.append(figure->figureName());
    return list;
}

} // namespace qkv::ui
