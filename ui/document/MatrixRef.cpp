// SPDX-License-Identifier: GPL-3.0-or-later
#include "MatrixRef.h"

namespace qkv::ui {

namespace {

const Matrix& storedMatrix(const Session& s, const MatrixRef& ref)
{
    switch (ref.kind) {
    case MatrixKind::X:
        return s.X;
    case MatrixKind::Z:
        return s.context->Z;
    case MatrixKind::W_O:
        return *s.W_O;
    default:
        break;
    }
    const Head& head = s.heads[static_cast<std::size_t>(ref.head)];
    switch (ref.kind) {
    case MatrixKind::W_Q:
        return head.W_Q;
    case MatrixKind::W_K:
        return head.W_K;
    case MatrixKind::W_V:
        return head.W_V;
    case MatrixKind::W_S:
        return head.W_S;
    case MatrixKind::W_a:
        return head.W_a;
    default:
        return head.U_a; // v_a is handled by the callers
    }
}

/// v_a or a bias; requires ref.isVector().
const Vector& storedVector(const Session& s, const MatrixRef& ref)
{
    if (ref.kind == MatrixKind::b_O)
        return s.b_O;
    const Head& head = s.heads[static_cast<std::size_t>(ref.head)];
    switch (ref.kind) {
    case MatrixKind::b_Q:
        return head.b_Q;
    case MatrixKind::b_K:
        return head.b_K;
    case MatrixKind::b_V:
        return head.b_V;
    default:
        return head.v_a;
    }
}

Vector& storedVector(Session& s, const MatrixRef& ref)
{
    return const_cast<Vector&>(storedVector(static_cast<const Session&>(s), ref));
}

} // namespace

QString matrixName(MatrixKind kind)
{
    static const char* const names[] = {"X",   "Z",   "W_Q", "W_K", "W_V", "W_O", "W_S",
                                        "W_a", "U_a", "v_a", "b_Q", "b_K", "b_V", "b_O"};
    return QLatin1String(names[static_cast<int>(kind)]);
}

QString displayName(const MatrixRef& ref)
{
    const QString name = matrixName(ref.kind);
    return ref.isPerHead() ? QStringLiteral("%1 (head %2)").arg(name).arg(ref.head + 1) : name;
}

bool exists(const Session& s, const MatrixRef& ref)
{
    switch (ref.kind) {
    case MatrixKind::X:
        return true;
    case MatrixKind::Z:
        return s.context.has_value();
    case MatrixKind::W_O:
        return s.W_O.has_value();
    case MatrixKind::b_O:
        return s.b_O.size() > 0;
    default:
        break;
    }
    if (ref.head < 0 || ref.head >= s.headCount())
        return false;
    if (ref.isVector())
        return storedVector(s, ref).size() > 0;
    const Head& head = s.heads[static_cast<std::size_t>(ref.head)];
    switch (ref.kind) {
    case MatrixKind::W_S:
        return head.W_S.size() > 0;
    case MatrixKind::W_a:
        return head.W_a.size() > 0;
    case MatrixKind::U_a:
        return head.U_a.size() > 0;
    default:
        return true;
    }
}

Matrix matrixValue(const Session& s, const MatrixRef& ref)
{
    return matrixView(s, ref);
}

Eigen::Map<const Matrix> matrixView(const Session& s, const MatrixRef& ref)
{
    if (ref.isVector()) {
        const Vector& vector = storedVector(s, ref);
        return {vector.data(), 1, vector.size()}; // one row: the same numbers in the same order
    }
    const Matrix& matrix = storedMatrix(s, ref);
    return {matrix.data(), matrix.rows(), matrix.cols()};
}

Index rowCount(const Session& s, const MatrixRef& ref)
{
    return ref.isVector() ? 1 : storedMatrix(s, ref).rows();
}

Index columnCount(const Session& s, const MatrixRef& ref)
{
    return ref.isVector() ? storedVector(s, ref).size() : storedMatrix(s, ref).cols();
}

double& cell(Session& s, const MatrixRef& ref, Index row, Index column)
{
    if (ref.isVector())
        return storedVector(s, ref)(column);
    return const_cast<Matrix&>(storedMatrix(s, ref))(row, column);
}

double cellValue(const Session& s, const MatrixRef& ref, Index row, Index column)
{
    if (ref.isVector())
        return storedVector(s, ref)(column);
    return storedMatrix(s, ref)(row, column);
}

void setMatrix(Session& s, const MatrixRef& ref, const Matrix& value)
{
    if (ref.isVector())
        storedVector(s, ref) = value.row(0).transpose();
    else
        const_cast<Matrix&>(storedMatrix(s, ref)) = value;
}

} // namespace qkv::ui
