// SPDX-License-Identifier: GPL-3.0-or-later
// The control panels and the shape panel: every control edits the session through one undo command and
// follows undo and redo (tests/ui/views/tst_resultviews.cpp shows the result views following such edits).

#include "ControlsPanel.h"
#include "Document.h"
#include "DocumentCommands.h"
#include "NumpyRandom.h"
#include "SessionEdits.h"
#include "ShapePanel.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QUndoStack>
#include <QVBoxLayout>

#include "TestMain.h"
#include <QtTest>

#include <cmath>
#include <memory>

using namespace qkv;
using namespace qkv::ui;

namespace {

// Session and AttentionResult compare shape-safely (core/kernels/EigenTypes.h sameMatrix).
template <typename T> bool sameValue(const T& a, const T& b)
{
    return a == b;
}

// What a control shows, as text, so any kind of control compares the same way.
QString shownBy(QWidget* control)
{
    if (auto* box = qobject_cast<QComboBox*>(control))
        return box->currentText();
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(control))
        return spin->text();
    if (auto* slider = qobject_cast<QSlider*>(control))
        return QString::number(slider->value());
    if (auto* check = qobject_cast<QCheckBox*>(control))
        return check->isChecked() ? QStringLiteral("on") : QStringLiteral("off");
    return QString();
}

// Changes a control the way a person would.
void operate(QWidget* control, const QVariant& value)
{
    if (auto* box = qobject_cast<QComboBox*>(control))
        box->setCurrentIndex(value.toInt());
    else if (auto* spin = qobject_cast<QSpinBox*>(control))
        spin->setValue(value.toInt());
    else if (auto* doubleSpin = qobject_cast<QDoubleSpinBox*>(control))
        doubleSpin->setValue(value.toDouble());
    else if (auto* slider = qobject_cast<QSlider*>(control))
        slider->setValue(value.toInt());
    else if (auto* check = qobject_cast<QCheckBox*>(control))
        check->setChecked(value.toBool());
    else if (auto* button = qobject_cast<QPushButton*>(control))
        button->click();
}

} // namespace

class TestControls : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();

    void everyControlIsOneUndoableEdit_data();
    void everyControlIsOneUndoableEdit();
    void dragsMergeIntoOneStep_data();
    void dragsMergeIntoOneStep();
    void twoDragsAreTwoSteps();
    void sliderTemperatureAsTyped();
    void typedTemperature_data();
    void typedTemperature();
    void enabledOnlyWhenMeaningful();
    void scoreCreatesParametersAndResetsScale();
    void headIsViewState();
    void sharedKeysAndValuesAreNamed();
    void precisionFromTheKeyboard();
    void everyControlHasATooltip();

    void dimensionsUpAndDown_data();
    void dimensionsUpAndDown();
    void threeHeadsWithOutputProjection();
    void outputWidthDOut();
    void reinitializeAll();
    void initializerSeedIsReproducible();
    void numpyInitializerDrawsTheArticlesStream();

private:
    template <typename T> T* find(const char* name)
    {
        T* widget = m_window->findChild<T*>(QLatin1String(name));
        if (!widget)
            qFatal("no widget named %s", name);
        return widget;
    }
    void prepare(const QString& step);

    std::unique_ptr<Document> m_document;
    std::unique_ptr<QWidget> m_window;
};

void TestControls::init()
{
    m_document = std::make_unique<Document>();
    m_window = std::make_unique<QWidget>();
    auto* panels = new QVBoxLayout(m_window.get());
    panels->addWidget(new ControlsPanel(m_document.get(), m_window.get()));
    panels->addWidget(new ShapePanel(m_document.get(), m_window.get()));
    m_window->resize(1000, 600);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

void TestControls::cleanup()
{
    m_window.reset();
    m_document.reset();
}

// A state a control needs before it means anything, set up as an ordinary edit.
void TestControls::prepare(const QString& step)
{
    if (step.isEmpty())
        return;
    pushEdit(m_document.get(), QStringLiteral("prepare"), Document::Options, [step](Session& s) {
        if (step == QLatin1String("prefix"))
            s.mask.type = MaskType::Prefix;
        else if (step == QLatin1String("sliding"))
            s.mask.type = MaskType::Sliding;
        else if (step == QLatin1String("constant"))
            s.scale.kind = Scale::Kind::Constant;
        else if (step == QLatin1String("entmax"))
            s.normalizer.type = NormalizerType::Entmax;
    });
}

void TestControls::everyControlIsOneUndoableEdit_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("preparation");
    QTest::addColumn<QVariant>("value");
    QTest::addColumn<bool>("resultChanges"); // false: recomputed, but the same numbers

    QTest::newRow("cross-attention") << "attentionKind"
                                     << "" << QVariant(1) << false;
    QTest::newRow("causal mask") << "maskType"
                                 << "" << QVariant(1) << true;
    QTest::newRow("prefix mask") << "maskType"
                                 << "" << QVariant(2) << true;
    QTest::newRow("sliding mask") << "maskType"
                                  << "" << QVariant(3) << true;
    QTest::newRow("custom mask") << "maskType"
                                 << "" << QVariant(4) << false;
    QTest::newRow("prefix length") << "maskParameter"
                                   << "prefix" << QVariant(2) << true;
    QTest::newRow("window") << "maskParameter"
                            << "sliding" << QVariant(2) << true;
    QTest::newRow("no scale") << "scaleKind"
                              << "" << QVariant(1) << true;
    QTest::newRow("constant scale") << "scaleKind"
                                    << "" << QVariant(2) << true;
    QTest::newRow("scale constant") << "scaleValue"
                                    << "constant" << QVariant(4.0) << true;
    QTest::newRow("temperature slider") << "temperatureSlider"
                                        << "" << QVariant(50) << true;
    QTest::newRow("temperature spin") << "temperatureSpin"
                                      << "" << QVariant(2.5) << true;
    QTest::newRow("sparsemax") << "normalizer"
                               << "" << QVariant(1) << true;
    QTest::newRow("entmax") << "normalizer"
                            << "" << QVariant(2) << true;
    QTest::newRow("sigmoid") << "normalizer"
                             << "" << QVariant(3) << true;
    QTest::newRow("hardmax") << "normalizer"
                             << "" << QVariant(4) << true;
    QTest::newRow("alpha") << "alpha"
                           << "entmax" << QVariant(2.0) << true;
    QTest::newRow("float32") << "precision"
                             << "" << QVariant(1) << true;
    QTest::newRow("general score") << "score"
                                   << "" << QVariant(1) << true;
    QTest::newRow("additive score") << "score"
                                    << "" << QVariant(2) << true;
    QTest::newRow("cosine score") << "score"
                                  << "" << QVariant(3) << true;
    QTest::newRow("d_model") << "dModel"
                             << "" << QVariant(6) << true;
    QTest::newRow("d_k") << "dK"
                         << "" << QVariant(5) << true;
    QTest::newRow("d_v") << "dV"
                         << "" << QVariant(2) << true;
    QTest::newRow("heads") << "heads"
                           << "" << QVariant(2) << true;
    QTest::newRow("output projection") << "outputProjection"
                                       << "" << QVariant(true) << true;
    QTest::newRow("biases") << "biases"
                            << "" << QVariant(true) << false; // zero biases: the same result
    QTest::newRow("re-initialise") << "reinitializeAll"
                                   << "" << QVariant() << true;
}

void TestControls::everyControlIsOneUndoableEdit()
{
    QFETCH(QString, name);
    QFETCH(QString, preparation);
    QFETCH(QVariant, value);
    QFETCH(bool, resultChanges);

    prepare(preparation);
    QWidget* control = find<QWidget>(name.toLatin1().constData());
    QVERIFY(control->isEnabled());
    QUndoStack* stack = m_document->undoStack();
    const int steps = stack->count();
    const Session before = m_document->session();
    const auto resultBefore = m_document->result();
    QVERIFY(resultBefore);
    const QString shownBefore = shownBy(control);

    operate(control, value);
    QCOMPARE(stack->count(), steps + 1);
    const Session after = m_document->session();
    QVERIFY(!sameValue(after, before));
    QCOMPARE(validate(after), std::string());
    const auto resultAfter = m_document->result();
    QVERIFY(resultAfter);
    QVERIFY(resultAfter != resultBefore); // recomputed
    QCOMPARE(!sameValue(*resultAfter, *resultBefore), resultChanges);
    const QString shownAfter = shownBy(control);
    if (!qobject_cast<QPushButton*>(control))
        QVERIFY(shownAfter != shownBefore);

    stack->undo();
    QCOMPARE(stack->count(), steps + 1); // syncing the controls pushed nothing
    QCOMPARE(stack->index(), steps);
    QVERIFY(sameValue(m_document->session(), before));
    QVERIFY(sameValue(*m_document->result(), *resultBefore));
    QCOMPARE(shownBy(control), shownBefore);

    stack->redo();
    QCOMPARE(stack->count(), steps + 1);
    QVERIFY(sameValue(m_document->session(), after));
    QVERIFY(sameValue(*m_document->result(), *resultAfter));
    QCOMPARE(shownBy(control), shownAfter);
}

void TestControls::dragsMergeIntoOneStep_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("preparation");
    QTest::addColumn<QVariantList>("values");

    QTest::newRow("temperature slider") << "temperatureSlider"
                                        << "" << QVariantList{10, 20, 30, 40, 50};
    QTest::newRow("temperature spin") << "temperatureSpin"
                                      << "" << QVariantList{1.5, 2.0, 2.5, 3.0};
    QTest::newRow("scale constant") << "scaleValue"
                                    << "constant" << QVariantList{2.0, 3.0, 4.0};
    QTest::newRow("alpha") << "alpha"
                           << "entmax" << QVariantList{1.6, 1.7, 1.8, 2.0};
    QTest::newRow("window") << "maskParameter"
                            << "sliding" << QVariantList{2, 3};
    QTest::newRow("prefix length") << "maskParameter"
                                   << "prefix" << QVariantList{1, 2, 3};
}

void TestControls::dragsMergeIntoOneStep()
{
    QFETCH(QString, name);
    QFETCH(QString, preparation);
    QFETCH(QVariantList, values);

    prepare(preparation);
    QWidget* control = find<QWidget>(name.toLatin1().constData());
    QUndoStack* stack = m_document->undoStack();
    const int steps = stack->count();
    const Session before = m_document->session();
    const QString shownBefore = shownBy(control);
    for (const QVariant& value : values)
        operate(control, value);
    QCOMPARE(stack->count(), steps + 1);
    const Session after = m_document->session();
    stack->undo();
    QVERIFY(sameValue(m_document->session(), before));
    QCOMPARE(shownBy(control), shownBefore);
    stack->redo();
    QVERIFY(sameValue(m_document->session(), after));
}

// Press, move, release; press, move, release: two undo steps, and two undos give back the first value.
void TestControls::twoDragsAreTwoSteps()
{
    auto* slider = find<QSlider>("temperatureSlider");
    QUndoStack* stack = m_document->undoStack();
    const int steps = stack->count();
    const double original = m_document->session().temperature;
    const auto drag = [slider](std::initializer_list<int> positions) {
        slider->setSliderDown(true); // emits sliderPressed, as a mouse press on the handle does
        for (int position : positions)
            slider->setValue(position);
        slider->setSliderDown(false);
    };
    drag({10, 20, 30});
    const double afterFirst = m_document->session().temperature;
    QCOMPARE(afterFirst, 2.0); // 10^0.3, as a person would type it
    drag({40, 50, 60});
    QCOMPARE(m_document->session().temperature, 3.98);
    QCOMPARE(stack->count(), steps + 2);
    stack->undo();
    QCOMPARE(m_document->session().temperature, afterFirst);
    QCOMPARE(slider->value(), 30);
    stack->undo();
    QCOMPARE(m_document->session().temperature, original);
    QCOMPARE(slider->value(), 0);
}

// A slider position gives a temperature a person would type (0.0162, not 0.016218), shown as such.
void TestControls::sliderTemperatureAsTyped()
{
    auto* slider = find<QSlider>("temperatureSlider");
    auto* spin = find<QDoubleSpinBox>("temperatureSpin");
    slider->setValue(-179); // 10^-1.79 = 0.0162181…
    QCOMPARE(m_document->session().temperature, 0.0162);
    QCOMPARE(spin->text(), spin->locale().toString(0.0162, 'g', 3));
    QCOMPARE(slider->value(), -179);
    for (int position = ControlsPanel::temperatureSliderMinimum + 1;
         position <= ControlsPanel::temperatureSliderMaximum; ++position) {
        slider->setValue(position);
        QCOMPARE(slider->value(), position); // the rounded value maps back to its own position
    }
}

void TestControls::typedTemperature_data()
{
    QTest::addColumn<QString>("typed");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<int>("sliderPosition");

    QTest::newRow("2.5") << "2.5" << 2.5 << 40;
    QTest::newRow("smallest") << "0.000001" << 1e-6 << ControlsPanel::temperatureSliderMinimum;
    QTest::newRow("largest") << "1000000" << 1e6 << ControlsPanel::temperatureSliderMaximum;
    QTest::newRow("0.05") << "0.05" << 0.05 << -130;
}

void TestControls::typedTemperature()
{
    QFETCH(QString, typed);
    QFETCH(double, temperature);
    QFETCH(int, sliderPosition);

    auto* spin = find<QDoubleSpinBox>("temperatureSpin");
    const int steps = m_document->undoStack()->count();
    spin->selectAll();
    QTest::keyClicks(spin, typed);
    QTest::keyClick(spin, Qt::Key_Return);
    QCOMPARE(m_document->session().temperature, temperature);
    QCOMPARE(m_document->undoStack()->count(), steps + 1); // the keystrokes merged into one step
    QCOMPARE(spin->text(), typed);
    QCOMPARE(find<QSlider>("temperatureSlider")->value(), sliderPosition);

    m_document->undoStack()->undo();
    QCOMPARE(m_document->session().temperature, 1.0);
    QCOMPARE(spin->text(), QStringLiteral("1"));
    QCOMPARE(find<QSlider>("temperatureSlider")->value(), 0);
}

void TestControls::enabledOnlyWhenMeaningful()
{
    QVERIFY(!find<QSpinBox>("maskParameter")->isEnabled());
    QVERIFY(!find<QDoubleSpinBox>("scaleValue")->isEnabled());
    QVERIFY(!find<QDoubleSpinBox>("alpha")->isEnabled());
    QVERIFY(!find<QDoubleSpinBox>("initScale")->isEnabled());

    find<QComboBox>("maskType")->setCurrentIndex(3);
    QVERIFY(find<QSpinBox>("maskParameter")->isEnabled());
    QCOMPARE(find<QSpinBox>("maskParameter")->minimum(), 1);
    // The sliding window starts at a width that shows something: 3 of the 3 tokens, not the identity.
    QCOMPARE(m_document->session().mask.window, Index(3));
    QCOMPARE(find<QSpinBox>("maskParameter")->value(), 3);
    find<QComboBox>("maskType")->setCurrentIndex(2);
    QVERIFY(find<QSpinBox>("maskParameter")->isEnabled());
    QCOMPARE(find<QSpinBox>("maskParameter")->minimum(), 0);
    find<QComboBox>("scaleKind")->setCurrentIndex(2);
    QVERIFY(find<QDoubleSpinBox>("scaleValue")->isEnabled());
    find<QComboBox>("normalizer")->setCurrentIndex(2);
    QVERIFY(find<QDoubleSpinBox>("alpha")->isEnabled());
    find<QComboBox>("initializer")->setCurrentIndex(3);
    QVERIFY(find<QDoubleSpinBox>("initScale")->isEnabled());

    m_document->undoStack()->undo(); // the normalizer
    QVERIFY(!find<QDoubleSpinBox>("alpha")->isEnabled());
}

void TestControls::scoreCreatesParametersAndResetsScale()
{
    find<QComboBox>("scaleKind")->setCurrentIndex(2); // constant
    const int steps = m_document->undoStack()->count();
    find<QComboBox>("score")->setCurrentIndex(2); // additive
    QCOMPARE(m_document->undoStack()->count(), steps + 1);
    const Session& s = m_document->session();
    QCOMPARE(s.score, ScoreFunction::Additive);
    QVERIFY(s.scale == defaultScale(ScoreFunction::Additive));
    QCOMPARE(s.heads[0].W_a.rows(), s.dK());
    QCOMPARE(s.heads[0].U_a.rows(), s.dK());
    QCOMPARE(s.heads[0].v_a.size(), s.heads[0].W_a.cols());
    QCOMPARE(find<QComboBox>("scaleKind")->currentIndex(), 1);
    QVERIFY(!find<QComboBox>("score")->toolTip().isEmpty());

    m_document->undoStack()->undo();
    QCOMPARE(m_document->session().heads[0].W_a.size(), Index(0));
    QCOMPARE(m_document->session().scale.kind, Scale::Kind::Constant);
    QCOMPARE(find<QComboBox>("scaleKind")->currentIndex(), 2);
}

void TestControls::headIsViewState()
{
    auto* head = find<QSpinBox>("head");
    QCOMPARE(head->maximum(), 1);
    find<QSpinBox>("heads")->setValue(3);
    QCOMPARE(head->minimum(), 1);
    QCOMPARE(head->maximum(), 3);
    QVERIFY(head->isEnabled());
    const int steps = m_document->undoStack()->count();
    QSignalSpy spy(m_document.get(), &Document::currentHeadChanged);
    head->setValue(3);
    QCOMPARE(m_document->currentHead(), 2);
    QCOMPARE(spy.count(), 1);
    QCOMPARE(m_document->undoStack()->count(), steps);

    m_document->setCurrentHead(1);
    QCOMPARE(head->value(), 2);
    m_document->undoStack()->undo(); // back to one head
    QCOMPARE(m_document->currentHead(), 0);
    QCOMPARE(head->value(), 1);
    QCOMPARE(head->maximum(), 1);
}

// Heads with the same W_K and W_V (grouped-query attention) are named under the head box, for the head shown.
void TestControls::sharedKeysAndValuesAreNamed()
{
    auto* label = find<QLabel>("sharedHeads");
    QVERIFY(label->isHidden()); // one head
    find<QSpinBox>("heads")->setValue(3);
    QVERIFY(label->isHidden()); // three heads, each its own weights
    pushEdit(m_document.get(), QStringLiteral("group"), Document::Values, [](Session& s) {
        s.heads[2].W_K = s.heads[0].W_K;
        s.heads[2].W_V = s.heads[0].W_V;
    });
    QVERIFY(!label->isHidden());
    QVERIFY2(label->text().contains(QStringLiteral("head(s) 3 ")), qPrintable(label->text()));
    find<QSpinBox>("head")->setValue(2);
    QVERIFY(label->isHidden());
    find<QSpinBox>("head")->setValue(3);
    QVERIFY2(label->text().contains(QStringLiteral("head(s) 1 ")), qPrintable(label->text()));
    m_document->undoStack()->undo();
    QVERIFY(label->isHidden());
}

void TestControls::precisionFromTheKeyboard()
{
    auto* precision = find<QComboBox>("precision");
    QCOMPARE(precision->currentText(), QStringLiteral("float64 (exact)"));
    QVERIFY(precision->toolTip().contains(QLatin1String("float32")));
    m_window->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));

    // Reached with Tab from the normalizer (α is disabled for softmax) and with its label's Alt+P.
    auto* normalizer = find<QComboBox>("normalizer");
    normalizer->setFocus(Qt::OtherFocusReason);
    QTest::keyClick(normalizer, Qt::Key_Tab);
    QCOMPARE(QApplication::focusWidget(), precision);
    find<QComboBox>("score")->setFocus(Qt::OtherFocusReason);
    QTest::keyClick(m_window.get(), Qt::Key_P, Qt::AltModifier);
    QCOMPARE(QApplication::focusWidget(), precision);

    QUndoStack* stack = m_document->undoStack();
    const int steps = stack->count();
    QTest::keyClick(precision, Qt::Key_Down);
    QCOMPARE(stack->count(), steps + 1);
    QCOMPARE(stack->undoText(), QStringLiteral("Precision: float32 (as models run)"));
    QCOMPARE(m_document->session().precision, Precision::Float32);
    QVERIFY(m_document->result());
    QCOMPARE(m_document->result()->precision, Precision::Float32);
    QCOMPARE(precision->currentText(), QStringLiteral("float32 (as models run)"));

    stack->undo();
    QCOMPARE(m_document->session().precision, Precision::Float64);
    QCOMPARE(m_document->result()->precision, Precision::Float64);
    QCOMPARE(precision->currentText(), QStringLiteral("float64 (exact)"));
    QCOMPARE(stack->count(), steps + 1); // following the undo pushed nothing

    // A session opened in float32 shows it.
    Session opened = m_document->session();
    opened.precision = Precision::Float32;
    m_document->reset(opened);
    QCOMPARE(precision->currentText(), QStringLiteral("float32 (as models run)"));
    QCOMPARE(m_document->result()->precision, Precision::Float32);
}

void TestControls::everyControlHasATooltip()
{
    for (const char* name : {"attentionKind",
                             "maskType",
                             "maskParameter",
                             "scaleKind",
                             "scaleValue",
                             "temperatureSlider",
                             "temperatureSpin",
                             "normalizer",
                             "alpha",
                             "precision",
                             "score",
                             "head",
                             "dModel",
                             "dK",
                             "dV",
                             "heads",
                             "outputProjection",
                             "dOut",
                             "initializer",
                             "initScale",
                             "initSeed",
                             "reinitializeAll"})
        QVERIFY2(!find<QWidget>(name)->toolTip().isEmpty(), name);
    QVERIFY(find<QWidget>("controlsPanel"));
    QVERIFY(find<QWidget>("shapePanel"));
}

void TestControls::dimensionsUpAndDown_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("up");
    QTest::addColumn<int>("down");

    QTest::newRow("d_model") << "dModel" << 7 << 1;
    QTest::newRow("d_k") << "dK" << 6 << 1;
    QTest::newRow("d_v") << "dV" << 5 << 1;
    QTest::newRow("heads") << "heads" << 4 << 1;
}

void TestControls::dimensionsUpAndDown()
{
    QFETCH(QString, name);
    QFETCH(int, up);
    QFETCH(int, down);

    // With the parameters of every score function and W_O, so every matrix has to follow.
    pushEdit(m_document.get(), QStringLiteral("prepare"), Document::Shape, [](Session& s) {
        s.score = ScoreFunction::Additive;
        ensureScoreParameters(s, InitializerSpec());
        s.score = ScoreFunction::General;
        ensureScoreParameters(s, InitializerSpec());
        s.W_O = Matrix::Ones(3, 2);
    });
    const Session before = m_document->session();
    auto* box = find<QSpinBox>(name.toLatin1().constData());
    const int original = box->value();
    for (const int value : {up, down}) {
        box->setValue(value);
        const Session& s = m_document->session();
        QCOMPARE(validate(s), std::string());
        const auto result = m_document->result();
        QVERIFY(result);
        if (name == QLatin1String("dModel"))
            QCOMPARE(s.dModel(), Index(value));
        else if (name == QLatin1String("dK"))
            QCOMPARE(result->heads[0].Q.cols(), Index(value));
        else if (name == QLatin1String("dV"))
            QCOMPARE(result->heads[0].output.cols(), Index(value));
        else
            QCOMPARE(int(result->heads.size()), value);
        QCOMPARE(result->concat.cols(), Index(s.headCount()) * s.dV());
        QCOMPARE(result->output.cols(), Index(2));
        QCOMPARE(box->value(), value);
    }
    m_document->undoStack()->undo();
    m_document->undoStack()->undo();
    QVERIFY(sameValue(m_document->session(), before));
    QCOMPARE(box->value(), original);
}

void TestControls::threeHeadsWithOutputProjection()
{
    find<QCheckBox>("outputProjection")->setChecked(true);
    QCOMPARE(m_document->session().W_O->rows(), Index(3));
    QCOMPARE(m_document->session().W_O->cols(), m_document->session().dModel());
    find<QSpinBox>("heads")->setValue(3);
    const Session& s = m_document->session();
    QCOMPARE(validate(s), std::string());
    QCOMPARE(s.headCount(), 3);
    QCOMPARE(s.W_O->rows(), Index(9));
    const auto result = m_document->result();
    QVERIFY(result);
    QCOMPARE(result->heads.size(), std::size_t(3));
    QCOMPARE(result->concat.cols(), Index(9));
    QCOMPARE(result->output.cols(), s.dModel());
    QVERIFY(!sameValue(result->heads[1].weights, result->heads[2].weights)); // the new heads differ

    find<QCheckBox>("outputProjection")->setChecked(false);
    QVERIFY(!m_document->session().W_O);
    QVERIFY(sameValue(m_document->result()->output, m_document->result()->concat));
    m_document->undoStack()->undo();
    QVERIFY(find<QCheckBox>("outputProjection")->isChecked());
}

// d_out: d_model when W_O is switched on, enabled only with W_O, each change one step keeping W_O's left
// block.
void TestControls::outputWidthDOut()
{
    auto* dOut = find<QSpinBox>("dOut");
    const Index dModel = m_document->session().dModel();
    QVERIFY(!dOut->isEnabled());
    QCOMPARE(dOut->value(), int(dModel));
    find<QCheckBox>("outputProjection")->setChecked(true);
    QVERIFY(dOut->isEnabled());
    QCOMPARE(m_document->session().W_O->cols(), dModel);
    const Session before = m_document->session();
    const int steps = m_document->undoStack()->count();

    dOut->setValue(2);
    QCOMPARE(m_document->undoStack()->count(), steps + 1);
    const Session& s = m_document->session();
    QCOMPARE(s.W_O->rows(), before.W_O->rows());
    QCOMPARE(s.W_O->cols(), Index(2));
    QVERIFY(sameValue(Matrix(s.W_O->leftCols(2)), Matrix(before.W_O->leftCols(2))));
    QCOMPARE(validate(s), std::string());
    QVERIFY(m_document->result());
    QCOMPARE(m_document->result()->output.cols(), Index(2));

    m_document->undoStack()->undo();
    QVERIFY(sameValue(m_document->session(), before));
    QCOMPARE(dOut->value(), int(dModel));
    find<QCheckBox>("outputProjection")->setChecked(false);
    QVERIFY(!dOut->isEnabled());
}

void TestControls::reinitializeAll()
{
    find<QComboBox>("score")->setCurrentIndex(1); // general: W_S
    find<QCheckBox>("outputProjection")->setChecked(true);
    find<QSpinBox>("heads")->setValue(2);
    const Session before = m_document->session();
    const int steps = m_document->undoStack()->count();
    find<QPushButton>("reinitializeAll")->click();
    QCOMPARE(m_document->undoStack()->count(), steps + 1);
    const Session after = m_document->session();
    QCOMPARE(validate(after), std::string());
    QVERIFY(sameValue(after.X, before.X)); // embeddings are not weights
    for (int h = 0; h < 2; ++h) {
        const Head& a = after.heads[static_cast<std::size_t>(h)];
        const Head& b = before.heads[static_cast<std::size_t>(h)];
        QVERIFY(!sameValue(a.W_Q, b.W_Q) && !sameValue(a.W_K, b.W_K) && !sameValue(a.W_V, b.W_V) &&
                !sameValue(a.W_S, b.W_S));
        QCOMPARE(a.W_Q.rows(), b.W_Q.rows());
        QCOMPARE(a.W_S.cols(), b.W_S.cols());
        QVERIFY(!sameValue(a.W_Q, a.W_K)); // a seed of its own for every matrix
    }
    QVERIFY(!sameValue(after.heads[0].W_Q, after.heads[1].W_Q));
    QVERIFY(!sameValue(*after.W_O, *before.W_O));

    m_document->undoStack()->undo();
    QVERIFY(sameValue(m_document->session(), before));
    m_document->undoStack()->redo();
    QVERIFY(sameValue(m_document->session(), after));
}

void TestControls::initializerSeedIsReproducible()
{
    const int steps = m_document->undoStack()->count();
    find<QComboBox>("initializer")->setCurrentIndex(3); // Normal × scale
    find<QDoubleSpinBox>("initScale")->setValue(0.5);
    find<QSpinBox>("initSeed")->setValue(7);
    QCOMPARE(m_document->undoStack()->count(), steps); // a preference, not an edit
    QCOMPARE(m_document->initializer().kind, Initializer::Normal);
    QCOMPARE(m_document->initializer().scale, 0.5);
    QCOMPARE(m_document->initializer().seed, std::uint64_t(7));

    auto* reinitialize = find<QPushButton>("reinitializeAll");
    reinitialize->click();
    const Session seven = m_document->session();
    m_document->undoStack()->undo();
    reinitialize->click();
    QVERIFY(sameValue(m_document->session(), seven));
    m_document->undoStack()->undo();
    find<QSpinBox>("initSeed")->setValue(8);
    reinitialize->click();
    QVERIFY(!sameValue(m_document->session(), seven));
    m_document->undoStack()->undo();
    find<QSpinBox>("initSeed")->setValue(7);
    reinitialize->click();
    QVERIFY(sameValue(m_document->session(), seven));
}

void TestControls::numpyInitializerDrawsTheArticlesStream()
{
    // "NumPy legacy" with seed 42 and scale 0.5: re-initialising is np.random.seed(42); W_q = randn(d, dk) *
    // 0.5; W_k = ...; W_v = ... for each head, one undo step; re-drawing X is np.random.seed(42); X =
    // randn(n, d) * 0.5.
    auto* initializer = find<QComboBox>("initializer");
    initializer->setCurrentIndex(initializer->findData(static_cast<int>(Initializer::NumpyLegacy)));
    QVERIFY(initializer->currentIndex() >= 0);
    QVERIFY(find<QDoubleSpinBox>("initScale")->isEnabled());
    find<QDoubleSpinBox>("initScale")->setValue(0.5);
    find<QSpinBox>("initSeed")->setValue(42);
    QCOMPARE(m_document->initializer().kind, Initializer::NumpyLegacy);

    const Session before = m_document->session();
    const int steps = m_document->undoStack()->count();
    find<QPushButton>("reinitializeAll")->click();
    QCOMPARE(m_document->undoStack()->count(), steps + 1);
    const Session& s = m_document->session();
    NumpyRandom random(42);
    for (const Head& head : s.heads) {
        QVERIFY(sameValue(head.W_Q, Matrix(random.randn(s.dModel(), s.dK()) * 0.5)));
        QVERIFY(sameValue(head.W_K, Matrix(random.randn(s.dModel(), s.dK()) * 0.5)));
        QVERIFY(sameValue(head.W_V, Matrix(random.randn(s.dModel(), s.dV()) * 0.5)));
    }
    QVERIFY(sameValue(s.X, before.X));

    const Session weightsDrawn = m_document->session();
    find<QPushButton>("reinitializeEmbeddings")->click();
    QCOMPARE(m_document->undoStack()->count(), steps + 2);
    QVERIFY(
        sameValue(m_document->session().X, Matrix(NumpyRandom(42).randn(before.n(), before.dModel()) * 0.5)));
    QVERIFY(m_document->session().heads == weightsDrawn.heads);
    m_document->undoStack()->undo();
    QVERIFY(sameValue(m_document->session(), weightsDrawn));
    m_document->undoStack()->undo();
    QVERIFY(sameValue(m_document->session(), before));
}

QKV_TEST_MAIN(TestControls)
#include "tst_controls.moc"
