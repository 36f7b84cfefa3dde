// SPDX-License-Identifier: GPL-3.0-or-later
#include "MaskModel.h"

#include "DocumentCommands.h"
#include "Masks.h"
#include "SessionEdits.h"

#include <QBrush>
#include <QColor>

#include <algorithm>

namespace qkv::ui {

namespace {

// Fixed colours rather than palette roles: the grid must read the same in light and dark themes.
const QColor allowedColour(0xb9, 0xe4, 0xc0);
const QColor maskedColour(0xe2, 0xe2, 0xe2);
const QColor paddingColour(0xbd, 0xbd, 0xbd);

QString tokenText(const std::vector<std::string>& tokens, int index)
{
    const auto i = static_cast<std::size_t>(index);
    return i < tokens.size() ? QString::fromStdString(tokens[i]) : QString::number(index);
}

bool flagAt(const std::vector<bool>& flags, int index)
{
    const auto i = static_cast<std::size_t>(index);
    return i < flags.size() && flags[i];
}

} // namespace

MaskModel::MaskModel(Document* document, QObject* parent) : QAbstractTableModel(parent), m_document(document)
{
    refresh();
    connect(document, &Document::sessionChanged, this, &MaskModel::onSessionChanged);
}

void MaskModel::refresh()
{
    buildMask(m_document->session(), m_allowed);
}

bool MaskModel::inSession(const QModelIndex& index) const
{
    const Session& s = m_document->session();
    return index.isValid() && !index.parent().isValid() && index.row() < m_allowed.rows() &&
           index.column() < m_allowed.cols() && index.row() < s.n() && index.column() < s.m();
}

bool MaskModel::isPadding(int row, int column) const
{
    const Session& s = m_document->session();
    return flagAt(s.pad, row) || flagAt(s.keyPad(), column);
}

int MaskModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_allowed.rows());
}

int MaskModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_allowed.cols());
}

QVariant MaskModel::data(const QModelIndex& index, int role) const
{
    if (!inSession(index))
        return {};
    const bool allowed = m_allowed(index.row(), index.column()) != 0;
    switch (role) {
    case Qt::DisplayRole:
        return allowed ? QStringLiteral("1") : QStringLiteral("0");
    case Qt::CheckStateRole:
        return allowed ? Qt::Checked : Qt::Unchecked;
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::Alignment(Qt::AlignCenter));
    case Qt::BackgroundRole:
        return QBrush(allowed                                  ? allowedColour
                      : isPadding(index.row(), index.column()) ? paddingColour
                                                               : maskedColour);
    case Qt::ForegroundRole:
        return QBrush(Qt::black);
    case Qt::ToolTipRole: {
        const Session& s = m_document->session();
        const QString pair = tr("query “%1” (%2) → key “%3” (%4)")
                                 .arg(tokenText(s.tokens, index.row()))
                                 .arg(index.row())
                                 .arg(tokenText(s.keyTokens(), index.column()))
                                 .arg(index.column());
        if (allowed)
            return tr("%1: allowed").arg(pair);
        return isPadding(index.row(), index.column()) ? tr("%1: masked (padding)").arg(pair)
                                                      : tr("%1: masked").arg(pair);
    }
    default:
        return {};
    }
}

QVariant MaskModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || section < 0)
        return {};
    const Session& s = m_document->session();
    if (orientation == Qt::Vertical) {
        if (section >= m_allowed.rows())
            return {};
        return QString(tokenText(s.tokens, section) + (flagAt(s.pad, section) ? tr(" (pad)") : QString()));
    }
    if (section >= m_allowed.cols())
        return {};
    return QString(tokenText(s.keyTokens(), section) +
                   (flagAt(s.keyPad(), section) ? tr(" (pad)") : QString()));
}

Qt::ItemFlags MaskModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    if (inSession(index) && !isPadding(index.row(), index.column()))
        flags |= Qt::ItemIsUserCheckable;
    return flags;
}

bool MaskModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::CheckStateRole || !inSession(index))
        return false;
    const int row = index.row();
    const int column = index.column();
    if (isPadding(row, column)) {
        emit inputRejected(tr("The cell (%1, %2) belongs to a padding token, which is always masked; "
                              "unmark the padding to change it.")
                               .arg(row)
                               .arg(column));
        return false;
    }
    const bool allow = static_cast<Qt::CheckState>(value.toInt()) == Qt::Checked;
    const MaskSpec& mask = m_document->session().mask;
    if (patternAllows(mask, row, column) == allow)
        return true; // nothing to undo (and no conversion to custom for nothing)
    const QString text = allow ? tr("Allow attention %1 → %2") : tr("Mask attention %1 → %2");
    pushEdit(m_document, text.arg(row).arg(column), Document::Options,
             [row, column, allow](Session& s) { setMaskCell(s, row, column, allow); });
    return true;
}

bool MaskModel::toggle(const QModelIndex& index)
{
    if (!inSession(index))
        return false;
    const bool allowed = m_allowed(index.row(), index.column()) != 0;
    return setData(index, allowed ? Qt::Unchecked : Qt::Checked, Qt::CheckStateRole);
}

bool MaskModel::isAllowed(const QModelIndex& index) const
{
    return inSession(index) && m_allowed(index.row(), index.column()) != 0;
}

bool MaskModel::paintRectangle(const QModelIndex& anchor, const QModelIndex& corner)
{
    return setRectangle(anchor, corner, !isAllowed(anchor));
}

bool MaskModel::setRectangle(const QModelIndex& corner, const QModelIndex& otherCorner, bool allow)
{
    if (!inSession(corner) || !inSession(otherCorner))
        return false;
    const int top = std::min(corner.row(), otherCorner.row());
    const int bottom = std::max(corner.row(), otherCorner.row());
    const int left = std::min(corner.column(), otherCorner.column());
    const int right = std::max(corner.column(), otherCorner.column());
    const MaskSpec& mask = m_document->session().mask;
    bool changes = false;
    for (int row = top; row <= bottom && !changes; ++row)
        for (int column = left; column <= right && !changes; ++column)
            changes = !isPadding(row, column) && patternAllows(mask, row, column) != allow;
    if (!changes)
        return true; // nothing to undo
    const int rows = bottom - top + 1, columns = right - left + 1;
    const QString text =
        rows * columns == 1
            ? (allow ? tr("Allow attention %1 → %2") : tr("Mask attention %1 → %2")).arg(top).arg(left)
            : (allow ? tr("Allow attention in %1 × %2 cells from %3 → %4")
                     : tr("Mask attention in %1 × %2 cells from %3 → %4"))
                  .arg(rows)
                  .arg(columns)
                  .arg(top)
                  .arg(left);
    pushEdit(m_document, text, Document::Options, [top, bottom, left, right, allow](Session& s) {
        for (int row = top; row <= bottom; ++row)
            for (int column = left; column <= right; ++column)
                if (!flagAt(s.pad, row) && !flagAt(s.keyPad(), column)) // padding stays masked
                    setMaskCell(s, row, column, allow);
    });
    return true;
}

void MaskModel::onSessionChanged(Document::Changes changes)
{
    // The mask follows the options (mask type and cells), the tokens (padding) and the shape, never the
    // numbers: an edit of a matrix changes nothing here (its headers, announced as new, had every view of
    // them measure all their sections again on each edit).
    if (!(changes & (Document::Options | Document::Tokens | Document::Shape)))
        return;
    const Session& s = m_document->session();
    if (s.n() != m_allowed.rows() || s.m() != m_allowed.cols()) {
        beginResetModel();
        refresh();
        endResetModel();
        return;
    }
    refresh();
    if (m_allowed.size() == 0)
        return;
    const int lastRow = static_cast<int>(m_allowed.rows()) - 1;
    const int lastColumn = static_cast<int>(m_allowed.cols()) - 1;
    emit dataChanged(index(0, 0), index(lastRow, lastColumn));
    if (!(changes & (Document::Tokens | Document::Shape)))
        return;
    emit headerDataChanged(Qt::Vertical, 0, lastRow);
    emit headerDataChanged(Qt::Horizontal, 0, lastColumn);
}

} // namespace qkv::ui
