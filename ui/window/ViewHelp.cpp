// SPDX-License-Identifier: GPL-3.0-or-later
#include "ViewHelp.h"

#include <QCoreApplication>
#include <QHash>
#include <QWidget>

namespace qkv::ui {

namespace {

QString tr(const char* text)
{
    return QCoreApplication::translate("ViewHelp", text);
}

// What every result heatmap shares: how to move about it.
QString heatmapUsage()
{
    return tr(
        "<p><b>Reading and moving:</b> hover a cell for its query, key and value; click it to select it "
        "in every view; the arrow keys, Page Up/Down and Home/End move the selection. The wheel zooms "
        "about the pointer, a drag pans, Ctrl++ / Ctrl+− zoom about the selected cell and Ctrl+0 shows "
        "it all; values are written in the cells once the cells are large enough. Right-click for the "
        "colour scale (linear, logarithmic, per row, diverging) and the colour map (viridis, cividis, "
        "greyscale).</p>");
}

QString heatmapText(const QString& what)
{
    return what + heatmapUsage();
}

// The pipeline and the result heatmaps.
void addResultTexts(QHash<QString, QString>& t)
{
    t.insert(QStringLiteral("pipelineView"),
             tr("<h3>Pipeline</h3><p>The whole computation of the current head on one canvas, in the order "
                "of the formula: X with W_Q, W_K, W_V → Q, K, V → Q·Kᵀ → scaled (÷ scale) → mask → weights "
                "(the normalizer, with τ, on the arrow) → ·V → head output, and with several heads "
                "concat · W_O → final output. Each stage is a small heatmap with its shape; the operator "
                "between stages is written on the arrow. The selected query row and key column are "
                "highlighted in every stage (orange: the query, teal: the key), so a number can be followed "
                "from X to the output; click a cell to select it. Blue is negative, red positive, white 0; "
                "the weights go from dark purple (0) to yellow (1); grey cells are masked (−∞ before the "
                "normalizer, weight 0). Values are written in the cells when they fit, token names when "
                "they fit, colour only beyond. The other tabs show one matrix each, for a closer look.</p>"));
    t.insert(QStringLiteral("heatmap_Q"),
             heatmapText(tr("<h3>Queries Q = X·W_Q</h3><p>One row per query token, one column per "
                            "dimension of d_k. Row i is what token i looks for. Blue is negative, red "
                            "positive, white 0 (diverging colours, symmetric about 0).</p>")));
    t.insert(QStringLiteral("heatmap_K"),
             heatmapText(tr("<h3>Keys K = X·W_K (Z·W_K in cross-attention)</h3><p>One row per key "
                            "token, one column per dimension of d_k. Row j is what token j offers to be "
                            "found by; a query attends to keys whose rows point the same way as its "
                            "own.</p>")));
    t.insert(QStringLiteral("heatmap_V"),
             heatmapText(tr("<h3>Values V = X·W_V (Z·W_V in cross-attention)</h3><p>One row per key "
                            "token, one column per dimension of d_v. Row j is what token j hands on to "
                            "every query that attends to it.</p>")));
    t.insert(QStringLiteral("heatmap_scores"),
             heatmapText(tr("<h3>Scores</h3><p>Rows are queries, columns keys: how well query i matches "
                            "key j under the score function (dot product q_i·k_j, general, additive or "
                            "cosine), before scaling. A row marked ∅ has no key it may attend to.</p>")));
    t.insert(QStringLiteral("heatmap_scaled"),
             heatmapText(tr("<h3>Scaled scores</h3><p>The scores divided by the scale (√d_k by default, "
                            "or none, or a constant). The temperature τ is applied by the normalizer, "
                            "next. Rows are queries, columns keys.</p>")));
    t.insert(QStringLiteral("heatmap_mask"),
             heatmapText(tr("<h3>Mask</h3><p>Which key each query may attend to: yellow 1 = allowed, "
                            "purple 0 = masked (causal, prefix, sliding window, custom, and padding "
                            "tokens). <b>Paint it:</b> drag across cells to allow or mask a rectangle "
                            "— the first cell decides which (it flips) — as one undo step; the mask "
                            "becomes custom. Space flips the selected cell. On this tab Shift+drag "
                            "pans.</p>")));
    t.insert(QStringLiteral("heatmap_weights"),
             heatmapText(tr(
                 "<h3>Attention weights</h3><p>Rows are queries, columns keys: row i is how "
                 "query i shares its attention among the keys. With softmax, sparsemax, "
                 "entmax and hardmax each row sums to 1 (sparsemax and entmax give exact "
                 "zeros, hardmax all weight to the best key, shared on ties); with sigmoid each weight is on "
                 "its own and rows need not sum to 1. Grey cells are masked (distinct from a "
                 "weight of exactly 0); a row marked ∅ has no key to attend to and is all "
                 "zeros. The column on the right gives each row's entropy H (in nats: 0 is "
                 "all weight on one key, ln m is even) and its support (keys with weight "
                 "above 0). Per-row colours (right-click) show where a spread row looks.</p>")));
    t.insert(QStringLiteral("heatmap_output"),
             heatmapText(tr("<h3>Head output A·V</h3><p>One row per query, one column per dimension of "
                            "d_v: row i is the weighted mean of the value rows, with query i's weights. "
                            "</p>")));
    t.insert(QStringLiteral("heatmap_finalOutput"),
             heatmapText(tr("<h3>Final output</h3><p>The heads' outputs side by side (concat), times "
                            "W_O when the output projection is on (d_out columns). One row per query."
                            "</p>")));
}

// The other result views: tabs, step by step, the planes, the heads, the model.
void addViewTexts(QHash<QString, QString>& t)
{
    t.insert(QStringLiteral("resultTabs"),
             tr("<h3>Result matrices</h3><p>Every matrix of the current head from Q to the output, one "
                "tab each. View ▸ Lock Colour Ranges keeps each colour scale as it is, so two states of the "
                "session compare by colour.</p>"));
    t.insert(QStringLiteral("mathPanel"),
             tr("<h3>Step by step</h3><p>The arithmetic behind the selected cell (query i, key j) of the "
                "current head: q_i and k_j, their products and sum, the scale, the mask, the temperature, "
                "the normalizer over row i, and o_i = Σ_j a_ij v_j. In float32 the row's weights are "
                "compared with float64. Copy it as text or as LaTeX.</p>"));
    t.insert(QStringLiteral("qkSpaceView"),
             tr("<h3>Q/K space</h3><p>Queries (blue discs) and keys (red squares) of the current head in "
                "one plane: the raw coordinates when d_k = 2, else the plane of the two largest principal "
                "components of Q and K together (or two dimensions you pick). From the selected query a "
                "line goes to each key it gives weight to, wider for larger weights. Click a point to "
                "select it. Distances in a projection are approximate. With RoPE positions, the RoPE pair "
                "plane shows the two coordinates RoPE turns together, and the selected query and key before "
                "their turn (hollow circles, joined by a dashed arc of position × θ).</p>"));
    t.insert(QStringLiteral("vSpaceView"),
             tr("<h3>Values</h3><p>The value rows of the current head in a plane fitted on V, their "
                "convex hull, and each output o(token). A softmax output is a weighted mean of the "
                "values, so it lies inside the hull; a sparsemax output lies on the face its support "
                "spans. Click a value to select its key, an output to select its query.</p>"));
    t.insert(QStringLiteral("threeSpacesView"),
             tr("<h3>Q, K, V</h3><p>The queries, keys and values of the current head as three separate "
                "planes, as the articles draw them: the raw coordinates when the width is 2, else each "
                "matrix's own PCA plane, or two dimensions you pick (each plot has its own controls). "
                "Points are labelled by their tokens; the selected query and key are ringed. Click a "
                "point to select it. Q/K Space draws queries and keys in one shared plane instead.</p>"));
    t.insert(QStringLiteral("headOverview"),
             tr("<h3>Heads</h3><p>Every head's attention weights side by side, each titled with its mean "
                "entropy and mean support; the current head is framed. Click a head to make it current, "
                "a cell to select it.</p>"));
    t.insert(QStringLiteral("modelView"),
             tr("<h3>Model</h3><p>Every layer and head of the model opened with File ▸ Open Model…, "
                "for its text, as BertViz's model view draws them: one row per layer (L0 at the top), "
                "one column per query head (H0 at the left), each thumbnail that head's attention "
                "weights (rows are queries, columns keys; 0 to 1 on the weights heatmap's colours, "
                "masked cells grey). All of them come from one forward pass, computed in the "
                "background when the model is opened; the bar above shows how many layers are done. "
                "<b>Click a thumbnail</b> to open that layer and head as the session (one step, as "
                "opening a model is); the open head is outlined. Matrices longer than 128 tokens are "
                "shown averaged over blocks of cells.</p>"));
}

// The comparisons and experiments.
void addExperimentTexts(QHash<QString, QString>& t)
{
    t.insert(QStringLiteral("normalizerComparison"),
             tr("<h3>Normalizers</h3><p>The selected query row's weights under softmax, sparsemax, "
                "1.5-entmax, sigmoid and hardmax at the session's temperature: one group of bars per key, "
                "one colour per normalizer. Masked keys get no bar.</p>"));
    t.insert(QStringLiteral("sweepView"),
             tr("<h3>Sweeps</h3><p>How the selected query row (solid) and the mean over the rows "
                "(dashed) change with the temperature τ, on a log axis from 0.001 to 1000, under softmax, "
                "sparsemax, entmax, sigmoid and hardmax: entropy (nats), support (keys with a weight above "
                "0) and top weight. Below, the same for entmax as α goes from 1 (softmax) to 4, at the "
                "session's τ. Dotted lines mark the session's τ and α. Cold (small τ) every normalizer "
                "tends to hardmax; hot, softmax tends to uniform (entropy ln m). Click in a τ panel to "
                "set τ, in an α panel to switch to entmax with that α (one undo step).</p>"));
    t.insert(QStringLiteral("varianceView"), tr("<h3>√d_k variance</h3><p>Random q and k with "
                                                "unit-variance components (NumPy's randn; seed 42 and "
                                                "10 000 samples reproduce the article): the empirical "
                                                "variance of q·k against d_k = 1 … 1024 on "
                                                "log axes, with one standard error, beside the theory "
                                                "d_k; and of q·k/√d_k beside 1. The star is "
                                                "the variance of the current head's raw scores at the "
                                                "session's d_k. Samples and seed are settings "
                                                "of this view, not of the session.</p>"));
    t.insert(
        QStringLiteral("saturationView"),
        tr("<h3>Saturation</h3><p>The selected row's scores S'/τ multiplied by c (the slider, and three "
           "factors you choose: 1, 5, 20 by default), normalized: the weights, the top one in %, and "
           "below "
           "them the gradient reaching each score for a loss asking more weight on one key (∂L/∂p = e_k: "
           "the top key or the selected key), i.e. row k of the Jacobian, with its norm. One gradient "
           "scale "
           "for all panels: as c grows softmax's gradients vanish; sparsemax's are exactly zero off its "
           "support.</p>"));
    t.insert(QStringLiteral("scalingView"),
             tr("<h3>Scaled vs unscaled</h3><p>The current head computed by the engine under two settings "
                "(A: ÷√d_k, B: unscaled by default; any scale and temperature): the selected row's weights "
                "under each with their entropy and top weight, and every row's entropy under both beside "
                "ln m, the entropy of uniform attention. The session is not changed.</p>"));
    t.insert(QStringLiteral("snapshotDiffView"),
             tr("<h3>Snapshots</h3><p>What an edit did. Edit ▸ Take Snapshot… (Ctrl+K) keeps the current "
                "inputs under a name, in the session file; here, pick a snapshot and a matrix (X, Q, K, V, "
                "scores, scaled scores, weights, head output, concat, final output) to see it now, in the "
                "snapshot (recomputed from its inputs) and their difference now − snapshot: blue where it "
                "went down, red where it went up, white where nothing changed. The largest changes are "
                "listed with both values. A matrix whose shape changed (a token added) is reported instead. "
                "Delete removes the snapshot; taking and deleting are undo steps.</p>"));
}

// The editors and panels of the inputs.
void addEditorTexts(QHash<QString, QString>& t)
{
    t.insert(QStringLiteral("maskGrid"),
             tr("<h3>Mask editor</h3><p>Rows are queries, columns keys; green is allowed, grey masked, "
                "darker grey padding (always masked). Click a cell to flip it or drag across cells: the "
                "first cell's new state is given to the whole rectangle, as one undo step, and the mask "
                "becomes custom. Space flips the current cell.</p>"));
    t.insert(QStringLiteral("controlsPanel"),
             tr("<h3>Attention</h3><p>Self- or cross-attention, the score function, the scale (√d_k, "
                "none or a constant), the temperature τ (the slider is logarithmic; any positive value "
                "may be typed), the normalizer and its α, the precision (float64 or float32), the mask "
                "and its parameter, and the head shown.</p>"));
    t.insert(QStringLiteral("lessonPanel"),
             tr("<h3>Lesson</h3><p>A guided walk-through from the Lessons menu: the lesson's title, the "
                "step on show (Step k of N) and its text. Each step may open a session or change a "
                "setting (temperature, normalizer, scale, mask, score, heads) as <b>one undo step</b>, "
                "brings its view forward and selects the cell it talks about. <b>Next</b> (Alt+Right) "
                "goes on; <b>Back</b> (Alt+Left) undoes what the step did, if nothing was edited since, "
                "and shows the step before; <b>Close</b> ends the lesson and keeps the session. Edit "
                "anything at any time: the lesson goes on from there. A question step checks the answer "
                "picked at once and explains it. A step may also act in the Training workspace: start a run, "
                "or open the trained model in the model view (a note under the text says when no run "
                "has finished yet). Lessons ▸ Open Lesson File plays a "
                "<code>.lesson.json</code> of your own; a file with a mistake is refused with a message "
                "naming the file and the step.</p>"));
    t.insert(QStringLiteral("shapePanel"),
             tr("<h3>Dimensions</h3><p>d_model (the columns of X), d_k, d_v, the number of heads, the "
                "output projection W_O and its d_out, and the initializer that fills new entries (or "
                "re-initialises every weight, or re-draws the embeddings). \"NumPy legacy\" is NumPy's "
                "own generator: np.random.seed(seed), then randn(rows, cols) × scale for W_Q, W_K, W_V of "
                "each head in turn, as the articles' code draws them.</p>"));
}

const QHash<QString, QString>& texts()
{
    static const QHash<QString, QString> all = [] {
        QHash<QString, QString> t;
        addResultTexts(t);
        addViewTexts(t);
        addExperimentTexts(t);
        addEditorTexts(t);
        return t;
    }();
    return all;
}

} // namespace

QString whatsThisText(const QString& objectName)
{
    if (objectName.startsWith(QLatin1String("editor_")))
        return tr("<h3>Matrix editor: %1</h3><p>Click a cell and type a value (the full value is shown "
                  "while editing and in the tooltip); Ctrl+C / Ctrl+V copy and paste blocks "
                  "(tab- or comma-separated). Right-click sets the significant digits shown. Every edit is "
                  "one undo step.</p>")
            .arg(objectName.mid(7));
    return texts().value(objectName);
}

QStringList viewsWithHelp()
{
    return texts().keys();
}

void addWhatsThis(QWidget* root)
{
    const auto apply = [](QWidget* widget) {
        const QString text = whatsThisText(widget->objectName());
        if (!text.isEmpty())
            widget->setWhatsThis(text);
    };
    apply(root);
    for (QWidget* child : root->findChildren<QWidget*>())
        apply(child);
}

} // namespace qkv::ui
