// SPDX-License-Identifier: GPL-3.0-or-later
#include "NpyFile.h"

#include "Error.h"
#include "QuotedExcerpt.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace qkv {

namespace {

constexpr char npyMagic[] = "\x93NUMPY";
constexpr std::size_t npyMagicLength = 6;

[[noreturn]] void refuseNpy(const std::string& problem)
{
    throw Error(problem);
}

/// The part of Python's literal syntax that .npy headers use: a dict with string keys whose values are
/// strings, whole numbers, True/False/None and tuples or lists of those.
struct PyValue {
    enum class Kind { None, Boolean, Integer, String, Sequence, Dictionary };
    Kind kind = Kind::None;
    bool boolean = false;
    bool negative = false;
    bool huge = false;             ///< a whole number too large to matter (> 10^15)
    std::uint64_t magnitude = 0;   ///< a whole number's absolute value
    std::string text;              ///< a string
    std::vector<PyValue> items;    ///< a sequence's items, or a dictionary's values
    std::vector<std::string> keys; ///< a dictionary's keys (the last of equal keys wins)

    const PyValue* find(const std::string& key) const
    {
        for (std::size_t i = keys.size(); i-- > 0;)
            if (keys[i] == key)
                return &items[i];
        return nullptr;
    }
};

class HeaderParser {
public:
    explicit HeaderParser(std::string_view text) : text_(text) {}

    PyValue parse()
    {
        PyValue value = parseValue(0);
        skipSpace();
        if (pos_ != text_.size())
            fail("unexpected " + quotedExcerpt(text_.substr(pos_, 1)) + " after the dictionary");
        return value;
    }

private:
    [[noreturn]] void fail(const std::string& problem) const
    {
        refuseNpy("the .npy header does not parse: " + problem + " at character " + std::to_string(pos_ + 1) +
                  " of " + quotedExcerpt(text_));
    }

    void skipSpace()
    {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
            ++pos_;
    }

    bool take(char c)
    {
        skipSpace();
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    static bool isDigit(char c) { return c >= '0' && c <= '9'; }
    static bool isLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

    PyValue parseValue(int depth)
    {
        if (depth > 16)
            fail("nested too deeply");
        skipSpace();
        if (pos_ >= text_.size())
            fail("unexpected end");
        const char c = text_[pos_];
        if (c == '\'' || c == '"')
            return parseString();
        if (c == '(')
            return parseSequence(')', depth);
        if (c == '[')
            return parseSequence(']', depth);
        if (c == '{')
            return parseDictionary(depth);
        if (c == '-' || c == '+' || isDigit(c))
            return parseInteger();
        if (isLetter(c)) {
            const std::size_t start = pos_;
            while (pos_ < text_.size() && (isLetter(text_[pos_]) || isDigit(text_[pos_])))
                ++pos_;
            const std::string_view word = text_.substr(start, pos_ - start);
            PyValue value;
            if (word == "True" || word == "False") {
                value.kind = PyValue::Kind::Boolean;
                value.boolean = word == "True";
            } else if (word != "None") {
                pos_ = start;
                fail("unexpected " + quotedExcerpt(word));
            }
            return value;
        }
        fail("unexpected " + quotedExcerpt(text_.substr(pos_, 1)));
    }

    PyValue parseString()
    {
        const char quote = text_[pos_++];
        PyValue value;
        value.kind = PyValue::Kind::String;
        while (true) {
            if (pos_ >= text_.size())
                fail("a string without its closing quote");
            char c = text_[pos_++];
            if (c == quote)
                return value;
            if (c == '\\') {
                if (pos_ >= text_.size())
                    fail("a string without its closing quote");
                c = text_[pos_++];
            }
            value.text += c;
        }
    }

    PyValue parseInteger()
    {
        PyValue value;
        value.kind = PyValue::Kind::Integer;
        if (text_[pos_] == '-' || text_[pos_] == '+')
            value.negative = text_[pos_++] == '-';
        if (pos_ >= text_.size() || !isDigit(text_[pos_]))
            fail("expected a digit");
        while (pos_ < text_.size() && isDigit(text_[pos_])) {
            if (value.magnitude > 1000000000000000ull)
                value.huge = true;
            else
                value.magnitude = value.magnitude * 10 + static_cast<std::uint64_t>(text_[pos_] - '0');
            ++pos_;
        }
        if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l'))
            ++pos_; // Python 2 long, as in "(3L, 4L)"
        if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
            fail("expected a whole number");
        return value;
    }

    PyValue parseSequence(char close, int depth)
    {
        ++pos_;
        PyValue value;
        value.kind = PyValue::Kind::Sequence;
        if (take(close))
            return value;
        while (true) {
            value.items.push_back(parseValue(depth + 1));
            if (take(close))
                return value;
            if (!take(','))
                fail(std::string("expected ',' or '") + close + "'");
            if (take(close))
                return value;
        }
    }

    PyValue parseDictionary(int depth)
    {
        ++pos_;
        PyValue value;
        value.kind = PyValue::Kind::Dictionary;
        if (take('}'))
            return value;
        while (true) {
            skipSpace();
            if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
                fail("expected a quoted key");
            value.keys.push_back(parseString().text);
            if (!take(':'))
                fail("expected ':'");
            value.items.push_back(parseValue(depth + 1));
            if (take('}'))
                return value;
            if (!take(','))
                fail("expected ',' or '}'");
            if (take('}'))
                return value;
        }
    }

    std::string_view text_;
    std::size_t pos_ = 0;
};

std::string shapeText(const std::vector<std::uint64_t>& shape)
{
    std::string text = "(";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i > 0 ? ", " : "") + std::to_string(shape[i]);
    return text + (shape.size() == 1 ? ",)" : ")");
}

/// Why a dtype other than '<f4' and '<f8' is refused, with what to do about it.
std::string unsupportedDtype(const std::string& descr)
{
    const std::string advice =
        "; QKV Lab reads float64 '<f8' and float32 '<f4' (convert with a.astype('<f8'))";
    const char order = descr.empty() ? '\0' : descr.front();
    const std::string code =
        (order == '<' || order == '>' || order == '|' || order == '=') ? descr.substr(1) : descr;
    if (order == '>' && (code == "f8" || code == "f4"))
        return "big-endian " + std::string(code == "f8" ? "float64" : "float32") + " ('" + descr +
               "') is not supported" + advice;
    std::string kind;
    switch (code.empty() ? '\0' : code.front()) {
    case 'i':
        kind = "signed integers";
        break;
    case 'u':
        kind = "unsigned integers";
        break;
    case 'b':
        kind = "booleans";
        break;
    case 'c':
        kind = "complex numbers";
        break;
    case 'f':
        kind = "floating point of another size";
        break;
    case 'O':
        kind = "Python objects";
        break;
    case 'U':
        kind = "Unicode strings";
        break;
    case 'S':
        kind = "byte strings";
        break;
    case 'V':
        kind = "raw bytes";
        break;
    case 'M':
        kind = "dates";
        break;
    case 'm':
        kind = "time spans";
        break;
    default:
        kind = "unknown";
        break;
    }
    return "unsupported data type '" + descr + "' (" + kind + ")" + advice;
}

std::uint64_t readLittleEndian(const unsigned char* bytes, int count)
{
    std::uint64_t value = 0;
    for (int i = count - 1; i >= 0; --i)
        value = (value << 8) | bytes[i];
    return value;
}

void appendLittleEndian(std::string& out, std::uint64_t value, int count)
{
    for (int i = 0; i < count; ++i) {
        out += static_cast<char>(value & 0xFF);
        value >>= 8;
    }
}

} // namespace

Matrix parseNpy(const std::string& bytes)
{
    if (bytes.size() < npyMagicLength || bytes.compare(0, npyMagicLength, npyMagic, npyMagicLength) != 0)
        refuseNpy("not a NumPy .npy file (it does not start with \\x93NUMPY)");
    if (bytes.size() < npyMagicLength + 2)
        refuseNpy("truncated .npy file: the format version is missing");
    const auto major = static_cast<unsigned char>(bytes[6]), minor = static_cast<unsigned char>(bytes[7]);
    if (major < 1 || major > 3 || minor != 0)
        refuseNpy("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                  " (QKV Lab reads versions 1.0, 2.0 and 3.0)");
    const auto* const data = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t lengthSize = major == 1 ? 2 : 4;
    const std::size_t headerStart = npyMagicLength + 2 + lengthSize;
    if (bytes.size() < headerStart)
        refuseNpy("truncated .npy file: the header length is missing");
    const std::uint64_t headerLength = readLittleEndian(data + 8, static_cast<int>(lengthSize));
    if (headerLength > bytes.size() - headerStart)
        refuseNpy("truncated .npy file: the header is " + std::to_string(headerLength) +
                  " bytes long, but only " + std::to_string(bytes.size() - headerStart) + " bytes follow");
    const std::size_t dataStart = headerStart + static_cast<std::size_t>(headerLength);

    const PyValue header =
        HeaderParser(std::string_view(bytes).substr(headerStart, static_cast<std::size_t>(headerLength)))
            .parse();
    if (header.kind != PyValue::Kind::Dictionary)
        refuseNpy("the .npy header is not a dictionary");
    for (const char* key : {"descr", "fortran_order", "shape"})
        if (!header.find(key))
            refuseNpy(std::string("the .npy header has no '") + key + "'");
    const PyValue& descrValue = *header.find("descr");
    if (descrValue.kind != PyValue::Kind::String)
        refuseNpy("unsupported data type: the .npy file holds structured records, not plain numbers");
    const std::string& descr = descrValue.text;
    std::size_t itemSize = 0;
    if (descr == "<f8")
        itemSize = 8;
    else if (descr == "<f4")
        itemSize = 4;
    else
        refuseNpy(unsupportedDtype(descr));
    const PyValue& fortranValue = *header.find("fortran_order");
    if (fortranValue.kind != PyValue::Kind::Boolean)
        refuseNpy("the .npy header's 'fortran_order' is not True or False");
    const bool fortranOrder = fortranValue.boolean;
    const PyValue& shapeValue = *header.find("shape");
    if (shapeValue.kind != PyValue::Kind::Sequence)
        refuseNpy("the .npy header's 'shape' is not a tuple");
    std::vector<std::uint64_t> shape;
    for (const PyValue& dimension : shapeValue.items) {
        if (dimension.kind != PyValue::Kind::Integer || (dimension.negative && dimension.magnitude > 0))
            refuseNpy("the .npy header's 'shape' is not a tuple of whole numbers ≥ 0");
        shape.push_back(dimension.huge ? std::uint64_t(1) << 62 : dimension.magnitude);
    }
    if (shape.empty())
        refuseNpy("shape () is a single number, not a matrix");
    if (shape.size() > 2)
        refuseNpy("shape " + shapeText(shape) + " has " + std::to_string(shape.size()) +
                  " dimensions; a matrix has 2 (or 1 for a single row)");
    for (const std::uint64_t dimension : shape)
        if (dimension == 0)
            refuseNpy("shape " + shapeText(shape) +
                      " is empty; a matrix needs at least one row and one column");
    for (const std::uint64_t dimension : shape)
        if (dimension > static_cast<std::uint64_t>(maxMatrixSide))
            refuseNpy("shape " + shapeText(shape) + " is larger than " + maxMatrixSideText + " × " +
                      maxMatrixSideText);
    const auto rows = static_cast<Index>(shape.size() == 2 ? shape[0] : 1);
    const auto cols = static_cast<Index>(shape.back());

    const std::uint64_t needed = static_cast<std::uint64_t>(rows * cols) * itemSize;
    const std::uint64_t present = bytes.size() - dataStart;
    if (present != needed) {
        const std::string what = "shape " + shapeText(shape) + " of '" + descr + "' needs " +
                                 std::to_string(needed) + " bytes of data, the file has " +
                                 std::to_string(present);
        refuseNpy(present < needed ? "truncated .npy file: " + what
                                   : "the data does not fit the shape: " + what);
    }

    Matrix m(rows, cols);
    const unsigned char* item = data + dataStart;
    for (Index k = 0; k < rows * cols; ++k, item += itemSize) {
        double value = 0.0;
        if (itemSize == 8) {
            const std::uint64_t bits = readLittleEndian(item, 8);
            std::memcpy(&value, &bits, sizeof value);
        } else {
            const auto bits = static_cast<std::uint32_t>(readLittleEndian(item, 4));
            float single = 0.0f;
            std::memcpy(&single, &bits, sizeof single);
            value = static_cast<double>(single);
        }
        const Index r = fortranOrder ? k % rows : k / cols;
        const Index c = fortranOrder ? k / rows : k % cols;
        if (!std::isfinite(value)) {
            const std::string index =
                shape.size() == 2 ? std::to_string(r) + ", " + std::to_string(c) : std::to_string(c);
            refuseNpy("row " + std::to_string(r + 1) + ", column " + std::to_string(c + 1) + " (index [" +
                      index + "]): " + (std::isnan(value) ? "NaN" : "infinity") +
                      " is not allowed (every value must be a finite number)");
        }
        m(r, c) = value;
    }
    return m;
}

std::string formatNpy(const Matrix& m)
{
    // As numpy.lib.format writes version 1.0: magic, version, a 2-byte little-endian header length, then the
    // header padded with spaces and ending in '\n' so that the data starts at a multiple of 64 bytes.
    constexpr std::size_t preamble = npyMagicLength + 2 + 2;
    constexpr std::size_t align = 64;
    std::string dictionary = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                             std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "), }";
    const std::size_t withNewline = dictionary.size() + 1;
    const std::size_t padding = align - (preamble + withNewline) % align;
    const std::size_t headerLength = withNewline + padding;

    std::string out;
    out.reserve(preamble + headerLength + static_cast<std::size_t>(m.size()) * 8);
    out.append(npyMagic, npyMagicLength);
    out += '\x01';
    out += '\x00';
    appendLittleEndian(out, headerLength, 2);
    out += dictionary;
    out.append(padding, ' ');
    out += '\n';
    for (Index r = 0; r < m.rows(); ++r)
        for (Index c = 0; c < m.cols(); ++c) {
            std::uint64_t bits = 0;
            const double value = m(r, c);
            std::memcpy(&bits, &value, sizeof bits);
            appendLittleEndian(out, bits, 8);
        }
    return out;
}

} // namespace qkv
