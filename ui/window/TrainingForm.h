// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Training workspace's form: the task, the model's shape, the attention normalizer and the optimizer's
// settings, filled from the task's recipe and read into the trainer's settings.

#include "Trainer.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QSpinBox;

namespace qkv::ui {

class TrainingForm : public QWidget {
    Q_OBJECT
public:
    explicit TrainingForm(QWidget* parent = nullptr);

    /// Every field as the chosen task's recipe has it (the seed stays).
    void fillFromRecipe();
    /// The settings a run of the form trains with (without the output folder).
    training::TrainSettings settings() const;
    /// The settings in one line ("induction · 2 layers × 4 heads · d_model 64 · …"), for the collapsed form.
    QString summary() const;

signals:
    /// A field changed (the summary with it).
    void changed();

private:
    void showAlpha();

    QFormLayout* m_layout;
    QComboBox* m_task;
    QSpinBox *m_layers, *m_heads, *m_dModel, *m_batch, *m_steps, *m_seed;
    QCheckBox* m_mlp;
    QComboBox *m_positions, *m_normalizer;
    QDoubleSpinBox *m_alpha, *m_rate;
};

} // namespace qkv::ui
