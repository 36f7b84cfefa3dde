// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The Circuits view of the open head: the singular values of W_QK and W_OV, the eigenvalues of W_OV and of
// the full OV circuit in the complex plane with the copying scores, the prompt's token × token QK table, and
// for a model's head what one token seeks among the vocabulary's keys and what attending to it writes into
// the logits. Only draws: everything arrives computed (CircuitsPanel); the token combo asks for another
// token through lookupTokenChosen().

#include "EigenTypes.h"

#include <QList>
#include <QStringList>
#include <QWidget>

#include <complex>
#include <memory>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
class QProgressBar;

namespace qkv::ui {

class CircuitSpectrumPlot;
class EigenvaluePlot;
class Heatmap;

/// What the session's head itself gives: its circuits' spectra and the prompt's QK table.
struct CircuitsSessionDisplay {
    QString title; ///< the head, as the view's header names it
    std::vector<double> qkSingularValues;
    std::vector<double> ovSingularValues; ///< empty: the head has no OV circuit (see spectraMessage)
    std::vector<std::complex<double>> ovEigenvalues;
    std::optional<double> ovCopyingScore;
    QString spectraMessage; ///< why something is missing ("" when nothing is)
    Matrix qkTable;         ///< queries × keys; empty: see qkMessage
    QStringList queryTokens, keyTokens;
    QString qkMessage;
};

/// A token of the vocabulary and its value in a list.
struct CircuitToken {
    QString label;
    double value = 0;
};

/// What the model's head gives: the full OV circuit and the lists for one token.
struct CircuitsModelDisplay {
    std::vector<std::complex<double>> fullOvEigenvalues;
    std::optional<double> fullOvCopyingScore;
    QString fullOvMessage;       ///< why there is no full OV circuit ("" when there is)
    QStringList lookupTokens;    ///< the prompt's tokens the combo offers (empty: no combo)
    int lookupToken = -1;        ///< the one the lists are for
    QList<CircuitToken> topKeys; ///< best first
    QList<CircuitToken> topWrites;
    QString listsMessage; ///< why there are no lists ("" when there are)
};

class CircuitsView : public QWidget {
    Q_OBJECT
public:
    explicit CircuitsView(QWidget* parent = nullptr);
    ~CircuitsView() override;

    void setSessionDisplay(CircuitsSessionDisplay display);
    void setModelDisplay(CircuitsModelDisplay display);
    /// Shows the busy indicator while the model's part is computed.
    void setBusy(bool busy);
    bool isBusy() const;

    const CircuitsSessionDisplay& sessionDisplay() const { return m_session; }
    const CircuitsModelDisplay& modelDisplay() const { return m_model; }
    CircuitSpectrumPlot* spectrumPlot() const { return m_spectrum; }
    EigenvaluePlot* eigenvaluePlot() const { return m_eigenvalues; }
    Heatmap* qkTable() const { return m_qkTable; }
    /// The copying scores' lines as shown: W_OV's ("" without eigenvalues); the full OV circuit's, or why
    /// there is none.
    QString copyingText() const;
    QString fullOvCopyingText() const;

    /// How a number is written in the view: three significant decimals, "—" when it is not finite.
    static QString formatNumber(double value);

signals:
    /// The person chose token `index` of the prompt for the lists.
    void lookupTokenChosen(int index);

private:
    QWidget* createLists();
    void updateEigenvalues();
    void updateCopying();

    CircuitsSessionDisplay m_session;
    CircuitsModelDisplay m_model;
    QLabel* m_title;
    QProgressBar* m_busy;
    QCheckBox* m_logarithmic;
    CircuitSpectrumPlot* m_spectrum;
    EigenvaluePlot* m_eigenvalues;
    QLabel* m_spectraMessage;
    QLabel* m_copying;
    QLabel* m_fullCopying;
    Heatmap* m_qkTable;
    QLabel* m_qkMessage;
    QWidget* m_listsBox; // the token and its two lists
    QComboBox* m_lookup;
    QListWidget* m_topKeys;
    QListWidget* m_topWrites;
    QLabel* m_listsMessage;
};

} // namespace qkv::ui
