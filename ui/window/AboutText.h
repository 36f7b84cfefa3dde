// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What Help ▸ About says: the version and the libraries the program was built with.

#include <QString>

namespace qkv::ui {

/// Rich text naming QKV Lab's version (the application's, "development build" when unset) and the versions of
/// Qt (built against and running), Eigen, QCustomPlot and nlohmann/json, and the matrix-product library.
QString aboutText();

} // namespace qkv::ui
