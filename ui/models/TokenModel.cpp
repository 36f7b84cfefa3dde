// SPDX-License-Identifier: GPL-3.0-or-later
#include "TokenModel.h"

#include "DocumentCommands.h"

#include <algorithm>
#include <set>

namespace qkv::ui {

TokenModel::TokenModel(Document* document, Side side, QObject* parent)
    : QAbstractTableModel(parent), m_document(document), m_side(side)
{
    m_rows = currentCount();
    connect(document, &Document::sessionChanged, this, &TokenModel::onSessionChanged);
}

void TokenModel::setSide(Side side)
{
    beginResetModel();
    m_side = side;
    m_rows = currentCount();
    endResetModel();
}

const std::vector<std::string>* TokenModel::tokens() const
{
    const Session& s = m_document->session();
    if (m_side == Side::Query)
        return &s.tokens;
    return s.context ? &s.context->tokens : nullptr;
}

const std::vector<bool>* TokenModel::pad() const
{
    const Session& s = m_document->session();
    if (m_side == Side::Query)
        return &s.pad;
    return s.context ? &s.context->pad : nullptr;
}

int TokenModel::currentCount() const
{
    const auto* list = tokens();
    return list ? static_cast<int>(list->size()) : 0;
}

QString TokenModel::sideName() const
{
    return m_side == Side::Query ? tr("query token") : tr("context token");
}

bool TokenModel::refuse(const QString& message)
{
    emit inputRejected(message);
    return false;
}

int TokenModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int TokenModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TokenModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= m_rows || index.row() >= currentCount())
        return {};
    const auto row = static_cast<std::size_t>(index.row());
    const bool padding = row < pad()->size() && (*pad())[row];
    if (index.column() == TokenColumn) {
        if (role == Qt::DisplayRole || role == Qt::EditRole)
            return QString::fromStdString((*tokens())[row]);
        if (role == Qt::ToolTipRole)
            return padding ? tr("%1 %2 (padding: masked as a key and as a query)")
                                 .arg(sideName())
                                 .arg(index.row())
                           : tr("%1 %2").arg(sideName()).arg(index.row());
    } else if (index.column() == PaddingColumn) {
        if (role == Qt::CheckStateRole)
            return padding ? Qt::Checked : Qt::Unchecked;
        if (role == Qt::ToolTipRole)
            return tr("Mark as padding: no query attends to it, and as a query its row is empty");
    }
    return {};
}

QVariant TokenModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (role != Qt::DisplayRole || section < 0)
        return {};
    if (orientation == Qt::Vertical)
        return section < m_rows ? QVariant(QString::number(section)) : QVariant();
    switch (section) {
    case TokenColumn:
        return tr("Token");
    case PaddingColumn:
        return tr("Padding");
    default:
        return {};
    }
}

Qt::ItemFlags TokenModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    const Qt::ItemFlags common = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    return common | (index.column() == TokenColumn ? Qt::ItemIsEditable : Qt::ItemIsUserCheckable);
}

bool TokenModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!index.isValid() || index.row() >= m_rows || index.row() >= currentCount())
        return false;
    const int row = index.row();
    const auto at = static_cast<std::size_t>(row);
    const Side side = m_side;
    if (index.column() == TokenColumn && role == Qt::EditRole) {
        const std::string text = value.toString().toStdString();
        if (text == (*tokens())[at])
            return true;
        m_document->push(new ChangeValueCommand<std::string>(
            m_document, tr("Rename %1 %2").arg(sideName()).arg(row), Document::Tokens,
            [side, at](Session& s) -> std::string& {
                return side == Side::Query ? s.tokens[at] : s.context->tokens[at];
            },
            text));
        return true;
    }
    if (index.column() == PaddingColumn && role == Qt::CheckStateRole) {
        const bool padding = static_cast<Qt::CheckState>(value.toInt()) == Qt::Checked;
        if (at >= pad()->size() || padding == (*pad())[at])
            return true;
        const QString text = padding ? tr("Mark %1 %2 as padding") : tr("Unmark %1 %2 as padding");
        pushEdit(m_document, text.arg(sideName()).arg(row), Document::Tokens,
                 [side, at, padding](Session& s) { setPadding(s, side, static_cast<Index>(at), padding); });
        return true;
    }
    return false;
}

bool TokenModel::insertToken(int row)
{
    const int count = currentCount();
    if (!tokens())
        return refuse(tr("There is no context: turn cross-attention on first."));
    if (row < 0 || row > count)
        return refuse(tr("Cannot insert a %1 at position %2.").arg(sideName()).arg(row));
    if (count >= Limits::maxTokens)
        return refuse(tr("A sequence has at most %1 tokens.").arg(Limits::maxTokens));

    const std::string text = newTokenName(m_document->session(), m_side);
    const InitializerSpec init = m_document->initializer();
    const Side side = m_side;
    pushEdit(m_document, tr("Insert %1 “%2”").arg(sideName(), QString::fromStdString(text)),
             Document::Shape | Document::Tokens,
             [side, row, text, init](Session& s) { qkv::insertToken(s, side, row, text, init); });
    return true;
}

bool TokenModel::appendToken()
{
    return insertToken(currentCount());
}

bool TokenModel::removeTokens(const QList<int>& rows)
{
    const int count = currentCount();
    if (!tokens())
        return refuse(tr("There is no context: turn cross-attention on first."));
    std::set<int> unique(rows.begin(), rows.end());
    if (unique.empty())
        return refuse(tr("Select the tokens to remove first."));
    if (*unique.begin() < 0 || *unique.rbegin() >= count)
        return refuse(tr("Cannot remove a %1 that does not exist.").arg(sideName()));
    if (static_cast<int>(unique.size()) >= count)
        return refuse(count == 1
                          ? tr("Cannot remove the last %1: a sequence needs at least one.").arg(sideName())
                          : tr("Cannot remove every %1: a sequence needs at least one.").arg(sideName()));
    const std::vector<int> descending(unique.rbegin(), unique.rend());
    const QString text = descending.size() == 1 ? tr("Remove %1 %2").arg(sideName()).arg(descending.front())
                                                : tr("Remove %1 tokens").arg(descending.size());
    const Side side = m_side;
    pushEdit(m_document, text, Document::Shape | Document::Tokens, [side, descending](Session& s) {
        for (const int row : descending)
            qkv::removeToken(s, side, row);
    });
    return true;
}

bool TokenModel::moveToken(int from, int to)
{
    const int count = currentCount();
    if (!tokens())
        return refuse(tr("There is no context: turn cross-attention on first."));
    if (from < 0 || from >= count || to < 0 || to >= count)
        return refuse(tr("Cannot move %1 %2 to position %3.").arg(sideName()).arg(from).arg(to));
    if (from == to)
        return true;
    const Side side = m_side;
    pushEdit(m_document, tr("Move %1 %2 to %3").arg(sideName()).arg(from).arg(to),
             Document::Shape | Document::Tokens,
             [side, from, to](Session& s) { qkv::moveToken(s, side, from, to); });
    return true;
}

void TokenModel::onSessionChanged(Document::Changes changes)
{
    const int count = currentCount();
    if (count != m_rows) {
        beginResetModel();
        m_rows = count;
        endResetModel();
        return;
    }
    if (m_rows > 0 && (changes & (Document::Tokens | Document::Shape)))
        emit dataChanged(index(0, 0), index(m_rows - 1, ColumnCount - 1));
}

} // namespace qkv::ui
