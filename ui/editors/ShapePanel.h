// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The session's sizes (d_model, d_k, d_v, heads, the output projection) and the weight initializer.

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QSpinBox;

namespace qkv::ui {

class Document;

/// Each size change is one undoable edit whose new entries come from the document's initializer. The
/// initializer itself is a preference (not undoable); "Re-initialise all weights" and "Re-draw embeddings X"
/// are one undoable edit each.
class ShapePanel : public QWidget {
    Q_OBJECT
public:
    explicit ShapePanel(Document* document, QWidget* parent = nullptr);

private:
    // The constructor's parts: the controls with their tooltips, the form, the edits they push.
    void setUpShapeControls();
    void setUpInitializerControls();
    void layOutControls();
    void connectShapeEdits();
    void connectInitializerEdits();
    void syncFromSession();
    void syncInitializer();
    void applyInitializer();

    Document* m_document;
    QSpinBox* m_dModel;
    QSpinBox* m_dK;
    QSpinBox* m_dV;
    QSpinBox* m_heads;
    QCheckBox* m_outputProjection;
    QCheckBox* m_biases;
    QSpinBox* m_dOut;
    QComboBox* m_initializer;
    QDoubleSpinBox* m_initScale;
    QSpinBox* m_initSeed;
    QPushButton* m_reinitializeAll;
    QPushButton* m_reinitializeEmbeddings;
};

} // namespace qkv::ui
