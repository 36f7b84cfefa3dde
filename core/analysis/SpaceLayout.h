// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// What the Q/K/V space plots draw: queries and keys of one head in one plane (one projection of Q ∪ K,
/// as in AttentionViz's joint view), and values with the head's outputs in a second plane (one projection
/// fitted on V, so every output, a convex combination of values when its weights sum to 1, lands inside
/// the projected hull of V).

#include "AttentionResult.h"

#include <string>
#include <vector>

namespace qkv {

/// How high-dimensional rows are put in the plane.
enum class PlaneMode {
    Automatic,        ///< the raw coordinates when d ≤ 2, else PCA
    Pca,              ///< principal component analysis (a rotation of the plane when d = 2)
    PickedDimensions, ///< the raw coordinates `first` and `second`
    RopePair          ///< queries and keys only: the two coordinates RoPE rotates together as pair `first`
};

struct PlaneOptions {
    PlaneMode mode = PlaneMode::Automatic;
    Index first = 0;  ///< PickedDimensions: the coordinate along x; RopePair: the pair, 0 ≤ first < d_k / 2
    Index second = 1; ///< PickedDimensions: the coordinate along y (ignored when d = 1)
    RopePairing pairing = RopePairing::Half; ///< RopePair: the session's positions.pairing
    double ropeBase = 10000.0;               ///< RopePair: the session's positions.base (θ)
    RopeScaling ropeScaling{};               ///< RopePair: the session's positions.scaling
};

/// Queries and keys projected with one map.
struct QueryKeyPlane {
    Matrix queries;     ///< n × 2
    Matrix keys;        ///< m × 2
    std::string xLabel; ///< "PC1 (83.2% of variance)", "q/k dimension 0"
    std::string yLabel;
    /// RopePair only (else empty): each query and key before RoPE turned it, in the same two coordinates:
    /// row p turned back by p · pairAngle (positions from 0 on each side), so the same content at two
    /// positions lies at the same place here and apart in `queries` / `keys`.
    Matrix unrotatedQueries;
    Matrix unrotatedKeys;
    double pairAngle = 0.0; ///< RopePair: radians the pair turns per position, base^(−2·pair / d_k)
};

/// Values and outputs projected with one map, fitted on the values.
struct ValuePlane {
    Matrix values;           ///< m × 2
    Matrix outputs;          ///< n × 2, the head's output rows
    std::vector<Index> hull; ///< rows of `values` on their convex hull, counter-clockwise (see convexHull)
    std::string xLabel;      ///< "PC1 (100.0% of variance)", "v dimension 0"
    std::string yLabel;
};

/// The rows of a head that a plane of their own shows (Brenndoerfer's article, docs/references.md, draws Q,
/// K and V as three separate spaces).
enum class HeadRows { Queries, Keys, Values };

/// One of Q, K, V projected on its own (the map fitted on those rows alone); RopePair is refused
/// (std::invalid_argument), as by valuePlane.
struct RowPlane {
    Matrix points;      ///< rows × 2
    std::string xLabel; ///< "PC1 (83.2% of variance)", "q dimension 0"
    std::string yLabel;
};

/// Projects the head's Q, K or V (width ≥ 1) with the same choices as queryKeyPlane: the raw coordinates
/// when the width is 2 (Automatic), else PCA, or two picked dimensions.
/// @throws std::out_of_range for PickedDimensions with a dimension outside the width
/// @throws std::invalid_argument when the rows have no columns
RowPlane rowPlane(const HeadResult& head, HeadRows which, const PlaneOptions& options);

/// Projects the head's Q ∪ K (width d_k ≥ 1). When d_k = 1 the second coordinate is 0 in every mode.
/// RopePair shows the pair's coordinates (r and r + d_k/2 for the half pairing, 2r and 2r + 1 for
/// interleaved) of Q and K as the engine left them (rotated), and where they were before the rotation.
/// @throws std::out_of_range for PickedDimensions with a dimension outside [0, d_k), or RopePair with a
///         pair outside [0, d_k / 2)
/// @throws std::invalid_argument when d_k = 0 or Q and K differ in width
QueryKeyPlane queryKeyPlane(const HeadResult& head, const PlaneOptions& options);

/// Projects the head's V (width d_v ≥ 1) and its output rows with the same map; the hull is that of the
/// projected values. When d_v = 1 the second coordinate is 0 in every mode.
/// @throws std::out_of_range for PickedDimensions with a dimension outside [0, d_v)
/// @throws std::invalid_argument when d_v = 0 or V and the output differ in width
ValuePlane valuePlane(const HeadResult& head, const PlaneOptions& options);

} // namespace qkv
