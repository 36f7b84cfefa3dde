// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Patching panel's inputs: the clean and corrupted prompts with their tokens side by side (the tokens
// that differ marked, a different count told as it is typed), and the metric's answer and wrong tokens,
// picked from the model's most probable next tokens after the clean prompt (computed off the GUI thread) or
// typed.

#include "LatestJob.h"
#include "PatchingInput.h"
#include "Session.h"

#include <QWidget>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QLabel;
class QLineEdit;
class QScrollArea;

namespace qkv {
class Model;
}

namespace qkv::ui {

class PatchingPrompts : public QWidget {
    Q_OBJECT
public:
    explicit PatchingPrompts(QWidget* parent = nullptr);

    /// The model the prompts are read with (null: none); the fields are read again.
    void setModel(std::shared_ptr<const Model> model, Precision precision);
    void setPrompts(const QString& clean, const QString& corrupt);
    /// The tokens as typed ("␣Mary" is not typed: " Mary", or "#42").
    void setTokens(const QString& answer, const QString& wrong);
    /// What the fields say now (site and positions are the panel's).
    PatchingInput input() const;
    /// The clean prompt's tokens as last read.
    const PromptTokens& cleanTokens() const { return m_clean; }
    const PromptTokens& corruptTokens() const { return m_corrupt; }
    /// The positions marked as differing in the token strip.
    QList<int> markedPositions() const { return m_marked; }
    /// The message under the prompts about their token counts ("" when they agree).
    QString countMessage() const;
    /// True while the clean prompt's top predictions are computed.
    bool isPredicting() const { return m_topJob.isBusy(); }
    /// The label of token `id` ("␣Mary", "#42").
    QString tokenLabel(std::int64_t id) const;

signals:
    /// A prompt or a token changed.
    void inputChanged();
    /// Return in a prompt or token field.
    void runRequested();

private:
    struct TopTokens {
        std::vector<std::int64_t> ids;
        std::vector<double> probabilities;
        QStringList labels;
    };
    QWidget* createTokenRow();
    void readPrompts();
    void updateTokenStrip();
    void requestTopTokens();
    void showTopTokens(const TopTokens& top);
    /// The id a combo's text names: one of its items, or a typed token.
    std::optional<std::int64_t> pickedToken(const QComboBox* combo, QString* error) const;

    std::shared_ptr<const Model> m_model;
    Precision m_precision = Precision::Float64;
    QLineEdit* m_cleanEdit;
    QLineEdit* m_corruptEdit;
    QLabel* m_tokenStrip;
    QScrollArea* m_stripScroll;
    QLabel* m_count;
    QComboBox* m_answer;
    QComboBox* m_wrong;
    PromptTokens m_clean, m_corrupt;
    QList<int> m_marked;
    LatestJob<TopTokens> m_topJob;
    std::vector<std::int64_t> m_topFor; // the clean ids the combos' items are for
};

} // namespace qkv::ui
