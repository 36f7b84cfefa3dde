// SPDX-License-Identifier: GPL-3.0-or-later
// One matrix in and out: delimited text (CSV, spreadsheet pastes) and NumPy .npy, as text and as files.

#include "DelimitedText.h"
#include "Error.h"
#include "ErrorMessage.h"
#include "MatrixFile.h"
#include "NpyFile.h"
#include "TestMain.h"

#include <QtTest>

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace qkv;
using qkv::test::errorOf;

Q_DECLARE_METATYPE(qkv::Matrix)

namespace {

Matrix rows(std::initializer_list<std::initializer_list<double>> values)
{
    Matrix m(static_cast<Index>(values.size()), static_cast<Index>(values.begin()->size()));
    Index r = 0;
    for (const auto& row : values) {
        Index c = 0;
        for (double v : row)
            m(r, c++) = v;
        ++r;
    }
    return m;
}

/// Random finite doubles from random bit patterns: every exponent, subnormals and both zeros included.
Matrix randomBits(Index r, Index c, std::uint64_t seed)
{
    std::mt19937_64 random(seed);
    Matrix m(r, c);
    for (Index i = 0; i < m.size(); ++i) {
        double value = std::numeric_limits<double>::quiet_NaN();
        while (!std::isfinite(value)) {
            const std::uint64_t bits = random();
            std::memcpy(&value, &bits, sizeof value);
        }
        m.data()[i] = value;
    }
    return m;
}

/// Random doubles of ordinary size, as a person's data looks.
Matrix randomNormal(Index r, Index c, std::uint64_t seed)
{
    std::mt19937_64 random(seed);
    std::normal_distribution<double> normal;
    Matrix m(r, c);
    for (Index i = 0; i < m.size(); ++i)
        m.data()[i] = normal(random);
    return m;
}

Matrix extremes()
{
    const double tiny = std::numeric_limits<double>::denorm_min();
    const double big = std::numeric_limits<double>::max();
    const double smallest = std::numeric_limits<double>::min();
    return rows({{1e-300, -0.0, 1e300, 0.1},
                 {-1e-300, tiny, -big, 1.0 / 3.0},
                 {smallest, 0.0, 123456789012345678.0, -2.5e-8}});
}

/// Same shape and the same bits in every entry (so −0.0 stays −0.0).
bool sameBits(const Matrix& a, const Matrix& b)
{
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), static_cast<std::size_t>(a.size()) * sizeof(double)) == 0;
}

QByteArray describe(const Matrix& m)
{
    return QByteArray::fromStdString(std::to_string(m.rows()) + "×" + std::to_string(m.cols()) + ":\n" +
                                     formatDelimited(m, ' '));
}

std::string str(const QByteArray& bytes)
{
    return bytes.toStdString();
}

// ---- .npy byte strings built by hand

QByteArray littleEndian(std::uint64_t value, int bytes)
{
    QByteArray out;
    for (int i = 0; i < bytes; ++i, value >>= 8)
        out += char(value & 0xFF);
    return out;
}

QByteArray f8(std::initializer_list<double> values)
{
    QByteArray out;
    for (double v : values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        out += littleEndian(bits, 8);
    }
    return out;
}

QByteArray f4(std::initializer_list<float> values)
{
    QByteArray out;
    for (float v : values) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        out += littleEndian(bits, 4);
    }
    return out;
}

/// A .npy file: magic, version, header length (2 bytes for 1.0, 4 for 2.0 and 3.0), the header padded
/// with spaces and a '\n' to a multiple of `align`, then the body.
QByteArray npy(const char* dictionary, const QByteArray& body, int major = 1, int minor = 0, int align = 64)
{
    QByteArray header(dictionary);
    const int lengthSize = major == 1 ? 2 : 4;
    const int used = 8 + lengthSize + int(header.size()) + 1;
    header += QByteArray((align - used % align) % align, ' ');
    header += '\n';
    QByteArray out("\x93NUMPY", 6);
    out += char(major);
    out += char(minor);
    out += littleEndian(std::uint64_t(header.size()), lengthSize);
    return out + header + body;
}

// np.array([[1, 2, 3], [4, 5, -0.5]], dtype='<f4') as an older NumPy writes it (16-byte alignment),
// written out byte by byte so that it does not depend on the helpers above.
const char numpyF4Literal[] = "\x93NUMPY\x01\x00"
                              "F\x00"
                              "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n"
                              "\x00\x00\x80?"
                              "\x00\x00\x00@"
                              "\x00\x00@@"
                              "\x00\x00\x80@"
                              "\x00\x00\xa0@"
                              "\x00\x00\x00\xbf";

constexpr const char* f8Header23 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";

} // namespace

class TestMatrixIO : public QObject {
    Q_OBJECT
private slots:
    void csvRoundTrip_data();
    void csvRoundTrip();
    void csvInput_data();
    void csvInput();
    void csvRefused_data();
    void csvRefused();
    void csvLimits();
    void csvFormat();

    void npyRoundTrip_data();
    void npyRoundTrip();
    void npyHeaderLayout();
    void npyInput_data();
    void npyInput();
    void npyRefused_data();
    void npyRefused();

    void files_data();
    void files();
    void fileKeepsPermissions();
    void fileErrors();
};

// ---------------------------------------------------------------------------------------------------------
// Delimited text

void TestMatrixIO::csvRoundTrip_data()
{
    QTest::addColumn<Matrix>("matrix");
    QTest::addColumn<char>("separator");
    for (char separator : {',', '\t', ';'}) {
        const QByteArray name = separator == '\t' ? "tab" : QByteArray(1, separator);
        QTest::addRow("extremes %s", name.constData()) << extremes() << separator;
        QTest::addRow("random bits %s", name.constData()) << randomBits(7, 5, 1) << separator;
        QTest::addRow("random normal %s", name.constData()) << randomNormal(16, 9, 2) << separator;
        QTest::addRow("1x1 %s", name.constData()) << rows({{-0.0}}) << separator;
        QTest::addRow("column %s", name.constData()) << randomNormal(5, 1, 3) << separator;
        QTest::addRow("row %s", name.constData()) << randomBits(1, 40, 4) << separator;
    }
}

void TestMatrixIO::csvRoundTrip()
{
    QFETCH(Matrix, matrix);
    QFETCH(char, separator);
    const std::string text = formatDelimited(matrix, separator);
    const Matrix back = parseDelimited(text);
    QVERIFY2(back == matrix, describe(back).constData()); // equal values
    QVERIFY(sameBits(back, matrix));                      // and equal bits: −0.0 stays negative
}

void TestMatrixIO::csvInput_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<Matrix>("expected");
    const Matrix m23 = rows({{1, 2, 3}, {4, 5, 6}});
    QTest::newRow("comma") << QByteArray("1,2,3\n4,5,6") << m23;
    QTest::newRow("spreadsheet paste (tabs)") << QByteArray("1\t2\t3\n4\t5\t6\n") << m23;
    QTest::newRow("semicolon") << QByteArray("1;2;3\n4;5;6\n") << m23;
    QTest::newRow("CRLF and trailing blank lines") << QByteArray("1,2,3\r\n4,5,6\r\n\r\n  \r\n") << m23;
    QTest::newRow("lone CR") << QByteArray("1,2,3\r4,5,6\r") << m23;
    QTest::newRow("surrounding spaces") << QByteArray(" 1 ,2,  3\n4 , 5 ,6   \n") << m23;
    QTest::newRow("spaces around tabs") << QByteArray("1 \t 2\t3\n 4\t5 \t6") << m23;
    QTest::newRow("semicolon with spaces") << QByteArray("1 ;  2; 3\n4;5;6") << m23;
    QTest::newRow("byte order mark") << QByteArray("\xEF\xBB\xBF"
                                                   "1,2,3\n4,5,6\n")
                                     << m23;
    QTest::newRow("leading blank lines") << QByteArray("\n   \n1,2,3\n4,5,6") << m23;
    QTest::newRow("blank tab-only trailing line") << QByteArray("1\t2\t3\n4\t5\t6\n\t\t\n") << m23;
    QTest::newRow("number forms") << QByteArray("+1,.5,-2.5e-3,1E3,5.,-0")
                                  << rows({{1, 0.5, -2.5e-3, 1000, 5, -0.0}});
    QTest::newRow("single value") << QByteArray("42") << rows({{42}});
    QTest::newRow("single column") << QByteArray("1\n2\n3\n") << rows({{1}, {2}, {3}});
    QTest::newRow("subnormal and huge")
        << QByteArray("4.9406564584124654e-324,1.7976931348623157e308")
        << rows({{std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()}});
}

void TestMatrixIO::csvInput()
{
    QFETCH(QByteArray, text);
    QFETCH(Matrix, expected);
    Matrix m;
    try {
        m = parseDelimited(str(text));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QVERIFY2(sameBits(m, expected), describe(m).constData());
}

void TestMatrixIO::csvRefused_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message"); // what the message must contain
    QTest::newRow("ragged, short") << QByteArray("1,2,3\n4,5\n")
                                   << "line 2, column 3: 2 values on this line, but 3 on line 1";
    QTest::newRow("ragged, long") << QByteArray("1,2\n3,4,5\n") << "line 2, column 3: 3 values on this line";
    QTest::newRow("ragged, trailing separator") << QByteArray("1,2\n3,4,\n") << "ends with a separator";
    QTest::newRow("ragged, tabs") << QByteArray("1\t2\n3\n") << "line 2, column 2";
    QTest::newRow("not a number") << QByteArray("1,2\n3,abc\n")
                                  << "line 2, column 2: \"abc\" is not a number";
    QTest::newRow("header row") << QByteArray("x,y\n1,2\n") << "line 1, column 1: \"x\" is not a number";
    QTest::newRow("nan") << QByteArray("1,nan\n") << "line 1, column 2: \"nan\" is not a finite number";
    QTest::newRow("NaN") << QByteArray("1,2\n3,NaN") << "line 2, column 2";
    QTest::newRow("inf") << QByteArray("inf,1") << "line 1, column 1: \"inf\" is not a finite number";
    QTest::newRow("-inf, tabs") << QByteArray("1\t2\n3\t-inf")
                                << "line 2, column 2: \"-inf\" is not a finite";
    QTest::newRow("infinity") << QByteArray("1;infinity") << "line 1, column 2";
    QTest::newRow("empty value") << QByteArray("1,,2") << "line 1, column 2: empty value";
    QTest::newRow("blank line inside") << QByteArray("1,2\n\n3,4") << "line 2, column 1: blank line";
    QTest::newRow("out of range") << QByteArray("1,1e400")
                                  << "line 1, column 2: \"1e400\" is out of the range";
    QTest::newRow("empty text") << QByteArray("") << "line 1, column 1: no numbers";
    QTest::newRow("blank text") << QByteArray("  \n\t\n\r\n") << "no numbers";
    QTest::newRow("decimal comma") << QByteArray("1,5;2,5")
                                   << "line 1, column 1: \"1,5\" is not a number (write "
                                      "the decimal point as '.')";
    QTest::newRow("hexadecimal") << QByteArray("0x10") << "line 1, column 1: \"0x10\" is not a number";
    QTest::newRow("two signs") << QByteArray("+-1") << "is not a number";
    QTest::newRow("number and text") << QByteArray("1.5abc") << "\"1.5abc\" is not a number";
    QTest::newRow("inner space") << QByteArray("1 2,3") << "line 1, column 1";
    QTest::newRow("CRLF line numbers") << QByteArray("1,2\r\n3,x\r\n") << "line 2, column 2";
    QTest::newRow("lone CR line numbers") << QByteArray("1,2\r3,x") << "line 2, column 2";
    QTest::newRow("leading blank lines counted") << QByteArray("\n\n1,2\n3,y") << "line 4, column 2";
}

void TestMatrixIO::csvRefused()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    const QString error = errorOf([&] { parseDelimited(str(text)); });
    QVERIFY2(error.contains(message), qPrintable(error));
}

void TestMatrixIO::csvLimits()
{
    std::string wide;
    for (int i = 0; i < 4096; ++i)
        wide += i ? ",1" : "1";
    QCOMPARE(parseDelimited(wide).cols(), Index(4096));
    QString error = errorOf([&] { parseDelimited(wide + ",1"); });
    QVERIFY2(error.contains(QStringLiteral("line 1, column 4097: more than 4096 values")), qPrintable(error));

    std::string tall;
    for (int i = 0; i < 4096; ++i)
        tall += "2\n";
    QCOMPARE(parseDelimited(tall).rows(), Index(4096));
    error = errorOf([&] { parseDelimited(tall + "2\n"); });
    QVERIFY2(error.contains(QStringLiteral("line 4097, column 1: more than 4096 rows")), qPrintable(error));
}

void TestMatrixIO::csvFormat()
{
    QCOMPARE(QByteArray::fromStdString(formatDelimited(rows({{1, 0.1, -0.0}, {1e-300, 1e300, 2.5}}))),
             QByteArray("1,0.1,-0\n1e-300,1e+300,2.5\n"));
    QCOMPARE(QByteArray::fromStdString(formatDelimited(rows({{1, 2}, {3, 4}}), '\t')),
             QByteArray("1\t2\n3\t4\n"));
}

// ---------------------------------------------------------------------------------------------------------
// NumPy .npy

void TestMatrixIO::npyRoundTrip_data()
{
    QTest::addColumn<Matrix>("matrix");
    QTest::newRow("extremes") << extremes();
    QTest::newRow("random bits") << randomBits(9, 13, 5);
    QTest::newRow("random normal") << randomNormal(33, 7, 6);
    QTest::newRow("1x1") << rows({{-0.0}});
    QTest::newRow("1x4096") << randomNormal(1, 4096, 7);
    QTest::newRow("1000x1") << randomNormal(1000, 1, 8);
}

void TestMatrixIO::npyRoundTrip()
{
    QFETCH(Matrix, matrix);
    const std::string bytes = formatNpy(matrix);
    const Matrix back = parseNpy(bytes);
    QVERIFY2(back == matrix, describe(back).constData());
    QVERIFY(sameBits(back, matrix));
}

void TestMatrixIO::npyHeaderLayout()
{
    for (const Matrix& m : {rows({{1}}), randomNormal(3, 4, 9), randomNormal(100, 4096, 10)}) {
        const QByteArray bytes = QByteArray::fromStdString(formatNpy(m));
        QVERIFY(bytes.startsWith(QByteArray("\x93NUMPY\x01\x00", 8)));
        const int headerLength =
            int(static_cast<unsigned char>(bytes[8])) | int(static_cast<unsigned char>(bytes[9])) << 8;
        QCOMPARE((10 + headerLength) % 64, 0);
        QCOMPARE(bytes[10 + headerLength - 1], '\n');
        const QByteArray header = bytes.mid(10, headerLength);
        const QByteArray dictionary = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                                      QByteArray::number(qlonglong(m.rows())) + ", " +
                                      QByteArray::number(qlonglong(m.cols())) + "), }";
        QVERIFY2(header.startsWith(dictionary), header.constData());
        QCOMPARE(header.mid(dictionary.size()).trimmed(), QByteArray()); // spaces, then '\n'
        QCOMPARE(bytes.size() - 10 - headerLength, qsizetype(m.size() * 8));
    }
    // The data is little-endian float64 in C order.
    const QByteArray bytes = QByteArray::fromStdString(formatNpy(rows({{1, 2}, {3, -0.5}})));
    QCOMPARE(bytes.right(32), f8({1, 2, 3, -0.5}));
    QCOMPARE(bytes.size(), 128 + 32);
}

void TestMatrixIO::npyInput_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<Matrix>("expected");
    const Matrix m23 = rows({{1, 2, 3}, {4, 5, 6}});
    QTest::newRow("NumPy-style '<f4' literal")
        << QByteArray(numpyF4Literal, sizeof numpyF4Literal - 1) << rows({{1, 2, 3}, {4, 5, -0.5}});
    QTest::newRow("<f8 C order") << npy(f8Header23, f8({1, 2, 3, 4, 5, 6})) << m23;
    QTest::newRow("<f4 C order") << npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                        f4({0.1f, 2, 3, 4, 5, -1e-30f}))
                                 << rows({{double(0.1f), 2, 3}, {4, 5, double(-1e-30f)}});
    QTest::newRow("<f8 Fortran order (2, 3)")
        << npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f8({1, 4, 2, 5, 3, 6})) << m23;
    QTest::newRow("<f8 Fortran order (3, 2)")
        << npy("{'descr': '<f8', 'fortran_order': True, 'shape': (3, 2), }", f8({1, 2, 3, 4, 5, 6}))
        << rows({{1, 4}, {2, 5}, {3, 6}});
    QTest::newRow("<f4 Fortran order")
        << npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f4({1, 3, 2, 4}))
        << rows({{1, 2}, {3, 4}});
    QTest::newRow("version 2.0") << npy(f8Header23, f8({1, 2, 3, 4, 5, 6}), 2) << m23;
    QTest::newRow("version 3.0") << npy(f8Header23, f8({1, 2, 3, 4, 5, 6}), 3) << m23;
    QTest::newRow("1-D shape") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }",
                                      f8({1, -2, 3, 1e-300}))
                               << rows({{1, -2, 3, 1e-300}});
    QTest::newRow("1-D shape, Fortran order")
        << npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", f4({7, 8, 9}))
        << rows({{7, 8, 9}});
    QTest::newRow("1x1") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }", f8({-0.0}))
                         << rows({{-0.0}});
    QTest::newRow("other key order, double quotes, no trailing comma")
        << npy("{\"shape\": (2, 3), \"fortran_order\": False, \"descr\": \"<f8\"}", f8({1, 2, 3, 4, 5, 6}))
        << m23;
    QTest::newRow("compact header") << npy("{'descr':'<f8','fortran_order':False,'shape':(2,3)}",
                                           f8({1, 2, 3, 4, 5, 6}))
                                    << m23;
    QTest::newRow("Python 2 longs") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }",
                                           f8({1, 2, 3, 4, 5, 6}))
                                    << m23;
    QTest::newRow("16-byte alignment") << npy(f8Header23, f8({1, 2, 3, 4, 5, 6}), 1, 0, 16) << m23;
    QTest::newRow("no padding") << npy(f8Header23, f8({1, 2, 3, 4, 5, 6}), 1, 0, 1) << m23;
}

void TestMatrixIO::npyInput()
{
    QFETCH(QByteArray, bytes);
    QFETCH(Matrix, expected);
    Matrix m;
    try {
        m = parseNpy(str(bytes));
    } catch (const Error& e) {
        QFAIL(e.what());
    }
    QVERIFY2(sameBits(m, expected), describe(m).constData());
}

void TestMatrixIO::npyRefused_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message"); // what the message must contain
    const QByteArray body6 = f8({1, 2, 3, 4, 5, 6});
    const QByteArray good = npy(f8Header23, body6);
    QByteArray wrongMagic = good;
    wrongMagic[5] = 'Z';
    QTest::newRow("wrong magic") << wrongMagic << "not a NumPy .npy file";
    QTest::newRow("empty") << QByteArray() << "not a NumPy .npy file";
    QTest::newRow("zip (.npz)") << QByteArray("PK\x03\x04\x14\x00\x00\x00", 8) << "not a NumPy .npy file";
    QTest::newRow("CSV text") << QByteArray("1,2,3\n") << "not a NumPy .npy file";
    QTest::newRow("magic only") << QByteArray("\x93NUMPY", 6) << "the format version is missing";
    QTest::newRow("no header length")
        << QByteArray("\x93NUMPY\x01\x00\x10", 9) << "the header length is missing";
    QTest::newRow("version 4.0") << npy(f8Header23, body6, 4) << "unsupported .npy format version 4.0";
    QTest::newRow("version 1.1") << npy(f8Header23, body6, 1, 1) << "unsupported .npy format version 1.1";
    QTest::newRow("version 0.0") << npy(f8Header23, body6, 0) << "unsupported .npy format version 0.0";
    QTest::newRow("header longer than the file")
        << good.left(40) << "the header is 118 bytes long, but only 30";

    QTest::newRow(">f8") << npy("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }", body6)
                         << "big-endian float64 ('>f8') is not supported";
    QTest::newRow(">f4") << npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", body6.left(24))
                         << "big-endian float32 ('>f4')";
    QTest::newRow("<i8") << npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", body6)
                         << "unsupported data type '<i8' (signed integers)";
    QTest::newRow("<u2") << npy("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }", body6.left(12))
                         << "'<u2' (unsigned integers)";
    QTest::newRow("|b1") << npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", body6.left(6))
                         << "unsupported data type '|b1' (booleans)";
    QTest::newRow("<c16") << npy("{'descr': '<c16', 'fortran_order': False, 'shape': (2, 3), }",
                                 body6 + body6)
                          << "'<c16' (complex numbers)";
    QTest::newRow("|O") << npy("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3), }", body6)
                        << "'|O' (Python objects)";
    QTest::newRow("<f2") << npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", body6.left(12))
                         << "'<f2' (floating point of another size)";
    QTest::newRow("<U3") << npy("{'descr': '<U3', 'fortran_order': False, 'shape': (2, 3), }", body6)
                         << "'<U3' (Unicode strings)";
    QTest::newRow("structured")
        << npy("{'descr': [('x', '<f8'), ('y', '<f8')], 'fortran_order': False, 'shape': (3,), }", body6)
        << "structured records";

    QTest::newRow("header without '}'")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), ", body6) << "does not parse";
    QTest::newRow("header garbage") << npy("hello", body6)
                                    << "the .npy header does not parse: unexpected \"hello\"";
    QTest::newRow("header false") << npy("{'descr': '<f8', 'fortran_order': false, 'shape': (2, 3), }", body6)
                                  << "does not parse: unexpected \"false\"";
    QTest::newRow("header unclosed string")
        << npy("{'descr': '<f8, 'fortran_order': False}", body6) << "does not parse";
    QTest::newRow("header float shape")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3.0), }", body6)
        << "does not parse: expected a whole number";
    QTest::newRow("header not a dict") << npy("(2, 3)", body6) << "the .npy header is not a dictionary";
    QTest::newRow("header deeply nested")
        << npy("{'descr': ((((((((((((((((((((1,),),),),),),),),),),),),),),),),),),)}", body6)
        << "nested too deeply";
    QTest::newRow("no shape") << npy("{'descr': '<f8', 'fortran_order': False, }", body6)
                              << "the .npy header has no 'shape'";
    QTest::newRow("no descr") << npy("{'fortran_order': False, 'shape': (2, 3), }", body6)
                              << "the .npy header has no 'descr'";
    QTest::newRow("fortran_order 0") << npy("{'descr': '<f8', 'fortran_order': 0, 'shape': (2, 3), }", body6)
                                     << "'fortran_order' is not True or False";
    QTest::newRow("shape a list of strings")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': ('2', 3), }", body6)
        << "not a tuple of whole";
    QTest::newRow("shape a number") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': 6, }", body6)
                                    << "'shape' is not a tuple";

    QTest::newRow("shape (2, 3, 4)") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3, 4), }",
                                            QByteArray(24 * 8, '\0'))
                                     << "shape (2, 3, 4) has 3 dimensions";
    QTest::newRow("shape ()") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", f8({1}))
                              << "shape () is a single number";
    QTest::newRow("shape (0, 3)") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 3), }",
                                         QByteArray())
                                  << "shape (0, 3) is empty";
    QTest::newRow("shape (0,)") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0,), }",
                                       QByteArray())
                                << "shape (0,) is empty";
    QTest::newRow("shape (2, -3)") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3), }",
                                          body6)
                                   << "not a tuple of whole numbers";
    QTest::newRow("shape (4097, 1)") << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4097, 1), }",
                                            QByteArray(4097 * 8, '\0'))
                                     << "shape (4097, 1) is larger than 4096 × 4096";
    QTest::newRow("shape huge")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999, 1), }", body6)
        << "is larger than 4096";

    QTest::newRow("truncated body")
        << good.left(good.size() - 8)
        << "truncated .npy file: shape (2, 3) of '<f8' needs 48 bytes of data, the file "
           "has 40";
    QTest::newRow("truncated mid-value") << good.left(good.size() - 3) << "truncated .npy file";
    QTest::newRow("no body") << npy(f8Header23, QByteArray()) << "truncated .npy file";
    QTest::newRow("body too long") << good + f8({7})
                                   << "the data does not fit the shape: shape (2, 3) of '<f8' "
                                      "needs 48 bytes of data, the file has 56";
    QTest::newRow("shape (3, 3) for 6 values")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3, 3), }", body6) << "truncated";
    QTest::newRow("shape (2, 2) for 6 values")
        << npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", body6)
        << "does not fit the shape";
    QTest::newRow("<f4 shape for <f8 body")
        << npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", body6)
        << "does not fit the shape";

    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    QTest::newRow("NaN inside") << npy(f8Header23, f8({1, 2, 3, 4, 5, nan}))
                                << "row 2, column 3 (index [1, 2]): NaN is not allowed";
    QTest::newRow("infinity, Fortran order")
        << npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", f8({1, inf, 3, 4, 5, 6}))
        << "row 2, column 1 (index [1, 0]): infinity is not allowed";
    QTest::newRow("-infinity <f4 1-D") << npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
                                              f4({1, 2, -std::numeric_limits<float>::infinity()}))
                                       << "row 1, column 3 (index [2]): infinity";
}

void TestMatrixIO::npyRefused()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    const QString error = errorOf([&] { parseNpy(str(bytes)); });
    QVERIFY2(error.contains(message), qPrintable(error));
}

// ---------------------------------------------------------------------------------------------------------
// Files

void TestMatrixIO::files_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("numpy"); // written as .npy
    QTest::newRow("csv") << "m.csv" << false;
    QTest::newRow("txt") << "m.txt" << false;
    QTest::newRow("no extension") << "matrix" << false;
    QTest::newRow("npy") << "m.npy" << true;
    QTest::newRow("NPY") << "M.NPY" << true;
}

void TestMatrixIO::files()
{
    QFETCH(QString, name);
    QFETCH(bool, numpy);
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(name).toStdString();
    const Matrix m = extremes();
    saveMatrixFile(m, path);
    QFile file(QString::fromStdString(path));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray contents = file.readAll();
    QCOMPARE(contents, QByteArray::fromStdString(numpy ? formatNpy(m) : formatDelimited(m)));
    QVERIFY(sameBits(loadMatrixFile(path), m));

    // Overwriting replaces the contents and leaves no temporary file behind.
    const Matrix other = randomNormal(2, 2, 11);
    saveMatrixFile(other, path);
    QVERIFY(sameBits(loadMatrixFile(path), other));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{name});
}

void TestMatrixIO::fileKeepsPermissions()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string path = dir.filePath(QStringLiteral("kept.csv")).toStdString();
    saveMatrixFile(rows({{1}}), path);
    struct stat info {};
    QCOMPARE(::stat(path.c_str(), &info), 0);
    QCOMPARE(int(info.st_mode & 0777), 0644); // a new file
    QCOMPARE(::chmod(path.c_str(), 0640), 0);
    saveMatrixFile(rows({{2}}), path);
    QCOMPARE(::stat(path.c_str(), &info), 0);
    QCOMPARE(int(info.st_mode & 0777), 0640); // replaced, same permissions
    QCOMPARE(loadMatrixFile(path)(0, 0), 2.0);
}

void TestMatrixIO::fileErrors()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const std::string missing = dir.filePath(QStringLiteral("missing.csv")).toStdString();
    QString error = errorOf([&] { loadMatrixFile(missing); });
    QVERIFY2(error.startsWith(QString::fromStdString(missing) + QStringLiteral(": cannot open")),
             qPrintable(error));

    error = errorOf([&] { loadMatrixFile(dir.path().toStdString()); });
    QVERIFY2(error.startsWith(dir.path() + QStringLiteral(": cannot read: it is a folder")),
             qPrintable(error));

    const std::string nowhere = dir.filePath(QStringLiteral("no/such/folder/m.npy")).toStdString();
    error = errorOf([&] { saveMatrixFile(rows({{1}}), nowhere); });
    QVERIFY2(error.startsWith(QString::fromStdString(nowhere) +
                              QStringLiteral(": cannot create a file beside it")),
             qPrintable(error));

    // A bad file is refused with the reader's message; an unsaveable matrix leaves the old file alone.
    const std::string bad = dir.filePath(QStringLiteral("bad.csv")).toStdString();
    {
        QFile file(QString::fromStdString(bad));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("1,2\n3,oops\n");
    }
    error = errorOf([&] { loadMatrixFile(bad); });
    QVERIFY2(error.contains(QStringLiteral("line 2, column 2: \"oops\" is not a number")), qPrintable(error));
    error = errorOf([&] { saveMatrixFile(rows({{1, std::numeric_limits<double>::quiet_NaN()}}), bad); });
    QVERIFY2(error.contains(QStringLiteral("not a finite number")), qPrintable(error));
    error = errorOf([&] { saveMatrixFile(Matrix(0, 3), bad); });
    QVERIFY2(error.contains(QStringLiteral("the matrix is empty")), qPrintable(error));
    QFile file(QString::fromStdString(bad));
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), QByteArray("1,2\n3,oops\n"));

    const std::string badNpy = dir.filePath(QStringLiteral("bad.npy")).toStdString();
    {
        QFile out(QString::fromStdString(badNpy));
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write("1,2\n");
    }
    error = errorOf([&] { loadMatrixFile(badNpy); });
    QVERIFY2(error.contains(QStringLiteral("not a NumPy .npy file")), qPrintable(error));
}

QKV_TEST_APPLESS_MAIN(TestMatrixIO)
#include "tst_matrixio.moc"
