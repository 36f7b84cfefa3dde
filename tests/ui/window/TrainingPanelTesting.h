// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the Training suites share: finding the panel's widgets by name, and a model small enough to train in
// a test.

#include "TrainingPanel.h"

#include <QCheckBox>
#include <QSpinBox>
#include <QtGlobal>

namespace qkv::test {

/// The child named `name`; a missing one ends the suite at once, naming it.
template <typename T> T* child(QObject* parent, const char* name)
{
    auto* found = parent->findChild<T*>(QLatin1String(name));
    if (!found)
        qFatal("no %s", name);
    return found;
}

/// A tiny attention-only model in the panel's form: `layers` layers of 2 heads, d_model 16, batch 4.
inline void setTinyShape(ui::TrainingPanel* panel, int steps, int layers = 2)
{
    child<QSpinBox>(panel, "trainingLayers")->setValue(layers);
    child<QSpinBox>(panel, "trainingHeads")->setValue(2);
    child<QSpinBox>(panel, "trainingDModel")->setValue(16);
    child<QCheckBox>(panel, "trainingMlp")->setChecked(false);
    child<QSpinBox>(panel, "trainingBatch")->setValue(4);
    child<QSpinBox>(panel, "trainingSteps")->setValue(steps);
}

} // namespace qkv::test
