// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Names one editable matrix of a session, so models, commands and file import/export can share it.

#include "Session.h"

#include <QString>
#include <QStringList>

#include <string>
#include <vector>

namespace qkv::ui {

// v_a and the biases are vectors, edited as one row.
enum class MatrixKind { X, Z, W_Q, W_K, W_V, W_O, W_S, W_a, U_a, v_a, b_Q, b_K, b_V, b_O };

struct MatrixRef {
    MatrixKind kind = MatrixKind::X;
    int head = 0; ///< for the per-head matrices

    bool isPerHead() const
    {
        return kind != MatrixKind::X && kind != MatrixKind::Z && kind != MatrixKind::W_O &&
               kind != MatrixKind::b_O;
    }
    bool isVector() const { return kind >= MatrixKind::v_a; }
    friend bool operator==(const MatrixRef& a, const MatrixRef& b)
    {
        return a.kind == b.kind && (!a.isPerHead() || a.head == b.head);
    }
    friend bool operator!=(const MatrixRef& a, const MatrixRef& b) { return !(a == b); }
};

/// "X", "W_Q", ...
QString matrixName(MatrixKind kind);
/// "X", "W_Q (head 2)", ... as shown to a person.
QString displayName(const MatrixRef& ref);

/// Whether the session has this matrix now (Z only with cross-attention, W_O when present, score parameters
/// when set, the head in range).
bool exists(const Session& session, const MatrixRef& ref);

/// The matrix as a value (a vector as one row). Requires exists().
Matrix matrixValue(const Session& session, const MatrixRef& ref);
/// The same, in place: valid until the session changes. Requires exists().
Eigen::Map<const Matrix> matrixView(const Session& session, const MatrixRef& ref);
Index rowCount(const Session& session, const MatrixRef& ref);
Index columnCount(const Session& session, const MatrixRef& ref);
double& cell(Session& session, const MatrixRef& ref, Index row, Index column);
double cellValue(const Session& session, const MatrixRef& ref, Index row, Index column);
/// Replaces the matrix; the caller has checked the shape.
void setMatrix(Session& session, const MatrixRef& ref, const Matrix& value);

} // namespace qkv::ui
