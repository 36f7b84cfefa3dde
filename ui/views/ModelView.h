// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Every layer and head of a real model at once (as BertViz's model view): a grid of small images of each
// head's attention weights, one row per layer and one column per head. Clicking one asks for that layer and
// head as the session.

#include "EigenTypes.h"
#include "Figure.h"

#include <QImage>
#include <QList>
#include <QString>
#include <QWidget>

#include <vector>

class QPainter;

namespace qkv::ui {

/// An arrow drawn from an earlier head's thumbnail into another's: how strongly the later head reads it
/// (`strength`, 0 to 1, sets the width).
struct HeadArrow {
    int fromLayer = 0;
    int fromHead = 0;
    double strength = 0;
};

/// The thumbnails of a model's attention (the data comes from qkv::attentionOfEveryLayer), drawn with the
/// weights heatmap's colours: weights 0 to 1 on viridis, causally masked cells grey. A view: it draws and
/// says which thumbnail was clicked; what is computed and opened is its owner's business.
class ModelView : public QWidget, public Figure {
    Q_OBJECT
public:
    explicit ModelView(QWidget* parent = nullptr);

    /// Shows `weights` ([layer][head], each n × n) under `title`; every thumbnail's image is built here, in
    /// one pass. With `causal`, the cells above the diagonal are drawn as masked. Clears the selection.
    void setAttention(const std::vector<std::vector<Matrix>>& weights, const QString& title,
                      bool causal = true);
    /// No thumbnails; `message` (what to do, or what went wrong) is shown instead.
    void clear(const QString& message);
    /// While the thumbnails are computed: the message says so, the old thumbnails stay until replaced.
    void setMessage(const QString& message);

    int layerCount() const { return m_layers; }
    int headCount() const { return m_heads; }
    int thumbnailCount() const { return static_cast<int>(m_images.size()); }
    /// The image of a thumbnail (at most maximumImageSide pixels a side), null when there is none.
    QImage thumbnail(int layer, int head) const;
    /// Where the thumbnail sits in the widget (empty when there is none): for clicks and tests.
    QRect thumbnailRect(int layer, int head) const;

    /// The thumbnail outlined as the one open (-1, -1: none).
    void setSelected(int layer, int head);
    int selectedLayer() const { return m_selectedLayer; }
    int selectedHead() const { return m_selectedHead; }

    QString figureName() const override { return QStringLiteral("model"); }
    QString figureTitle() const override;
    void renderFigure(QPaintDevice* device, const QSize& size) const override;
    QSize defaultFigureSize() const override;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

    /// Larger matrices are shown averaged over blocks of cells, so a thumbnail's image stays small.
    static constexpr int maximumImageSide = 128;

    /// Arrows from earlier heads into the thumbnail of (`toLayer`, `toHead`), over the thumbnails; none
    /// removes them. They stay when new thumbnails arrive.
    void setArrows(int toLayer, int toHead, const QList<HeadArrow>& arrows);
    const QList<HeadArrow>& arrows() const { return m_arrows; }

    /// What a thumbnail's tooltip says can be done with it, after its layer and head.
    void setThumbnailHint(const QString& hint) { m_thumbnailHint = hint; }

signals:
    /// A thumbnail was clicked (layer and head counted from 0).
    void thumbnailClicked(int layer, int head);
    /// A thumbnail was right-clicked (or the menu key pressed over it) at `globalPosition`: its owner shows
    /// what can be done to that head.
    void thumbnailMenuRequested(int layer, int head, const QPoint& globalPosition);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    bool event(QEvent* event) override;

private:
    /// Where everything goes in `area`, for a font of `metrics`.
    struct Layout {
        QRect title;
        int left = 0;    // of the first thumbnail
        int top = 0;     // of the first thumbnail
        int cell = 0;    // thumbnail side
        int spacing = 0; // between thumbnails
        QRect cellRect(int layer, int head) const;
    };
    Layout layout(const QRect& area, const QFontMetrics& metrics, bool screen) const;
    /// Draws title, labels, thumbnails and the selection into `area`.
    void paint(QPainter& painter, const QRect& area, const QFont& font, const QColor& text,
               const QColor& outline, bool screen) const;
    void paintArrows(QPainter& painter, const Layout& l, const QColor& color) const;
    /// The thumbnail under `position`, as (layer, head); (-1, -1) when none.
    std::pair<int, int> thumbnailAt(const QPoint& position) const;

    QList<QImage> m_images; // layer by layer, head by head
    int m_layers = 0;
    int m_heads = 0;
    QString m_title;
    QString m_message;
    int m_selectedLayer = -1;
    int m_selectedHead = -1;
    QList<HeadArrow> m_arrows;
    int m_arrowLayer = -1;
    int m_arrowHead = -1;
    QString m_thumbnailHint = tr("click to open, right-click to ablate or scale");
};

} // namespace qkv::ui
