// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Matrices as files: every input and result matrix of the current head that File ▸ Export Matrix can write,
// and File ▸ Import Matrix into an input matrix, beside the figure catalogue.

#include "MatrixRef.h"

#include <QString>
#include <QStringList>

#include <functional>
#include <utility>
#include <vector>

namespace qkv::ui {

class Document;

class MatrixCatalog {
public:
    explicit MatrixCatalog(Document* document) : m_document(document) {}

    /// "X", "W_Q", …, "weights (head 1)", "concat", "final output": what exists now, for the current head
    /// (clamped to the heads the result has).
    QStringList names() const;
    /// Writes one of names() to `path` (.npy or CSV by extension). False with one line on failure.
    bool exportMatrix(const QString& name, const QString& path, QString* error) const;
    /// Replaces the input matrix `ref` (its head: the current one) with the file's matrix of the same
    /// shape, as one undoable step. False with one line, and nothing changed, on failure.
    bool importMatrix(MatrixRef ref, const QString& path, QString* error) const;

private:
    std::vector<std::pair<QString, std::function<Matrix()>>> sources() const;

    Document* m_document;
};

} // namespace qkv::ui
