// SPDX-License-Identifier: GPL-3.0-or-later
// Checkpoint files: safetensors read and written (every dtype, every refusal of a hostile file), sharded
// checkpoints with their index, and Hugging Face config.json.

#include "Error.h"
#include "ErrorMessage.h"
#include "ModelConfig.h"
#include "Safetensors.h"
#include "TestMain.h"

#include <QtTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

using namespace qkv;
using qkv::test::errorOf;

namespace {

std::string littleEndian(std::uint64_t value, int bytes)
{
    std::string out;
    for (int i = 0; i < bytes; ++i, value >>= 8)
        out += char(value & 0xFF);
    return out;
}

/// A safetensors file built by hand: the length, the header text as given, the data.
std::string rawFile(const std::string& header, const std::string& data = {})
{
    return littleEndian(header.size(), 8) + header + data;
}

/// Raw 16-bit elements (F16 or BF16 bit patterns).
std::string bits16(std::initializer_list<std::uint16_t> values)
{
    std::string out;
    for (std::uint16_t v : values)
        out += littleEndian(v, 2);
    return out;
}

std::string f32Bytes(std::initializer_list<float> values)
{
    std::string out;
    for (float v : values) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        out += littleEndian(bits, 4);
    }
    return out;
}

std::string f64Bytes(std::initializer_list<double> values)
{
    std::string out;
    for (double v : values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        out += littleEndian(bits, 8);
    }
    return out;
}

void writeFile(const QString& path, const std::string& bytes)
{
    std::ofstream out(path.toStdString(), std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    QVERIFY(out.good());
}

/// Same length and the same bits in every entry (so −0.0 stays −0.0).
bool sameBits(const double* a, const std::vector<double>& b)
{
    return std::memcmp(a, b.data(), b.size() * sizeof(double)) == 0;
}

QString describe(const double* values, std::size_t count)
{
    QStringList parts;
    for (std::size_t i = 0; i < count; ++i)
        parts << QString::number(values[i], 'g', 17);
    return parts.join(QStringLiteral(", "));
}

const double f16Max = 65504.0;
const double f16MinNormal = std::ldexp(1.0, -14);
const double f16MinSubnormal = std::ldexp(1.0, -24);
const double f16MaxSubnormal = std::ldexp(1023.0, -24);
const double bf16Max = std::ldexp(255.0, 120);
const double bf16MinNormal = std::ldexp(1.0, -126);
const double bf16MinSubnormal = std::ldexp(1.0, -133);
const double bf16MaxSubnormal = std::ldexp(127.0, -133);

std::string gpt2Config()
{
    // openai-community/gpt2's config.json (the keys read, with some it leaves alone).
    return R"({"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12,
        "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "summary_activation": null,
        "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}},
        "vocab_size": 50257})";
}

std::string llamaConfig()
{
    // TinyLlama-1.1B's config.json: grouped-query attention, 32 query heads sharing 4 key/value heads.
    return R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 1,
        "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
        "intermediate_size": 5632, "max_position_embeddings": 2048, "model_type": "llama",
        "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4, "pretraining_tp": 1,
        "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0, "tie_word_embeddings": false,
        "torch_dtype": "bfloat16", "transformers_version": "4.35.0", "use_cache": true, "vocab_size": 32000})";
}

/// `text` with the first occurrence of `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to)
{
    const auto at = text.find(from);
    if (at != std::string::npos)
        text.replace(at, from.size(), to);
    return text;
}

} // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private slots:
    void roundTrip_data();
    void roundTrip();
    void halfAndBfloat16BitsDecodeExactly_data();
    void halfAndBfloat16BitsDecodeExactly();
    void writerRoundsToNearestEven_data();
    void writerRoundsToNearestEven();
    void writerRefusesBadTensors_data();
    void writerRefusesBadTensors();
    void headerDescribesTensorsAndMetadata();
    void unalignedTensorsRead();
    void refusesHostileFiles_data();
    void refusesHostileFiles();
    void refusesSpecialFilesWithoutBlocking_data();
    void refusesSpecialFilesWithoutBlocking();
    void otherDtypesOpenButAreRefusedWhenRead();
    void nonFiniteElementsRefused_data();
    void nonFiniteElementsRefused();
    void float64BeyondFloat32Refused();
    void storedFloat32WithoutCopy();
    void wrongRankOrNameRefused();
    void largeFileOpensWithoutReadingItsData();
    void singleFileCheckpoint();
    void shardedCheckpoint();
    void badCheckpointsRefused_data();
    void badCheckpointsRefused();
    void gpt2Config();
    void llamaFamilyConfigs();
    void badConfigsRefused_data();
    void badConfigsRefused();
};

void TestSafetensors::roundTrip_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<bool>("twoD");
    QTest::addColumn<std::vector<double>>("values"); // each exactly representable in the dtype

    const std::vector<double> f64{
        0.1,        -0.0,  std::numeric_limits<double>::max(), std::numeric_limits<double>::denorm_min(),
        -1.0 / 3.0, 1e-300};
    const std::vector<double> f32{double(0.1f),
                                  -0.0,
                                  double(std::numeric_limits<float>::max()),
                                  double(std::numeric_limits<float>::denorm_min()),
                                  double(std::numeric_limits<float>::min()),
                                  -2.5};
    const std::vector<double> f16{0.0,
                                  -0.0,
                                  f16Max,
                                  -f16Max,
                                  f16MinNormal,
                                  f16MinSubnormal,
                                  f16MaxSubnormal,
                                  -f16MinSubnormal,
                                  0.333251953125,
                                  1.0};
    const std::vector<double> bf16{0.0,
                                   -0.0,
                                   bf16Max,
                                   -bf16Max,
                                   bf16MinNormal,
                                   bf16MinSubnormal,
                                   bf16MaxSubnormal,
                                   -bf16MinSubnormal,
                                   0.333984375,
                                   1.0};
    for (const bool twoD : {false, true}) {
        const char* shape = twoD ? "2-D" : "1-D";
        QTest::addRow("F64 %s", shape) << QStringLiteral("F64") << twoD << f64;
        QTest::addRow("F32 %s", shape) << QStringLiteral("F32") << twoD << f32;
        QTest::addRow("F16 %s", shape) << QStringLiteral("F16") << twoD << f16;
        QTest::addRow("BF16 %s", shape) << QStringLiteral("BF16") << twoD << bf16;
    }
}

void TestSafetensors::roundTrip()
{
    QFETCH(QString, dtype);
    QFETCH(bool, twoD);
    QFETCH(std::vector<double>, values);
    const std::uint64_t count = values.size();
    SafetensorsTensor tensor{"layer.weight", dtype.toStdString(), {}, values};
    tensor.shape = twoD ? std::vector<std::uint64_t>{2, count / 2} : std::vector<std::uint64_t>{count};
    const SafetensorsTensor empty{"empty", dtype.toStdString(), {0, 3}, {}};

    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("t.safetensors")).toStdString();
    writeSafetensors(path, {tensor, empty});
    const SafetensorsFile file = SafetensorsFile::open(path);
    QCOMPARE(file.tensors().size(), std::size_t(2));
    QCOMPARE(QString::fromStdString(file.info("layer.weight").dtype), dtype);
    if (twoD) {
        const Matrix m = file.readMatrix("layer.weight");
        QCOMPARE(m.rows(), Index(2));
        QCOMPARE(m.cols(), Index(count / 2));
        QVERIFY2(sameBits(m.data(), values), qPrintable(describe(m.data(), count)));
        // In float32 (a float32 forward pass): F32, F16 and BF16 exactly (these F64 values reach past
        // float32's range: float64BeyondFloat32Refused).
        if (dtype != QStringLiteral("F64")) {
            const MatrixF narrow = file.readMatrixFloat32("layer.weight");
            QCOMPARE(narrow.rows(), Index(2));
            for (Index k = 0; k < narrow.size(); ++k)
                QCOMPARE(double(narrow.data()[k]), m.data()[k]);
        }
        // Rows alone, in any order and repeated, are the same bits as the whole matrix's.
        const Matrix rows = file.readRows("layer.weight", {1, 0, 1});
        QCOMPARE(rows.rows(), Index(3));
        QVERIFY(sameMatrix(rows.row(0), m.row(1)) && sameMatrix(rows.row(1), m.row(0)) &&
                sameMatrix(rows.row(2), m.row(1)));
    } else {
        const RowVector v = file.readVector("layer.weight");
        QCOMPARE(v.size(), Index(count));
        QVERIFY2(sameBits(v.data(), values), qPrintable(describe(v.data(), count)));
    }
    const Matrix none = file.readMatrix("empty");
    QCOMPARE(none.rows(), Index(0));
    QCOMPARE(none.cols(), Index(3));
}

void TestSafetensors::halfAndBfloat16BitsDecodeExactly_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("bits");
    QTest::addColumn<double>("expected");

    // Bit patterns from IEEE 754 binary16 and from bfloat16 (the upper half of binary32).
    QTest::newRow("F16 1") << QStringLiteral("F16") << 0x3C00 << 1.0;
    QTest::newRow("F16 -2") << QStringLiteral("F16") << 0xC000 << -2.0;
    QTest::newRow("F16 max") << QStringLiteral("F16") << 0x7BFF << 65504.0;
    QTest::newRow("F16 smallest normal") << QStringLiteral("F16") << 0x0400 << f16MinNormal;
    QTest::newRow("F16 smallest subnormal") << QStringLiteral("F16") << 0x0001 << f16MinSubnormal;
    QTest::newRow("F16 largest subnormal") << QStringLiteral("F16") << 0x03FF << f16MaxSubnormal;
    QTest::newRow("F16 -0") << QStringLiteral("F16") << 0x8000 << -0.0;
    QTest::newRow("F16 1/3") << QStringLiteral("F16") << 0x3555 << 0.333251953125;
    QTest::newRow("BF16 1") << QStringLiteral("BF16") << 0x3F80 << 1.0;
    QTest::newRow("BF16 max") << QStringLiteral("BF16") << 0x7F7F << bf16Max;
    QTest::newRow("BF16 smallest normal") << QStringLiteral("BF16") << 0x0080 << bf16MinNormal;
    QTest::newRow("BF16 smallest subnormal") << QStringLiteral("BF16") << 0x0001 << bf16MinSubnormal;
    QTest::newRow("BF16 -0") << QStringLiteral("BF16") << 0x8000 << -0.0;
    QTest::newRow("BF16 1/3") << QStringLiteral("BF16") << 0x3EAB << 0.333984375;
}

void TestSafetensors::halfAndBfloat16BitsDecodeExactly()
{
    QFETCH(QString, dtype);
    QFETCH(int, bits);
    QFETCH(double, expected);
    const std::string header =
        R"({"x":{"dtype":")" + dtype.toStdString() + R"(","shape":[1],"data_offsets":[0,2]}})";
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(rawFile(header, bits16({static_cast<std::uint16_t>(bits)})), "hand-made");
    const double value = file.readVector("x")(0);
    QVERIFY2(std::memcmp(&value, &expected, sizeof value) == 0,
             qPrintable(QString::number(value, 'g', 17) + QStringLiteral(" != ") +
                        QString::number(expected, 'g', 17)));

    // The writer gives the same bits back.
    const std::string written = formatSafetensors({{"x", dtype.toStdString(), {1}, {expected}}});
    QCOMPARE(written.substr(written.size() - 2), bits16({static_cast<std::uint16_t>(bits)}));
}

void TestSafetensors::writerRoundsToNearestEven_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("value");
    QTest::addColumn<double>("stored");

    const double u16 = std::ldexp(1.0, -10); // F16's spacing just above 1
    QTest::newRow("F16 1/3") << QStringLiteral("F16") << 1.0 / 3.0 << 0.333251953125;
    QTest::newRow("F16 tie to even (down)") << QStringLiteral("F16") << 1.0 + u16 / 2 << 1.0;
    QTest::newRow("F16 tie to even (up)") << QStringLiteral("F16") << 1.0 + 3 * u16 / 2 << 1.0 + 2 * u16;
    QTest::newRow("F16 below max rounds to max") << QStringLiteral("F16") << 65519.0 << f16Max;
    QTest::newRow("F16 half a subnormal ties to 0") << QStringLiteral("F16") << f16MinSubnormal / 2 << 0.0;
    QTest::newRow("F16 0.75 subnormal rounds up")
        << QStringLiteral("F16") << 0.75 * f16MinSubnormal << f16MinSubnormal;
    QTest::newRow("BF16 1/3") << QStringLiteral("BF16") << 1.0 / 3.0 << 0.333984375;
    QTest::newRow("BF16 pi") << QStringLiteral("BF16") << 3.14159265358979 << 3.140625;
    QTest::newRow("F32 0.1") << QStringLiteral("F32") << 0.1 << double(0.1f);
    QTest::newRow("F32 subnormal") << QStringLiteral("F32") << 1e-45
                                   << double(std::numeric_limits<float>::denorm_min());
}

void TestSafetensors::writerRoundsToNearestEven()
{
    QFETCH(QString, dtype);
    QFETCH(double, value);
    QFETCH(double, stored);
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(formatSafetensors({{"x", dtype.toStdString(), {1}, {value}}}), "written");
    QCOMPARE(file.readVector("x")(0), stored);
}

void TestSafetensors::writerRefusesBadTensors_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<std::vector<double>>("values");
    QTest::addColumn<QString>("expected");

    QTest::newRow("F16 overflow") << QStringLiteral("F16") << std::vector<double>{65520.0}
                                  << QStringLiteral("is not a finite F16 number");
    QTest::newRow("F32 overflow") << QStringLiteral("F32") << std::vector<double>{1e39}
                                  << QStringLiteral("is not a finite F32 number");
    QTest::newRow("NaN") << QStringLiteral("F64") << std::vector<double>{std::nan("")}
                         << QStringLiteral("is not a finite F64 number");
    QTest::newRow("I64") << QStringLiteral("I64") << std::vector<double>{1.0}
                         << QStringLiteral("cannot write dtype");
    QTest::newRow("shape") << QStringLiteral("F32") << std::vector<double>{1.0, 2.0}
                           << QStringLiteral("has 1 elements, but 2 values");
}

void TestSafetensors::writerRefusesBadTensors()
{
    QFETCH(QString, dtype);
    QFETCH(std::vector<double>, values);
    QFETCH(QString, expected);
    const QString error = errorOf([&] { formatSafetensors({{"w", dtype.toStdString(), {1}, values}}); });
    QVERIFY2(error.contains(expected) && error.contains(QStringLiteral("tensor \"w\"")), qPrintable(error));
    const QString twice = errorOf([] {
        formatSafetensors({{"w", "F32", {1}, {1.0}}, {"w", "F32", {1}, {2.0}}});
    });
    QVERIFY2(twice.contains(QStringLiteral("used twice")), qPrintable(twice));
}

void TestSafetensors::headerDescribesTensorsAndMetadata()
{
    const std::string bytes = formatSafetensors(
        {{"b", "F32", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"a", "BF16", {}, {7.0}}, {"c", "F64", {1, 1, 2}, {8, 9}}},
        {{"format", "pt"}});
    std::uint64_t headerLength = 0;
    std::memcpy(&headerLength, bytes.data(), sizeof headerLength);
    QCOMPARE(headerLength % 8, std::uint64_t(0)); // padded, so the data starts 8-aligned
    QCOMPARE(bytes.size(), std::size_t(8 + headerLength + 24 + 2 + 16));
    const SafetensorsFile file = SafetensorsFile::fromBytes(bytes, "meta");
    QCOMPARE(file.metadata().size(), std::size_t(1));
    QCOMPARE(file.metadata().at("format"), std::string("pt"));
    QCOMPARE(file.tensors().size(), std::size_t(3));
    QCOMPARE(file.tensors()[0].name, std::string("a")); // sorted by name
    QCOMPARE(file.tensors()[0].elementCount(), std::uint64_t(1));
    QVERIFY(file.tensors()[0].shape.empty());
    const SafetensorsTensorInfo& b = file.info("b");
    QCOMPARE(b.dtype, std::string("F32"));
    QCOMPARE(b.shape, (std::vector<std::uint64_t>{2, 3}));
    QCOMPARE(b.dataBegin, std::uint64_t(0));
    QCOMPARE(b.dataEnd, std::uint64_t(24));
    QCOMPARE(file.info("c").dataBegin, std::uint64_t(26));
    QVERIFY(file.has("c"));
    QVERIFY(!file.has("d"));
    QVERIFY(isReadableSafetensorsDtype("BF16"));
    QVERIFY(!isReadableSafetensorsDtype("I64"));
    // A 3-D tensor is described but is neither a matrix nor a vector.
    const QString error = errorOf([&] { file.readMatrix("c"); });
    QVERIFY2(error.contains(QStringLiteral("[1, 1, 2] (3-D); expected a matrix")), qPrintable(error));
}

void TestSafetensors::unalignedTensorsRead()
{
    // A 9-byte header (the format does not require padding), so the F64 data starts at an odd address.
    const std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("x":{"dtype":"F64","shape":[2],"data_offsets":[1,17]}})";
    const std::string bytes = rawFile(header, std::string(1, '\x07') + f64Bytes({0.5, -1e300}));
    const SafetensorsFile file = SafetensorsFile::fromBytes(bytes, "odd");
    const RowVector x = file.readVector("x");
    QCOMPARE(x(0), 0.5);
    QCOMPARE(x(1), -1e300);
}

void TestSafetensors::refusesHostileFiles_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QStringList>("expected"); // fragments the message must contain

    const auto bytes = [](const std::string& s) { return QByteArray::fromStdString(s); };
    const auto entry = [](const char* name, const char* dtype, const char* shape, const char* offsets) {
        return std::string("\"") + name + R"(":{"dtype":")" + dtype + R"(","shape":)" + shape +
               R"(,"data_offsets":)" + offsets + "}";
    };
    const std::string good =
        rawFile("{" + entry("w", "F32", "[2,2]", "[0,16]") + "}", f32Bytes({1, 2, 3, 4}));

    QTest::newRow("empty file") << QByteArray() << QStringList{QStringLiteral("the file is empty")};
    QTest::newRow("7 bytes") << bytes(std::string("\x10\0\0\0\0\0\0", 7))
                             << QStringList{QStringLiteral("too short")};
    QTest::newRow("truncated file") << bytes(good.substr(0, good.size() - 4))
                                    << QStringList{QStringLiteral("tensor \"w\""),
                                                   QStringLiteral("run past the data section (12 bytes)")};
    QTest::newRow("header length past the end")
        << bytes(littleEndian(1000, 8) + "{}")
        << QStringList{QStringLiteral("header length 1000 runs past the end")};
    QTest::newRow("absurd header length")
        << bytes(littleEndian(std::uint64_t(1) << 40, 8) + "{}")
        << QStringList{QStringLiteral("header length 1099511627776 is larger than the limit")};
    QTest::newRow("header not JSON") << bytes(rawFile("{\"w\":"))
                                     << QStringList{QStringLiteral("not valid JSON")};
    QTest::newRow("header not an object")
        << bytes(rawFile("[1,2]")) << QStringList{QStringLiteral("expected a JSON object")};
    QTest::newRow("metadata not strings")
        << bytes(rawFile(R"({"__metadata__":{"format":1}})"))
        << QStringList{QStringLiteral("__metadata__: \"format\": expected a string")};
    QTest::newRow("entry not an object")
        << bytes(rawFile(R"({"w":[0]})")) << QStringList{QStringLiteral("tensor \"w\": expected an object")};
    QTest::newRow("no dtype") << bytes(rawFile(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "1234"))
                              << QStringList{QStringLiteral("tensor \"w\": no dtype")};
    QTest::newRow("no shape") << bytes(rawFile(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", "1234"))
                              << QStringList{QStringLiteral("tensor \"w\": no shape")};
    QTest::newRow("no data_offsets") << bytes(rawFile(R"({"w":{"dtype":"F32","shape":[1]}})", "1234"))
                                     << QStringList{QStringLiteral("tensor \"w\": no data_offsets")};
    QTest::newRow("unknown dtype") << bytes(rawFile("{" + entry("w", "F13", "[1]", "[0,4]") + "}", "1234"))
                                   << QStringList{QStringLiteral("tensor \"w\""),
                                                  QStringLiteral("dtype \"F13\"")};
    QTest::newRow("negative dimension")
        << bytes(rawFile("{" + entry("w", "F32", "[-1,2]", "[0,4]") + "}", "1234"))
        << QStringList{QStringLiteral("tensor \"w\": shape: \"-1\"")};
    QTest::newRow("fractional dimension")
        << bytes(rawFile("{" + entry("w", "F32", "[1.5]", "[0,4]") + "}", "1234"))
        << QStringList{QStringLiteral("shape: \"1.5\" is not a dimension")};
    QTest::newRow("element count overflows")
        << bytes(
               rawFile("{" + entry("w", "F32", "[4294967296,4294967296,4294967296]", "[0,4]") + "}", "1234"))
        << QStringList{
               QStringLiteral("tensor \"w\": shape [4294967296, 4294967296, 4294967296] has more elements")};
    QTest::newRow("byte count overflows")
        << bytes(rawFile("{" + entry("w", "F64", "[4611686018427387904]", "[0,4]") + "}", "1234"))
        << QStringList{QStringLiteral("has more elements than any file can hold")};
    QTest::newRow("offsets not a pair")
        << bytes(rawFile("{" + entry("w", "F32", "[1]", "[0,4,8]") + "}", "1234"))
        << QStringList{QStringLiteral("tensor \"w\": data_offsets: expected [begin, end]")};
    QTest::newRow("negative offset") << bytes(rawFile("{" + entry("w", "F32", "[1]", "[-4,0]") + "}", "1234"))
                                     << QStringList{QStringLiteral("data_offsets: expected [begin, end]")};
    QTest::newRow("end before begin") << bytes(rawFile("{" + entry("w", "F32", "[0]", "[4,0]") + "}", "1234"))
                                      << QStringList{QStringLiteral("data_offsets [4, 0] end before begin")};
    QTest::newRow("offsets outside the data")
        << bytes(rawFile("{" + entry("w", "F32", "[1]", "[4,8]") + "}", "1234"))
        << QStringList{
               QStringLiteral("tensor \"w\": data_offsets [4, 8] run past the data section (4 bytes)")};
    QTest::newRow("shape x dtype is not the byte length")
        << bytes(rawFile("{" + entry("w", "F32", "[2,3]", "[0,20]") + "}", std::string(24, '\0')))
        << QStringList{QStringLiteral(
               "tensor \"w\": shape [2, 3] of F32 needs 24 bytes, but data_offsets [0, 20] hold 20")};
    QTest::newRow("overlapping tensors")
        << bytes(rawFile("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") +
                             "}",
                         std::string(12, '\0')))
        << QStringList{QStringLiteral("tensor \"a\" and tensor \"b\" overlap")};
    QTest::newRow("one tensor inside another")
        << bytes(rawFile("{" + entry("big", "F32", "[4]", "[0,16]") + "," +
                             entry("in", "F32", "[1]", "[4,8]") + "}",
                         std::string(16, '\0')))
        << QStringList{QStringLiteral("tensor \"big\" and tensor \"in\" overlap")};
    QTest::newRow("a tensor listed twice") << bytes(rawFile("{" + entry("w", "F32", "[1]", "[0,4]") + "," +
                                                                entry("w", "F32", "[1]", "[4,8]") + "}",
                                                            std::string(8, '\0')))
                                           << QStringList{QStringLiteral("\"w\": the key appears twice")};
    QTest::newRow("nested too deep") << bytes(rawFile(R"({"w":{"shape":[[1]]}})"))
                                     << QStringList{QStringLiteral("nested more than 3 levels")};
    QTest::newRow("dimension beyond 64 bits")
        << bytes(rawFile("{" + entry("w", "F32", ("[" + std::string(30, '9') + "]").c_str(), "[0,4]") + "}"))
        << QStringList{QStringLiteral("is not a dimension")};
    std::string manyOnes = "[1";
    for (int i = 0; i < 64; ++i)
        manyOnes += ",1";
    manyOnes += "]";
    QTest::newRow("65 dimensions") << bytes(rawFile("{" + entry("w", "F32", manyOnes.c_str(), "[0,4]") + "}",
                                                    "1234"))
                                   << QStringList{QStringLiteral("more than 64 elements")};
}

void TestSafetensors::refusesHostileFiles()
{
    QFETCH(QByteArray, bytes);
    QFETCH(QStringList, expected);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("bad.safetensors"));
    writeFile(path, bytes.toStdString());
    const QString fromFile = errorOf([&] { SafetensorsFile::open(path.toStdString()); });
    QVERIFY2(fromFile.startsWith(path + QStringLiteral(": ")), qPrintable(fromFile));
    for (const QString& fragment : expected)
        QVERIFY2(fromFile.contains(fragment), qPrintable(fromFile + QStringLiteral("\nlacks: ") + fragment));
    // The same bytes in memory are refused the same way; a checkpoint of the file keeps nothing.
    const QString fromBytes = errorOf([&] { SafetensorsFile::fromBytes(bytes.toStdString(), "in memory"); });
    QCOMPARE(fromBytes, QStringLiteral("in memory") + fromFile.mid(path.size()));
    QVERIFY(QFile::rename(path, dir.filePath(QStringLiteral("model.safetensors"))));
    const QString fromFolder = errorOf([&] { Checkpoint::open(dir.path().toStdString()); });
    QVERIFY2(fromFolder.contains(expected.front()), qPrintable(fromFolder));
}

void TestSafetensors::refusesSpecialFilesWithoutBlocking_data()
{
    QTest::addColumn<QString>("path"); // <dir>, <fifo> or a device
    QTest::addColumn<QString>("expected");
    QTest::newRow("folder") << QStringLiteral("<dir>") << QStringLiteral("it is a folder, not a file");
    QTest::newRow("FIFO") << QStringLiteral("<fifo>") << QStringLiteral("it is a pipe (FIFO), not a file");
    QTest::newRow("/dev/zero") << QStringLiteral("/dev/zero") << QStringLiteral("it is a device, not a file");
    QTest::newRow("missing") << QStringLiteral("<missing>") << QStringLiteral("cannot open");
}

void TestSafetensors::refusesSpecialFilesWithoutBlocking()
{
    QFETCH(QString, path);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    if (path == QStringLiteral("<dir>")) {
        path = dir.filePath(QStringLiteral("folder.safetensors"));
        QVERIFY(QDir().mkdir(path));
    } else if (path == QStringLiteral("<fifo>")) {
        path = dir.filePath(QStringLiteral("pipe.safetensors"));
        QVERIFY(::mkfifo(QFile::encodeName(path).constData(), 0600) == 0);
    } else if (path == QStringLiteral("<missing>")) {
        path = dir.filePath(QStringLiteral("missing.safetensors"));
    }
    const QString error = errorOf([&] { SafetensorsFile::open(path.toStdString()); });
    QVERIFY2(error.startsWith(path + QStringLiteral(": ")) && error.contains(expected), qPrintable(error));
}

void TestSafetensors::otherDtypesOpenButAreRefusedWhenRead()
{
    const std::string header = R"({"ids":{"dtype":"I64","shape":[1,2],"data_offsets":[0,16]},)"
                               R"("w":{"dtype":"F32","shape":[1,2],"data_offsets":[16,24]}})";
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(rawFile(header, std::string(16, '\0') + f32Bytes({1.5f, -2.0f})), "mixed");
    QCOMPARE(file.info("ids").dtype, std::string("I64"));
    QCOMPARE(file.readMatrix("w")(0, 1), -2.0);
    const QString error = errorOf([&] { file.readMatrix("ids"); });
    QVERIFY2(error.contains(QStringLiteral("tensor \"ids\": dtype I64 cannot be read")), qPrintable(error));
}

void TestSafetensors::nonFiniteElementsRefused_data()
{
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<QByteArray>("data"); // four elements, the third not finite
    QTest::addColumn<QString>("expected");
    const auto bytes = [](const std::string& s) { return QByteArray::fromStdString(s); };
    const double inf = std::numeric_limits<double>::infinity();
    QTest::newRow("F16 inf") << QStringLiteral("F16") << bytes(bits16({0x3C00, 0, 0x7C00, 0}))
                             << QStringLiteral("infinite");
    QTest::newRow("F16 -inf") << QStringLiteral("F16") << bytes(bits16({0, 0, 0xFC00, 0}))
                              << QStringLiteral("infinite");
    QTest::newRow("F16 NaN") << QStringLiteral("F16") << bytes(bits16({0, 0, 0x7E00, 0}))
                             << QStringLiteral("NaN");
    QTest::newRow("BF16 inf") << QStringLiteral("BF16") << bytes(bits16({0, 0, 0x7F80, 0}))
                              << QStringLiteral("infinite");
    QTest::newRow("BF16 NaN") << QStringLiteral("BF16") << bytes(bits16({0, 0, 0x7FC1, 0}))
                              << QStringLiteral("NaN");
    QTest::newRow("F32 inf") << QStringLiteral("F32") << bytes(f32Bytes({0, 0, float(inf), 0}))
                             << QStringLiteral("infinite");
    QTest::newRow("F64 NaN") << QStringLiteral("F64") << bytes(f64Bytes({0, 0, std::nan(""), 0}))
                             << QStringLiteral("NaN");
}

void TestSafetensors::nonFiniteElementsRefused()
{
    QFETCH(QString, dtype);
    QFETCH(QByteArray, data);
    QFETCH(QString, expected);
    const std::string header = R"({"h.0.w":{"dtype":")" + dtype.toStdString() +
                               R"(","shape":[2,2],"data_offsets":[0,)" + std::to_string(data.size()) + "]}}";
    const SafetensorsFile file = SafetensorsFile::fromBytes(rawFile(header, data.toStdString()), "weights");
    const QString error = errorOf([&] { file.readMatrix("h.0.w"); });
    QVERIFY2(error.startsWith(QStringLiteral("weights: tensor \"h.0.w\": element [1, 0] is ") + expected),
             qPrintable(error));
    // Reading rows checks only those rows, and names the element as in the whole tensor.
    QCOMPARE(file.readRows("h.0.w", {0}).rows(), Index(1));
    const QString rowError = errorOf([&] { file.readRows("h.0.w", {0, 1}); });
    QVERIFY2(rowError.startsWith(QStringLiteral("weights: tensor \"h.0.w\": element [1, 0] is ") + expected),
             qPrintable(rowError));
}

// An F64 weight that float32 cannot hold is refused for a float32 pass, and read as it is in float64.
void TestSafetensors::float64BeyondFloat32Refused()
{
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(formatSafetensors({{"w", "F64", {2, 2}, {1, 2, 1e300, 3}}}), "weights");
    QCOMPARE(file.readMatrix("w")(1, 0), 1e300);
    const SafetensorsFile inRange =
        SafetensorsFile::fromBytes(formatSafetensors({{"w", "F64", {1, 2}, {0.1, -3e38}}}), "weights");
    const MatrixF rounded = inRange.readMatrixFloat32("w"); // to nearest
    QCOMPARE(rounded(0, 0), 0.1f);
    QCOMPARE(rounded(0, 1), -3e38f);
    const QString error = errorOf([&] { file.readMatrixFloat32("w"); });
    QVERIFY2(error ==
                 QStringLiteral("weights: tensor \"w\": element [1, 0] is beyond float32's range; choose "
                                "precision float64"),
             qPrintable(error));
}

// A float32 forward pass multiplies by an F32 tensor where it is stored; anything else is read as before.
void TestSafetensors::storedFloat32WithoutCopy()
{
    const SafetensorsFile file =
        SafetensorsFile::fromBytes(formatSafetensors({{"w", "F32", {2, 3}, {1, -2, 0.5, 3e38, -1e-40, 7}},
                                                      {"half", "BF16", {1, 2}, {1, 2}},
                                                      {"wide", "F64", {1, 2}, {1, 2}},
                                                      {"bias", "F32", {2}, {1, 2}}}),
                                   "weights");
    const auto stored = file.storedFloat32("w");
    QVERIFY(stored.has_value());
    QVERIFY(sameMatrix(*stored, file.readMatrixFloat32("w"))); // subnormal included
    QCOMPARE(file.storedFloat32("w")->data(), stored->data()); // the file's own bytes, not a copy
    QVERIFY(!file.storedFloat32("half"));
    QVERIFY(!file.storedFloat32("wide"));
    QVERIFY(!file.storedFloat32("bias")); // 1-D: readMatrix refuses it with its message

    // F32 data at an odd address (a 9-byte header) is not used in place, and still reads.
    const std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                               R"("x":{"dtype":"F32","shape":[1,2],"data_offsets":[1,9]}})";
    const SafetensorsFile odd =
        SafetensorsFile::fromBytes(rawFile(header, std::string(1, '\x07') + f32Bytes({0.5f, -2.0f})), "odd");
    QVERIFY(!odd.storedFloat32("x"));
    QCOMPARE(odd.readMatrixFloat32("x")(0, 1), -2.0f);

    // A NaN is refused as readMatrix refuses it, every time it is asked for (the header padded to 8 bytes,
    // as the reference writer pads it, so that the data is aligned).
    std::string nanHeader = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
    nanHeader.resize((nanHeader.size() + 7) / 8 * 8, ' ');
    const SafetensorsFile bad = SafetensorsFile::fromBytes(
        rawFile(nanHeader, f32Bytes({1, 2, std::numeric_limits<float>::quiet_NaN(), 4})), "weights");
    for (int attempt = 0; attempt < 2; ++attempt) {
        const QString error = errorOf([&] { bad.storedFloat32("w"); });
        QVERIFY2(error ==
                     QStringLiteral("weights: tensor \"w\": element [1, 0] is NaN (weights must be finite "
                                    "numbers)"),
                 qPrintable(error));
    }
}

void TestSafetensors::wrongRankOrNameRefused()
{
    const SafetensorsFile file = SafetensorsFile::fromBytes(
        formatSafetensors({{"bias", "F32", {3}, {1, 2, 3}}, {"weight", "F32", {1, 2}, {1, 2}}}), "f");
    QString error = errorOf([&] { file.readMatrix("bias"); });
    QVERIFY2(error == QStringLiteral("f: tensor \"bias\" has shape [3] (1-D); expected a matrix (2-D)"),
             qPrintable(error));
    error = errorOf([&] { file.readVector("weight"); });
    QVERIFY2(error.contains(QStringLiteral("shape [1, 2] (2-D); expected a vector (1-D)")),
             qPrintable(error));
    error = errorOf([&] { file.readRows("weight", {1}); });
    QVERIFY2(error == QStringLiteral("f: tensor \"weight\": row 1 is outside its 1 rows"), qPrintable(error));
    error = errorOf([&] { file.readRows("bias", {0}); });
    QVERIFY2(error.contains(QStringLiteral("expected a matrix (2-D)")), qPrintable(error));
    error = errorOf([&] { file.readMatrix("wte"); });
    QVERIFY2(error == QStringLiteral("f: no tensor \"wte\""), qPrintable(error));
}

void TestSafetensors::largeFileOpensWithoutReadingItsData()
{
    // 200 MB of F16 zeros that were never written (a sparse file), after one small tensor. Opening reads the
    // header and reading "small" touches its own pages: the big tensor's pages must stay out of memory.
    const std::uint64_t bigElements = 100'000'000;
    const std::string header = R"({"small":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("big":{"dtype":"F16","shape":[10000,10000],"data_offsets":[8,)" +
                               std::to_string(8 + 2 * bigElements) + "]}}";
    const std::string start = rawFile(header, f32Bytes({0.25f, -4.0f}));
    const std::uint64_t fileSize = 8 + header.size() + 8 + 2 * bigElements;
    QTemporaryDir dir;
    const QByteArray path = QFile::encodeName(dir.filePath(QStringLiteral("large.safetensors")));
    const int fd = ::open(path.constData(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    QVERIFY(fd >= 0);
    QCOMPARE(::write(fd, start.data(), start.size()), ssize_t(start.size()));
    QCOMPARE(::ftruncate(fd, static_cast<off_t>(fileSize)), 0);
    ::close(fd);

    const SafetensorsFile file = SafetensorsFile::open(path.toStdString());
    QCOMPARE(file.info("big").shape, (std::vector<std::uint64_t>{10000, 10000}));
    const RowVector small = file.readVector("small");
    QCOMPARE(small(0), 0.25);
    QCOMPARE(small(1), -4.0);

    // Which of the big tensor's pages are in memory (the page cache is shared by every mapping of the file).
    const auto pageSize = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const int probe = ::open(path.constData(), O_RDONLY | O_CLOEXEC);
    QVERIFY(probe >= 0);
    void* mapping = ::mmap(nullptr, fileSize, PROT_READ, MAP_SHARED, probe, 0);
    ::close(probe);
    QVERIFY(mapping != MAP_FAILED);
    const std::uint64_t pages = (fileSize + pageSize - 1) / pageSize;
    std::vector<unsigned char> resident(pages);
    QCOMPARE(::mincore(mapping, fileSize, resident.data()), 0);
    ::munmap(mapping, fileSize);
    const std::uint64_t bigStart = (8 + header.size() + 8) / pageSize + 1;
    std::uint64_t residentPages = 0;
    for (std::uint64_t p = bigStart; p < pages; ++p)
        residentPages += resident[p] & 1;
    // The kernel reads a little ahead around the pages touched (128 KiB by default); 4 MiB is far below the
    // 200 MB the tensor has.
    QVERIFY2(residentPages * pageSize < (4u << 20),
             qPrintable(
                 QStringLiteral("%1 of %2 pages of the big tensor were read").arg(residentPages).arg(pages)));
}

void TestSafetensors::singleFileCheckpoint()
{
    QTemporaryDir dir;
    writeSafetensors(
        dir.filePath(QStringLiteral("model.safetensors")).toStdString(),
        {{"wte.weight", "F32", {3, 2}, {1, 2, 3, 4, 5, 6}}, {"ln_f.bias", "BF16", {2}, {0.5, -1}}});
    for (const QString& path :
         {dir.path(), dir.path() + QStringLiteral("/"), dir.filePath(QStringLiteral("model.safetensors"))}) {
        const Checkpoint checkpoint = Checkpoint::open(path.toStdString());
        QCOMPARE(checkpoint.files().size(), std::size_t(1));
        QCOMPARE(checkpoint.tensorNames(), (std::vector<std::string>{"ln_f.bias", "wte.weight"}));
        QVERIFY(checkpoint.has("wte.weight"));
        QCOMPARE(checkpoint.readMatrix("wte.weight")(2, 1), 6.0);
        QCOMPARE(checkpoint.readVector("ln_f.bias")(1), -1.0);
        QCOMPARE(checkpoint.info("ln_f.bias").dtype, std::string("BF16"));
        const QString error = errorOf([&] { checkpoint.readMatrix("lm_head.weight"); });
        QVERIFY2(error == path + QStringLiteral(": the checkpoint has no tensor \"lm_head.weight\""),
                 qPrintable(error));
    }
}

void TestSafetensors::shardedCheckpoint()
{
    QTemporaryDir dir;
    writeSafetensors(dir.filePath(QStringLiteral("model-00001-of-00002.safetensors")).toStdString(),
                     {{"model.embed_tokens.weight", "BF16", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}},
                      {"model.layers.0.input_layernorm.weight", "F32", {2}, {1, 1}}});
    writeSafetensors(dir.filePath(QStringLiteral("model-00002-of-00002.safetensors")).toStdString(),
                     {{"model.layers.0.self_attn.q_proj.weight", "F16", {2, 2}, {0.5, 0.25, -1, 2}},
                      {"model.norm.weight", "F32", {2}, {3, 4}},
                      {"unlisted", "F32", {1}, {9}}});
    writeFile(dir.filePath(QStringLiteral("model.safetensors.index.json")), R"({
  "metadata": {"total_size": 40},
  "weight_map": {
    "model.embed_tokens.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.input_layernorm.weight": "model-00001-of-00002.safetensors",
    "model.layers.0.self_attn.q_proj.weight": "model-00002-of-00002.safetensors",
    "model.norm.weight": "model-00002-of-00002.safetensors"
  }
})");
    const Checkpoint checkpoint = Checkpoint::open(dir.path().toStdString());
    QCOMPARE(checkpoint.files().size(), std::size_t(2));
    QCOMPARE(checkpoint.tensorNames().size(), std::size_t(4));
    QVERIFY(!checkpoint.has("unlisted")); // the index decides what the checkpoint holds
    QCOMPARE(checkpoint.readMatrix("model.embed_tokens.weight")(3, 0), 7.0);
    QCOMPARE(checkpoint.readMatrix("model.layers.0.self_attn.q_proj.weight")(1, 1), 2.0);
    QCOMPARE(checkpoint.readVector("model.norm.weight")(0), 3.0);

    // A model.safetensors beside the index is the checkpoint, as Hugging Face's loader decides.
    writeSafetensors(dir.filePath(QStringLiteral("model.safetensors")).toStdString(),
                     {{"one", "F32", {1}, {1}}});
    QCOMPARE(Checkpoint::open(dir.path().toStdString()).tensorNames(), std::vector<std::string>{"one"});
}

void TestSafetensors::badCheckpointsRefused_data()
{
    QTest::addColumn<QString>("index"); // "" for no index
    QTest::addColumn<QString>("expected");
    QTest::newRow("no model files") << QString()
                                    << QStringLiteral(
                                           ": no model.safetensors or model.safetensors.index.json");
    QTest::newRow("missing shard") << QStringLiteral(R"({"weight_map": {"w": "other.safetensors"}})")
                                   << QStringLiteral("other.safetensors: cannot open: No such file");
    QTest::newRow("path traversal")
        << QStringLiteral(R"({"weight_map": {"w": "../shard.safetensors"}})")
        << QStringLiteral("tensor \"w\": shard \"../shard.safetensors\" is not a plain file name");
    QTest::newRow("subfolder") << QStringLiteral(R"({"weight_map": {"w": "sub/shard.safetensors"}})")
                               << QStringLiteral("is not a plain file name");
    QTest::newRow("absolute path") << QStringLiteral(R"({"weight_map": {"w": "/etc/passwd"}})")
                                   << QStringLiteral("is not a plain file name");
    QTest::newRow("dot dot") << QStringLiteral(R"({"weight_map": {"w": ".."}})")
                             << QStringLiteral("is not a plain file name");
    QTest::newRow("tensor not in its shard")
        << QStringLiteral(R"({"weight_map": {"w": "shard.safetensors", "v": "shard.safetensors"}})")
        << QStringLiteral("weight_map: tensor \"v\" is not in its shard \"shard.safetensors\"");
    QTest::newRow("no weight_map") << QStringLiteral(R"({"metadata": {}})")
                                   << QStringLiteral("expected a JSON object with \"weight_map\"");
    QTest::newRow("empty weight_map")
        << QStringLiteral(R"({"weight_map": {}})") << QStringLiteral("weight_map is empty");
    QTest::newRow("shard not a string") << QStringLiteral(R"({"weight_map": {"w": 1}})")
                                        << QStringLiteral("expected the name of a shard file");
    QTest::newRow("index not JSON") << QStringLiteral("{\"weight_map\": ")
                                    << QStringLiteral("not valid JSON");
    QTest::newRow("bad shard") << QStringLiteral(
                                      R"({"weight_map": {"w": "shard.safetensors", "x": "bad.safetensors"}})")
                               << QStringLiteral("bad.safetensors: the header length 1000 runs past the end");
}

void TestSafetensors::badCheckpointsRefused()
{
    QFETCH(QString, index);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    writeSafetensors(dir.filePath(QStringLiteral("shard.safetensors")).toStdString(),
                     {{"w", "F32", {1}, {1}}});
    writeFile(dir.filePath(QStringLiteral("bad.safetensors")), littleEndian(1000, 8) + "{}");
    if (!index.isEmpty())
        writeFile(dir.filePath(QStringLiteral("model.safetensors.index.json")), index.toStdString());
    const QString error = errorOf([&] { Checkpoint::open(dir.path().toStdString()); });
    QVERIFY2(error.startsWith(dir.path()) && error.contains(expected), qPrintable(error));
}

void TestSafetensors::gpt2Config()
{
    const ModelConfig c = parseModelConfig(::gpt2Config(), "config.json");
    QCOMPARE(c.modelType, std::string("gpt2"));
    QVERIFY(c.family == ModelFamily::Gpt2);
    QCOMPARE(c.hiddenSize, Index(768));
    QCOMPARE(c.heads, Index(12));
    QCOMPARE(c.kvHeads, Index(12));
    QCOMPARE(c.headDim, Index(64));
    QCOMPARE(c.layers, Index(12));
    QCOMPARE(c.intermediateSize, Index(3072)); // n_inner absent: 4 × n_embd
    QCOMPARE(c.vocabSize, Index(50257));
    QCOMPARE(c.maxPositions, Index(1024));
    QCOMPARE(c.normEpsilon, 1e-5);
    QCOMPARE(c.ropeTheta, 0.0);
    QVERIFY(c.qkvBias && c.outputBias && c.mlpBias);
    QCOMPARE(c.activation, std::string("gelu_new"));
    QCOMPARE(parseModelConfig(
                 replaced(::gpt2Config(), R"("n_head": 12,)", R"("n_head": 12, "n_inner": 1000,)"), "c")
                 .intermediateSize,
             Index(1000));

    QTemporaryDir dir;
    writeFile(dir.filePath(QStringLiteral("config.json")), ::gpt2Config());
    QCOMPARE(loadModelConfig(dir.path().toStdString()).layers, Index(12));
    QCOMPARE(loadModelConfig(dir.filePath(QStringLiteral("config.json")).toStdString()).heads, Index(12));
}

void TestSafetensors::llamaFamilyConfigs()
{
    const ModelConfig llama = parseModelConfig(llamaConfig(), "config.json");
    QVERIFY(llama.family == ModelFamily::Llama);
    QCOMPARE(llama.hiddenSize, Index(2048));
    QCOMPARE(llama.heads, Index(32));
    QCOMPARE(llama.kvHeads, Index(4));
    QCOMPARE(llama.groupSize(), Index(8));
    QCOMPARE(llama.headDim, Index(64));
    QCOMPARE(llama.layers, Index(22));
    QCOMPARE(llama.intermediateSize, Index(5632));
    QCOMPARE(llama.vocabSize, Index(32000));
    QCOMPARE(llama.maxPositions, Index(2048));
    QCOMPARE(llama.normEpsilon, 1e-5);
    QCOMPARE(llama.ropeTheta, 10000.0);
    QVERIFY(!llama.qkvBias && !llama.outputBias && !llama.mlpBias);
    QCOMPARE(llama.activation, std::string("silu"));

    // An old config without num_key_value_heads or rope_theta: one key/value head per query head, θ 10000.
    std::string old = replaced(llamaConfig(), R"("num_key_value_heads": 4,)", "");
    old = replaced(old, R"("rope_theta": 10000.0,)", "");
    const ModelConfig plain = parseModelConfig(old, "config.json");
    QCOMPARE(plain.kvHeads, Index(32));
    QCOMPARE(plain.ropeTheta, 10000.0);

    QVERIFY(llama.ropeScaling.type == RopeScalingType::None); // "rope_scaling": null
    // Llama 3.1's rope_scaling, and the older linear one under "type".
    const ModelConfig llama31 = parseModelConfig(
        replaced(llamaConfig(), R"("rope_scaling": null)",
                 R"("rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,)"
                 R"( "original_max_position_embeddings": 8192, "rope_type": "llama3"})"),
        "config.json");
    QVERIFY(llama31.ropeScaling == (RopeScaling{RopeScalingType::Llama3, 8.0, 1.0, 4.0, 8192.0}));
    const ModelConfig linear =
        parseModelConfig(replaced(llamaConfig(), R"("rope_scaling": null)",
                                  R"("rope_scaling": {"type": "linear", "factor": 2})"),
                         "config.json");
    QVERIFY(linear.ropeScaling.type == RopeScalingType::Linear && linear.ropeScaling.factor == 2.0);
    const ModelConfig plainDefault = parseModelConfig(
        replaced(llamaConfig(), R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "default"})"),
        "c");
    QVERIFY(plainDefault.ropeScaling.type == RopeScalingType::None);

    const ModelConfig biased = parseModelConfig(
        replaced(llamaConfig(), R"("attention_bias": false)", R"("attention_bias": true)"), "c");
    QVERIFY(biased.qkvBias && biased.outputBias);

    // Qwen2: q, k, v biases without a key saying so; head_dim given explicitly.
    std::string qwen = replaced(llamaConfig(), R"("model_type": "llama")",
                                R"("model_type": "qwen2", "head_dim": 128, "use_sliding_window": false)");
    qwen = replaced(qwen, R"("rope_theta": 10000.0)", R"("rope_theta": 1000000.0)");
    const ModelConfig qwen2 = parseModelConfig(qwen, "c");
    QVERIFY(qwen2.qkvBias && !qwen2.outputBias);
    QCOMPARE(qwen2.headDim, Index(128));
    QCOMPARE(qwen2.ropeTheta, 1e6);

    const ModelConfig mistral =
        parseModelConfig(replaced(llamaConfig(), R"("model_type": "llama")",
                                  R"("model_type": "mistral", "sliding_window": 4096)"),
                         "c");
    QCOMPARE(mistral.modelType, std::string("mistral"));
    QCOMPARE(mistral.slidingWindow, Index(4096));
    QCOMPARE(llama.slidingWindow, Index(0));
}

void TestSafetensors::badConfigsRefused_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    const auto gpt2 = [](const char* from, const char* to) {
        return QString::fromStdString(replaced(::gpt2Config(), from, to));
    };
    const auto llama = [](const char* from, const char* to) {
        return QString::fromStdString(replaced(llamaConfig(), from, to));
    };
    QTest::newRow("not JSON") << QStringLiteral("{") << QStringLiteral("config.json: not valid JSON");
    QTest::newRow("not an object") << QStringLiteral("[]")
                                   << QStringLiteral("config.json: expected a JSON object");
    QTest::newRow("no model_type") << gpt2(R"("model_type": "gpt2",)", "")
                                   << QStringLiteral("config.json: model_type: missing");
    QTest::newRow("unsupported model_type") << gpt2(R"("model_type": "gpt2")", R"("model_type": "bert")")
                                            << QStringLiteral("model_type: \"bert\" is not supported");
    QTest::newRow("missing n_head") << gpt2(R"("n_head": 12,)", "")
                                    << QStringLiteral("config.json: n_head: missing");
    QTest::newRow("n_embd a string")
        << gpt2(R"("n_embd": 768)", R"("n_embd": "768")")
        << QStringLiteral("n_embd: expected a positive whole number (at most 2147483648), found \"\"768\"\"");
    QTest::newRow("n_layer zero") << gpt2(R"("n_layer": 12)", R"("n_layer": 0)")
                                  << QStringLiteral("n_layer: expected a positive whole number");
    QTest::newRow("n_layer fraction") << gpt2(R"("n_layer": 12)", R"("n_layer": 1.5)")
                                      << QStringLiteral("n_layer: expected a positive whole number");
    QTest::newRow("vocab_size huge") << gpt2(R"("vocab_size": 50257)", R"("vocab_size": 1e30)")
                                     << QStringLiteral("vocab_size: expected a positive whole number");
    QTest::newRow("epsilon negative") << gpt2(R"("layer_norm_epsilon": 1e-05)", R"("layer_norm_epsilon": -1)")
                                      << QStringLiteral("layer_norm_epsilon: expected a positive number");
    QTest::newRow("n_embd not divisible") << gpt2(R"("n_embd": 768)", R"("n_embd": 770)")
                                          << QStringLiteral("n_embd 770 is not divisible by n_head 12");
    QTest::newRow("erf GELU") << gpt2(R"("activation_function": "gelu_new")",
                                      R"("activation_function": "gelu")")
                              << QStringLiteral("activation_function: \"gelu\" is not supported");
    QTest::newRow("inverse layer scaling")
        << gpt2(R"("n_ctx": 1024,)", R"("n_ctx": 1024, "scale_attn_by_inverse_layer_idx": true,)")
        << QStringLiteral("scale_attn_by_inverse_layer_idx: true");
    QTest::newRow("missing rms_norm_eps")
        << llama(R"("rms_norm_eps": 1e-05,)", "") << QStringLiteral("rms_norm_eps: missing");
    QTest::newRow("missing intermediate_size")
        << llama(R"("intermediate_size": 5632,)", "") << QStringLiteral("intermediate_size: missing");
    QTest::newRow("heads not divisible by kv heads")
        << llama(R"("num_key_value_heads": 4)", R"("num_key_value_heads": 5)")
        << QStringLiteral("num_attention_heads 32 is not divisible by num_key_value_heads 5");
    QTest::newRow("hidden not divisible by heads")
        << llama(R"("hidden_size": 2048)", R"("hidden_size": 2050)")
        << QStringLiteral("hidden_size 2050 is not divisible by num_attention_heads 32");
    QTest::newRow("rope_theta zero") << llama(R"("rope_theta": 10000.0)", R"("rope_theta": 0)")
                                     << QStringLiteral("rope_theta: expected a positive number");
    QTest::newRow("RoPE scaling yarn")
        << llama(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0})")
        << QStringLiteral("rope_scaling: \"{\"rope_type\":\"yarn\",\"factor\":4.0}\" is not supported");
    QTest::newRow("llama3 scaling incomplete")
        << llama(R"("rope_scaling": null)", R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0})")
        << QStringLiteral("rope_scaling.low_freq_factor: missing");
    QTest::newRow("llama3 scaling high below low")
        << llama(R"("rope_scaling": null)",
                 R"("rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,)"
                 R"( "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})")
        << QStringLiteral("rope_scaling.high_freq_factor: expected more than low_freq_factor");
    QTest::newRow("linear scaling factor zero")
        << llama(R"("rope_scaling": null)", R"("rope_scaling": {"type": "linear", "factor": 0})")
        << QStringLiteral("rope_scaling.factor: expected a positive number");
    QTest::newRow("GELU in LLaMA") << llama(R"("hidden_act": "silu")", R"("hidden_act": "gelu")")
                                   << QStringLiteral("hidden_act: \"gelu\" is not supported");
    QTest::newRow("attention_bias not a flag")
        << llama(R"("attention_bias": false)", R"("attention_bias": "no")")
        << QStringLiteral("attention_bias: expected true or false");
    QTest::newRow("key repeated") << llama(R"("hidden_size": 2048,)",
                                           R"("hidden_size": 2048, "hidden_size": 4096,)")
                                  << QStringLiteral("\"hidden_size\": the key appears twice");
}

void TestSafetensors::badConfigsRefused()
{
    QFETCH(QString, text);
    QFETCH(QString, expected);
    const QString error = errorOf([&] { parseModelConfig(text.toStdString(), "config.json"); });
    QVERIFY2(error.startsWith(QStringLiteral("config.json: ")) && error.contains(expected),
             qPrintable(error));
}

QKV_TEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
