// SPDX-License-Identifier: GPL-3.0-or-later
#include "LabelText.h"

#include <cmath>

namespace qkv::ui {

QString elidedLabel(const QString& label, int maxCharacters)
{
    if (label.size() <= maxCharacters)
        return label;
    return label.left(maxCharacters - 1) + QChar(0x2026);
}

QStringList labelsOrIndices(const QStringList& labels, Index count)
{
    if (labels.size() == count)
        return labels;
    QStringList indices;
    indices.reserve(static_cast<int>(count));
    for (Index i = 0; i < count; ++i)
        indices.append(QString::number(i));
    return indices;
}

QStringList tokenLabels(const std::vector<std::string>& tokens, Index count)
{
    if (static_cast<Index>(tokens.size()) != count)
        return labelsOrIndices({}, count);
    QStringList labels;
    labels.reserve(static_cast<int>(count));
    for (const std::string& token : tokens)
        labels.append(QString::fromStdString(token));
    return labels;
}

QStringList dimensionLabels(const std::vector<std::string>& dims, Index count)
{
    QStringList labels;
    labels.reserve(static_cast<int>(count));
    for (Index i = 0; i < count; ++i)
        labels.append(QString::fromStdString(dimensionLabel(dims, i)));
    return labels;
}

QString tokenLabel(const std::vector<std::string>& tokens, Index index)
{
    return index >= 0 && index < static_cast<Index>(tokens.size())
               ? QString::fromStdString(tokens[static_cast<std::size_t>(index)])
               : QString::number(index);
}

QString probabilityText(double probability)
{
    if (!std::isfinite(probability))
        return QStringLiteral("—");
    if (probability < 0.001)
        return QString::number(probability * 100.0, 'g', 2) + QLatin1Char('%');
    return QString::number(probability * 100.0, 'f', probability < 0.1 ? 2 : 1) + QLatin1Char('%');
}

} // namespace qkv::ui
