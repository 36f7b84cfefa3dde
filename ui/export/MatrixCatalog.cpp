// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixCatalog.h"

#include "Document.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "MatrixFile.h"

#include <algorithm>

namespace qkv::ui {

bool MatrixCatalog::importMatrix(MatrixRef ref, const QString& path, QString* error) const
{
    if (ref.isPerHead())
        ref.head = m_document->currentHead();
    const Session& session = m_document->session();
    if (!exists(session, ref)) {
        *error = Document::tr("%1 does not exist in this session").arg(displayName(ref));
        return false;
    }
    Matrix matrix;
    try {
        matrix = loadMatrixFile(path.toStdString());
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    const Index rows = rowCount(session, ref), cols = columnCount(session, ref);
    if (matrix.rows() != rows || matrix.cols() != cols) {
        *error = Document::tr("%1: %2 is %3 × %4 but the file holds %5 × %6")
                     .arg(path, displayName(ref))
                     .arg(rows)
                     .arg(cols)
                     .arg(matrix.rows())
                     .arg(matrix.cols());
        return false;
    }
    m_document->push(
        makeMatrixCommand(m_document, Document::tr("Import %1").arg(displayName(ref)), ref, matrix));
    return true;
}

std::vector<std::pair<QString, std::function<Matrix()>>> MatrixCatalog::sources() const
{
    std::vector<std::pair<QString, std::function<Matrix()>>> sources;
    const Session& session = m_document->session();
    const int head = m_document->currentHead();
    for (MatrixKind kind :
         {MatrixKind::X, MatrixKind::Z, MatrixKind::W_Q, MatrixKind::W_K, MatrixKind::W_V, MatrixKind::b_Q,
          MatrixKind::b_K, MatrixKind::b_V, MatrixKind::W_S, MatrixKind::W_a, MatrixKind::U_a,
          MatrixKind::v_a, MatrixKind::W_O, MatrixKind::b_O})
        if (const MatrixRef ref{kind, head}; exists(session, ref))
            sources.emplace_back(displayName(ref), [&session, ref] { return matrixValue(session, ref); });
    const std::shared_ptr<const AttentionResult> result = m_document->result();
    if (!result)
        return sources;
    // Each result is copied only when it is the one exported; the lambdas hold the result alive.
    // The result may still be an older session's with fewer heads than the current one.
    const int resultHead = std::clamp(head, 0, static_cast<int>(result->heads.size()) - 1);
    const HeadResult* h = &result->heads[static_cast<std::size_t>(resultHead)];
    const std::pair<const char*, std::function<Matrix()>> results[] = {
        {"Q", [result, h] { return h->Q; }},
        {"K", [result, h] { return h->K; }},
        {"V", [result, h] { return h->V; }},
        {"scores", [result, h] { return h->scores; }},
        {"scaled", [result, h] { return h->scaled; }},
        {"mask", [result, h] { return Matrix(h->allowed.cast<double>()); }},
        {"weights", [result, h] { return h->weights; }},
        {"output", [result, h] { return h->output; }}};
    for (const auto& [label, produce] : results)
        sources.emplace_back(Document::tr("%1 (head %2)").arg(QLatin1String(label)).arg(resultHead + 1),
                             produce);
    sources.emplace_back(QStringLiteral("concat"), [result] { return result->concat; });
    sources.emplace_back(QStringLiteral("final output"), [result] { return result->output; });
    return sources;
}

QStringList MatrixCatalog::names() const
{
    QStringList names;
    for (const auto& source : sources())
        names << source.first;
    return names;
}

bool MatrixCatalog::exportMatrix(const QString& name, const QString& path, QString* error) const
{
    Matrix matrix;
    for (const auto& [sourceName, produce] : sources())
        if (sourceName == name)
            matrix = produce();
    if (matrix.size() == 0) {
        *error = Document::tr("There is no matrix named \"%1\"").arg(name);
        return false;
    }
    try {
        saveMatrixFile(matrix, path.toStdString());
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

} // namespace qkv::ui
