// SPDX-License-Identifier: GPL-3.0-or-later
#include "TrainCommand.h"

#include "Error.h"
#include "TrainSettings.h"
#include "Trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace qkv::app {

namespace {

std::string duration(double seconds)
{
    const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
    char text[32];
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
    return text;
}

/// One line of progress on `err` at every evaluation, at the last step and at most every two seconds
/// otherwise.
class ProgressPrinter {
public:
    explicit ProgressPrinter(std::ostream& err) : err_(err) {}

    bool operator()(const training::StepReport& r)
    {
        const auto now = std::chrono::steady_clock::now();
        if (!(r.evaluated || r.step == r.lastStep || now - lastPrint_ > std::chrono::seconds(2)))
            return true;
        lastPrint_ = now;
        char line[200];
        std::snprintf(line, sizeof line, "step %lld/%lld  loss %.4f", static_cast<long long>(r.step),
                      static_cast<long long>(r.lastStep), r.loss);
        err_ << line;
        if (r.evaluated) {
            std::snprintf(line, sizeof line, "  validation %.4f (task positions %.4f)", r.validationLoss,
                          r.validationTaskLoss);
            err_ << line;
            std::snprintf(line, sizeof line, "  previous-token %.2f  induction %.2f",
                          r.scores.previousToken.maxCoeff(), r.scores.induction.maxCoeff());
            err_ << line;
        }
        std::snprintf(line, sizeof line, "  %.1f steps/s  %s left\n", r.stepsPerSecond,
                      duration(r.secondsLeft).c_str());
        err_ << line << std::flush;
        return true;
    }

private:
    std::ostream& err_;
    std::chrono::steady_clock::time_point lastPrint_ =
        std::chrono::steady_clock::now() - std::chrono::seconds(10);
};

} // namespace

CommandLineOutcome runTrain(const ParsedArguments& arguments, const CommandStreams& streams)
{
    const training::TrainSettings settings = trainSettings(arguments);
    const bool quiet = arguments.has("quiet");
    ProgressPrinter printer(streams.err);
    const auto progress = [&](const training::StepReport& report) { return quiet || printer(report); };
    try {
        const training::TrainOutcome result = training::train(settings, progress);
        if (result.diverged) {
            streams.err << "qkvlab train: the loss is not finite at step " << result.divergedStep
                        << "; try a lower learning rate (--lr); the model of step " << result.lastStep
                        << " is saved in " << settings.out << "\n";
            return finished(1);
        }
    } catch (const std::bad_alloc&) {
        throw Error("not enough memory for this model and batch");
    }
    if (!quiet)
        streams.err << "saved " << settings.out << "\n";
    return finished();
}

} // namespace qkv::app
