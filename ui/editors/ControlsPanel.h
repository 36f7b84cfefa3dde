// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The attention options of the session (cross-attention, score, scale, temperature, normalizer, precision,
// mask) and the head the views show, as compact controls. Every change is one undo command.

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QSlider;
class QLabel;
class QSpinBox;

namespace qkv::ui {

class Document;

class ControlsPanel : public QWidget {
    Q_OBJECT
public:
    explicit ControlsPanel(Document* document, QWidget* parent = nullptr);

    /// Slider positions of the temperature: log10 τ in hundredths, from τ = 0.01 to τ = 100.
    static constexpr int temperatureSliderMinimum = -200;
    static constexpr int temperatureSliderMaximum = 200;

private:
    // The constructor's parts: each group of controls with its tooltips, the form, the edits they push.
    void setUpScoreControls();
    void setUpTemperatureControls();
    void setUpNormalizerControls();
    void setUpMaskAndHeadControls();
    void layOutControls();
    void connectEdits();
    void connectMaskAndHeadEdits();
    void syncFromSession();
    void syncHead();
    /// Commands with the same `mergeTarget` merge: one per slider drag, one for a run of typing or keys.
    void setTemperature(double temperature, const QString& mergeTarget);

    Document* m_document;
    QComboBox* m_attentionKind;
    QComboBox* m_score;
    QComboBox* m_scaleKind;
    QDoubleSpinBox* m_scaleValue;
    QSlider* m_temperatureSlider;
    QDoubleSpinBox* m_temperatureSpin;
    QComboBox* m_normalizer;
    QDoubleSpinBox* m_alpha;
    QComboBox* m_precision;
    QComboBox* m_maskType;
    QSpinBox* m_maskParameter;
    QSpinBox* m_head;
    QLabel* m_sharedHeads;     ///< which heads share this one's K and V (grouped-query attention)
    int m_temperatureDrag = 0; // counts slider presses
};

} // namespace qkv::ui
