// SPDX-License-Identifier: GPL-3.0-or-later
#include "AboutText.h"

#include "MatrixProduct.h"
#include "Parallel.h"
#include "PlotFigure.h"
#include "RowKernels.h"

#include <QCoreApplication>

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp> // the version macros only

namespace qkv::ui {

QString aboutText()
{
    const auto tr = [](const char* text) { return QCoreApplication::translate("About", text); };
    const QString version = QCoreApplication::applicationVersion().isEmpty()
                                ? tr("(development build)")
                                : QCoreApplication::applicationVersion();
    const QString libraries = tr("Qt %1 (built with %2), Eigen %3.%4.%5, %6, nlohmann/json %7.%8.%9")
                                  .arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR))
                                  .arg(EIGEN_WORLD_VERSION)
                                  .arg(EIGEN_MAJOR_VERSION)
                                  .arg(EIGEN_MINOR_VERSION)
                                  .arg(plotLibraryVersion())
                                  .arg(NLOHMANN_JSON_VERSION_MAJOR)
                                  .arg(NLOHMANN_JSON_VERSION_MINOR)
                                  .arg(NLOHMANN_JSON_VERSION_PATCH);
    return tr("<b>QKV Lab %1</b><p>Take scaled dot-product attention apart: edit every matrix and option "
              "and watch each step update.</p><p>Built with %2. Matrix products: %3, on %4 threads; row "
              "kernels for %5.</p>"
              "<p>Help ▸ User Guide (F1) explains the views; Help ▸ What's This? (Shift+F1) then a click "
              "explains any one of them.</p>")
        .arg(version, libraries, QString::fromStdString(qkv::productLibrary()).toHtmlEscaped())
        .arg(qkv::engineThreads())
        .arg(QLatin1String(qkv::rows::kernelLevelName(qkv::rows::kernelLevel())));
}

} // namespace qkv::ui
