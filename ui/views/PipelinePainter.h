// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Paints the pipeline canvas: the title line, and each stage's arrow, caption, cells, selection and labels.

#include "EigenTypes.h"

#include <QCoreApplication>
#include <QFont>
#include <QString>

#include <cstddef>
#include <utility>

class QPainter;

namespace qkv::ui {

struct PipelineLayout;
struct PipelineStage;
class PipelineStages;
struct PipelineTile;

/// Draws built stages as laid out, with the selected query and key highlighted. Only draws.
class PipelinePainter {
    Q_DECLARE_TR_FUNCTIONS(PipelinePainter)
public:
    PipelinePainter(const PipelineStages& stages, const PipelineLayout& layout, Index selectedQuery,
                    Index selectedKey);

    /// The whole canvas: the message when there are no stages, else the title line (headed `title`) and
    /// every stage.
    void paint(QPainter& painter, const QString& title) const;
    /// One stage's caption, cells, selection, values and labels (not its arrow).
    void paintStage(QPainter& painter, std::size_t stage) const;

    /// The stage's title as its caption writes it, and in what font: written smaller, down to seven tenths
    /// of the size, before it is elided.
    static std::pair<QString, QFont> fittedTitle(const PipelineStage& stage, const PipelineTile& tile,
                                                 const PipelineLayout& layout);

private:
    void paintHeader(QPainter& painter, const QString& title) const;
    void paintArrow(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;
    void paintCaption(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;
    void paintCells(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;
    void paintHighlight(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;
    void paintValues(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;
    void paintLabels(QPainter& painter, const PipelineStage& stage, const PipelineTile& tile) const;

    const PipelineStages& m_stages;
    const PipelineLayout& m_layout;
    Index m_query;
    Index m_key;
};

} // namespace qkv::ui
