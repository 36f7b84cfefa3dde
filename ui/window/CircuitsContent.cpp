// SPDX-License-Identifier: GPL-3.0-or-later
#include "CircuitsContent.h"

#include "Error.h"
#include "LabelText.h"
#include "Model.h"

#include <QCoreApplication>

#include <cmath>
#include <new>

namespace qkv::ui {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("CircuitsContent", text);
}

std::vector<double> finiteOrEmpty(const std::vector<double>& values)
{
    for (double value : values)
        if (!std::isfinite(value))
            return {};
    return values;
}

// Each entry with the label the model's tokenizer gives its id.
QList<CircuitToken> labelled(const Model& model, const std::vector<TokenValue>& entries)
{
    std::vector<std::int64_t> ids;
    for (const TokenValue& entry : entries)
        ids.push_back(entry.id);
    const std::vector<std::string> labels = qkv::tokenLabels(model, ids);
    QList<CircuitToken> tokens;
    for (std::size_t i = 0; i < entries.size(); ++i)
        tokens.append({QString::fromStdString(labels[i]), entries[i].value});
    return tokens;
}

} // namespace

CircuitsSessionDisplay sessionCircuitsDisplay(const Session& session, int head)
{
    CircuitsSessionDisplay display;
    if (session.headCount() == 0) {
        display.spectraMessage = tr("The session has no head.");
        return display;
    }
    display.title =
        session.headCount() > 1 ? tr("Head %1 of %2").arg(head + 1).arg(session.headCount()) : tr("The head");
    try {
        const HeadFactors factors = sessionHeadFactors(session, head);
        const CircuitSpectra spectra = circuitSpectra(factors);
        display.qkSingularValues = spectra.qk.singularValues;
        if (spectra.ov)
            display.ovSingularValues = finiteOrEmpty(spectra.ov->singularValues);
        display.ovEigenvalues = spectra.ovEigenvalues;
        if (!spectra.ovEigenvalues.empty())
            display.ovCopyingScore = copyingScore(spectra.ovEigenvalues);
        if (!spectra.ov)
            display.spectraMessage = tr("No W_O, so no OV circuit.");
        else if (spectra.ovEigenvalues.empty())
            display.spectraMessage =
                tr("W_OV has no eigenvalues: W_O does not write back into the space W_V reads.");

        const Matrix queries = session.X * factors.query;
        const Matrix keys = session.keySide() * factors.key;
        Matrix table = queries * keys.transpose();
        if (table.allFinite()) {
            display.qkTable = std::move(table);
            display.queryTokens = tokenLabels(session.tokens, session.n());
            display.keyTokens = tokenLabels(session.keyTokens(), session.m());
        } else {
            display.qkMessage = tr("The QK table has values too large to show.");
        }
    } catch (const Error& e) {
        display = CircuitsSessionDisplay();
        display.title = tr("Head %1").arg(head + 1);
        display.spectraMessage =
            tr("Cannot compute the head's circuits: %1").arg(QString::fromStdString(e.what()));
    } catch (const std::bad_alloc&) {
        display = CircuitsSessionDisplay();
        display.title = tr("Head %1").arg(head + 1);
        display.spectraMessage = tr("Not enough memory for the head's circuits.");
    }
    return display;
}

ModelCircuitsOutcome computeModelCircuits(const ModelCircuitsRequest& request)
{
    ModelCircuitsOutcome outcome;
    try {
        outcome.circuits =
            request.circuits ? request.circuits : std::make_shared<const ModelCircuits>(*request.model);
        const ModelCircuits& circuits = *outcome.circuits;
        outcome.fullOv = request.fullOv ? request.fullOv : circuits.fullOv(request.layer, request.head);
        if (!std::isfinite(outcome.fullOv->copyingScore))
            throw Error("the full OV circuit's eigenvalues are not finite");
        if (request.query) {
            outcome.topKeys = labelled(
                *request.model, circuits.topKeys(request.layer, request.head, *request.query, request.top));
            const std::vector<std::vector<TokenValue>> writes =
                circuits.ovTop(request.layer, request.head, {*request.query}, request.top);
            outcome.topWrites = labelled(*request.model, writes.front());
        }
    } catch (const Error& e) {
        outcome.fullOv.reset();
        outcome.error = QString::fromStdString(e.what());
    } catch (const std::bad_alloc&) {
        outcome.fullOv.reset();
        outcome.error = tr("not enough memory for the model's circuits");
    } catch (const std::exception& e) { // nothing may escape a worker thread
        outcome.fullOv.reset();
        outcome.error = QString::fromLocal8Bit(e.what());
    }
    return outcome;
}

} // namespace qkv::ui
