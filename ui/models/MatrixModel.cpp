// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixModel.h"

#include "DelimitedText.h"
#include "DocumentCommands.h"
#include "Error.h"
#include "SessionEdits.h"

#include <QLocale>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

namespace qkv::ui {

namespace {

// A number typed by a person: the C locale ("1.5") first, then the system locale ("1,5" in German).
// Group separators are refused in both, so "1,500" is never read as 1500 by one and 1.5 by the other.
std::optional<double> parseNumber(const QString& text)
{
    const QString trimmed = text.trimmed();
    if (trimmed.isEmpty())
        return std::nullopt;
    for (QLocale locale : {QLocale::c(), QLocale::system()}) {
        locale.setNumberOptions(locale.numberOptions() | QLocale::RejectGroupSeparator);
        bool ok = false;
        const double value = locale.toDouble(trimmed, &ok);
        if (ok)
            return value;
    }
    return std::nullopt;
}

QString exactText(double value)
{
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

} // namespace

MatrixModel::MatrixModel(Document* document, MatrixRef ref, QObject* parent)
    : QAbstractTableModel(parent), m_document(document), m_ref(ref)
{
    m_rows = currentRows();
    m_columns = currentColumns();
    rememberValues();
    connect(document, &Document::sessionChanged, this, &MatrixModel::onSessionChanged);
    connect(document, &Document::currentHeadChanged, this, &MatrixModel::onCurrentHeadChanged);
}

void MatrixModel::setMatrixRef(MatrixRef ref)
{
    if (m_followsCurrentHead && ref.isPerHead())
        ref.head = m_document->currentHead();
    beginResetModel();
    m_ref = ref;
    m_rows = currentRows();
    m_columns = currentColumns();
    rememberValues();
    endResetModel();
}

void MatrixModel::setSignificantDigits(int digits)
{
    digits = std::clamp(digits, 1, 17);
    if (digits == m_significantDigits)
        return;
    m_significantDigits = digits;
    if (m_rows > 0 && m_columns > 0)
        emit dataChanged(index(0, 0), index(m_rows - 1, m_columns - 1), {Qt::DisplayRole});
}

QString MatrixModel::displayText(double value) const
{
    return QString::number(value, 'g', m_significantDigits);
}

void MatrixModel::setFollowsCurrentHead(bool follow)
{
    m_followsCurrentHead = follow;
    if (follow && m_ref.isPerHead() && m_ref.head != m_document->currentHead())
        setMatrixRef(m_ref);
}

QString MatrixModel::cellName(int row, int column) const
{
    const QString name = matrixName(m_ref.kind);
    QString text = m_ref.isVector() ? QStringLiteral("%1[%2]").arg(name).arg(column)
                                    : QStringLiteral("%1[%2][%3]").arg(name).arg(row).arg(column);
    if (m_ref.isPerHead())
        text += tr(" of head %1").arg(m_ref.head + 1);
    return text;
}

bool MatrixModel::matrixExists() const
{
    return exists(m_document->session(), m_ref);
}

int MatrixModel::currentRows() const
{
    return matrixExists() ? static_cast<int>(qkv::ui::rowCount(m_document->session(), m_ref)) : 0;
}

int MatrixModel::currentColumns() const
{
    return matrixExists() ? static_cast<int>(qkv::ui::columnCount(m_document->session(), m_ref)) : 0;
}

bool MatrixModel::inSession(const QModelIndex& index) const
{
    // The session may already have its new shape while the views still have the old one (the reset
    // follows the change), so every read checks both.
    return index.isValid() && !index.parent().isValid() && index.row() < m_rows &&
           index.column() < m_columns && index.row() < currentRows() && index.column() < currentColumns();
}

int MatrixModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_rows;
}

int MatrixModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : m_columns;
}

QVariant MatrixModel::data(const QModelIndex& index, int role) const
{
    if (!inSession(index))
        return {};
    const double value = cellValue(m_document->session(), m_ref, index.row(), index.column());
    switch (role) {
    case Qt::DisplayRole:
        return displayText(value);
    case Qt::EditRole:
        return value;
    case Qt::ToolTipRole:
        return QStringLiteral("%1 = %2").arg(cellName(index.row(), index.column()), exactText(value));
    case Qt::TextAlignmentRole:
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    default:
        return {};
    }
}

bool MatrixModel::namesDimensions() const
{
    return m_ref.kind == MatrixKind::X || (m_ref.kind == MatrixKind::Z && m_document->session().context);
}

QVariant MatrixModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (section < 0)
        return {};
    const Session& s = m_document->session();
    const auto dimension = [&](const std::vector<std::string>& dims) {
        return QString::fromStdString(dimensionLabel(dims, section));
    };
    if (orientation == Qt::Horizontal) {
        if (section >= m_columns)
            return {};
        const bool named = namesDimensions();
        const std::vector<std::string>& dims =
            m_ref.kind == MatrixKind::Z && s.context ? s.context->dims : s.dims;
        if (role == Qt::EditRole && named)
            return static_cast<std::size_t>(section) < dims.size()
                       ? QString::fromStdString(dims[static_cast<std::size_t>(section)])
                       : QString();
        if (role == Qt::ToolTipRole && named)
            return tr("Dimension %1 of d_model: “%2”. Double-click to rename it.")
                .arg(section)
                .arg(dimension(dims));
        if (role != Qt::DisplayRole)
            return {};
        return named ? dimension(dims) : QString::number(section);
    }
    if (role != Qt::DisplayRole || section >= m_rows)
        return {};
    const auto tokenLabel = [section](const std::vector<std::string>& tokens, const std::vector<bool>& pad) {
        const auto i = static_cast<std::size_t>(section);
        if (i >= tokens.size())
            return QString::number(section);
        QString label = QString::fromStdString(tokens[i]);
        if (i < pad.size() && pad[i])
            label += tr(" (pad)");
        return label;
    };
    switch (m_ref.kind) {
    case MatrixKind::X:
        return tokenLabel(s.tokens, s.pad);
    case MatrixKind::Z:
        return s.context ? tokenLabel(s.context->tokens, s.context->pad) : QVariant();
    case MatrixKind::W_Q: // rows are the d_model dimensions: of X for W_Q, of the key side for W_K and W_V
        return dimension(s.dims);
    case MatrixKind::W_K:
    case MatrixKind::W_V:
        return dimension(s.keyDims());
    default:
        return QString::number(section);
    }
}

bool MatrixModel::setHeaderData(int section, Qt::Orientation orientation, const QVariant& value, int role)
{
    if (orientation != Qt::Horizontal || role != Qt::EditRole || !namesDimensions() || section < 0 ||
        section >= m_columns || section >= currentColumns())
        return false;
    const std::string name = value.toString().trimmed().toStdString();
    const Session& s = m_document->session();
    const Side side = m_ref.kind == MatrixKind::Z ? Side::Context : Side::Query;
    const std::vector<std::string>& dims = side == Side::Context ? s.context->dims : s.dims;
    const std::string old = static_cast<std::size_t>(section) < dims.size()
                                ? dims[static_cast<std::size_t>(section)]
                                : std::string();
    if (name == old)
        return true;
    const QString text = name.empty()
                             ? tr("Unname dimension %1 of %2").arg(section).arg(matrixName(m_ref.kind))
                             : tr("Name dimension %1 of %2 “%3”")
                                   .arg(section)
                                   .arg(matrixName(m_ref.kind), QString::fromStdString(name));
    pushEdit(m_document, text, Document::Tokens,
             [side, section, name](Session& session) { renameDimension(session, side, section, name); });
    return true;
}

Qt::ItemFlags MatrixModel::flags(const QModelIndex& index) const
{
    if (!index.isValid())
        return Qt::NoItemFlags;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsEditable | Qt::ItemNeverHasChildren;
}

bool MatrixModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (role != Qt::EditRole || !inSession(index))
        return false;
    const QString name = cellName(index.row(), index.column());
    std::optional<double> number;
    QString shown;
    if (value.userType() == QMetaType::QString) {
        shown = value.toString();
        number = parseNumber(shown);
    } else {
        bool ok = false;
        const double converted = value.toDouble(&ok);
        if (ok)
            number = converted;
        shown = ok ? exactText(converted) : value.toString();
    }
    if (!number) {
        emit inputRejected(tr("%1: “%2” is not a number; the cell keeps its value.").arg(name, shown));
        return false;
    }
    if (!std::isfinite(*number)) {
        emit inputRejected(tr("%1: “%2” is not a finite number; the cell keeps its value.").arg(name, shown));
        return false;
    }
    if (*number == cellValue(m_document->session(), m_ref, index.row(), index.column()))
        return true; // nothing to undo
    m_document->push(makeCellCommand(m_document, m_ref, index.row(), index.column(), *number));
    return true;
}

QString MatrixModel::copyText(const QModelIndexList& indexes) const
{
    int top = m_rows, left = m_columns, bottom = -1, right = -1;
    for (const QModelIndex& index : indexes) {
        if (!inSession(index))
            continue;
        top = std::min(top, index.row());
        left = std::min(left, index.column());
        bottom = std::max(bottom, index.row());
        right = std::max(right, index.column());
    }
    if (bottom < 0)
        return {};
    const Matrix block =
        matrixValue(m_document->session(), m_ref).block(top, left, bottom - top + 1, right - left + 1);
    return QString::fromStdString(formatDelimited(block, '\t'));
}

bool MatrixModel::pasteText(const QModelIndex& topLeft, const QString& text, QString* error)
{
    const auto refuse = [error](const QString& message) {
        if (error)
            *error = message;
        return false;
    };
    const QString target = displayName(m_ref);
    if (!matrixExists())
        return refuse(tr("Paste: %1 does not exist in this session.").arg(target));
    Matrix block;
    try {
        block = parseDelimited(text.toStdString());
    } catch (const Error& e) {
        return refuse(tr("Paste into %1: %2").arg(target, QString::fromStdString(e.what())));
    }
    const int row = topLeft.isValid() ? topLeft.row() : 0;
    const int column = topLeft.isValid() ? topLeft.column() : 0;
    const Index rows = qkv::ui::rowCount(m_document->session(), m_ref);
    const Index columns = qkv::ui::columnCount(m_document->session(), m_ref);
    if (row >= rows || column >= columns || block.rows() > rows - row || block.cols() > columns - column)
        return refuse(tr("Paste into %1: the copied block is %2 × %3, but only %4 × %5 cells fit from %6.")
                          .arg(target)
                          .arg(block.rows())
                          .arg(block.cols())
                          .arg(std::max<Index>(rows - row, 0))
                          .arg(std::max<Index>(columns - column, 0))
                          .arg(cellName(row, column)));
    Matrix value = matrixValue(m_document->session(), m_ref);
    value.block(row, column, block.rows(), block.cols()) = block;
    if (value != matrixValue(m_document->session(), m_ref))
        m_document->push(makeMatrixCommand(m_document, tr("Paste into %1").arg(target), m_ref, value));
    return true;
}

void MatrixModel::onSessionChanged(Document::Changes changes)
{
    const int rows = currentRows();
    const int columns = currentColumns();
    if (rows != m_rows || columns != m_columns) {
        beginResetModel();
        m_rows = rows;
        m_columns = columns;
        rememberValues();
        endResetModel();
        return;
    }
    if (m_rows == 0 || m_columns == 0)
        return;
    // Same shape: the values may still all be new (undo of a structural edit, cross-attention off and on),
    // and the tooltips name tokens.
    if (changes & (Document::Shape | Document::Tokens)) {
        rememberValues();
        emit dataChanged(index(0, 0), index(m_rows - 1, m_columns - 1),
                         {Qt::DisplayRole, Qt::EditRole, Qt::ToolTipRole});
    } else if (changes & Document::Values) {
        announceChangedCells();
    }
    if ((changes & (Document::Tokens | Document::Shape)) &&
        (m_ref.kind == MatrixKind::X || m_ref.kind == MatrixKind::Z)) {
        emit headerDataChanged(Qt::Vertical, 0, m_rows - 1);
        emit headerDataChanged(Qt::Horizontal, 0, m_columns - 1); // the dimension names
    }
    if ((changes & (Document::Tokens | Document::Shape)) &&
        (m_ref.kind == MatrixKind::W_Q || m_ref.kind == MatrixKind::W_K || m_ref.kind == MatrixKind::W_V))
        emit headerDataChanged(Qt::Vertical, 0, m_rows - 1);
}

void MatrixModel::rememberValues()
{
    if (m_rows > 0 && m_columns > 0)
        m_announced = matrixView(m_document->session(), m_ref);
    else
        m_announced.resize(0, 0);
}

void MatrixModel::announceChangedCells()
{
    const Eigen::Map<const Matrix> values = matrixView(m_document->session(), m_ref);
    // Bit for bit, so that -0 replacing 0 is announced too.
    const auto rowBytes = std::size_t(values.cols()) * sizeof(double);
    int top = -1, bottom = -1, left = m_columns, right = -1;
    for (int row = 0; row < m_rows; ++row) {
        const double* now = values.data() + Index(row) * values.cols();
        double* told = m_announced.data() + Index(row) * values.cols();
        if (std::memcmp(now, told, rowBytes) == 0)
            continue;
        for (int column = 0; column < m_columns; ++column)
            if (std::memcmp(now + column, told + column, sizeof(double)) != 0) {
                left = std::min(left, column);
                right = std::max(right, column);
            }
        std::memcpy(told, now, rowBytes);
        top = top < 0 ? row : top;
        bottom = row;
    }
    if (top >= 0)
        emit dataChanged(index(top, left), index(bottom, right),
                         {Qt::DisplayRole, Qt::EditRole, Qt::ToolTipRole});
}

void MatrixModel::onCurrentHeadChanged(int head)
{
    if (m_followsCurrentHead && m_ref.isPerHead() && m_ref.head != head)
        setMatrixRef(MatrixRef{m_ref.kind, head});
}

} // namespace qkv::ui
