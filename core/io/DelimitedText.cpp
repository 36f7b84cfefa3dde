// SPDX-License-Identifier: GPL-3.0-or-later
#include "DelimitedText.h"

#include "Error.h"
#include "QuotedExcerpt.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <system_error>
#include <vector>

namespace qkv {

namespace {

[[noreturn]] void refuseAt(std::size_t line, std::size_t column, const std::string& problem)
{
    throw Error("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + problem);
}

bool isBlank(std::string_view line)
{
    return line.find_first_not_of(" \t") == std::string_view::npos;
}

std::string_view trimmed(std::string_view text)
{
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string_view::npos)
        return {};
    const auto last = text.find_last_not_of(" \t");
    return text.substr(first, last - first + 1);
}

double parseNumber(std::string_view field, char separator, std::size_t line, std::size_t column)
{
    const std::string_view value = trimmed(field);
    if (value.empty())
        refuseAt(line, column, "empty value (expected a number)");
    std::string_view digits = value;
    // std::from_chars takes a leading '-' but not a '+'.
    if (digits.size() > 1 && digits.front() == '+' && digits[1] != '-' && digits[1] != '+')
        digits.remove_prefix(1);
    double number = 0.0;
    const char* const end = digits.data() + digits.size();
    const std::from_chars_result result = std::from_chars(digits.data(), end, number);
    if (result.ec == std::errc::result_out_of_range && result.ptr == end)
        refuseAt(line, column, quotedExcerpt(value) + " is out of the range of a double");
    if (result.ec != std::errc() || result.ptr != end) {
        std::string problem = quotedExcerpt(value) + " is not a number";
        if (separator != ',' && value.find(',') != std::string_view::npos)
            problem += " (write the decimal point as '.')";
        refuseAt(line, column, problem);
    }
    if (!std::isfinite(number))
        refuseAt(line, column, quotedExcerpt(value) + " is not a finite number");
    return number;
}

std::vector<std::string_view> splitLines(std::string_view text)
{
    std::vector<std::string_view> lines;
    while (true) {
        const auto lineBreak = text.find_first_of("\r\n");
        if (lineBreak == std::string_view::npos) {
            lines.push_back(text);
            return lines;
        }
        lines.push_back(text.substr(0, lineBreak));
        const bool crlf =
            text[lineBreak] == '\r' && lineBreak + 1 < text.size() && text[lineBreak + 1] == '\n';
        text.remove_prefix(lineBreak + (crlf ? 2 : 1));
    }
}

std::vector<std::string_view> splitFields(std::string_view line, char separator)
{
    std::vector<std::string_view> fields;
    while (true) {
        const auto at = line.find(separator);
        if (at == std::string_view::npos) {
            fields.push_back(line);
            return fields;
        }
        fields.push_back(line.substr(0, at));
        line.remove_prefix(at + 1);
    }
}

} // namespace

Matrix parseDelimited(const std::string& text)
{
    std::string_view rest(text);
    if (rest.substr(0, 3) == "\xEF\xBB\xBF")
        rest.remove_prefix(3); // a UTF-8 byte order mark, as some spreadsheets write
    const std::vector<std::string_view> lines = splitLines(rest);
    std::size_t first = 0, last = lines.size();
    while (first < last && isBlank(lines[first]))
        ++first;
    while (last > first && isBlank(lines[last - 1]))
        --last;
    if (first == last)
        refuseAt(1, 1, "no numbers (the text is empty)");

    const std::string_view firstLine = lines[first];
    const char separator = firstLine.find('\t') != std::string_view::npos  ? '\t'
                           : firstLine.find(';') != std::string_view::npos ? ';'
                                                                           : ',';
    std::vector<double> values;
    Index rows = 0;
    std::size_t cols = 0;
    for (std::size_t i = first; i < last; ++i) {
        const std::size_t lineNumber = i + 1;
        if (isBlank(lines[i]))
            refuseAt(lineNumber, 1, "blank line inside the matrix (the rows must be on consecutive lines)");
        if (rows == maxMatrixSide)
            refuseAt(lineNumber, 1, "more than " + maxMatrixSideText + " rows");
        const std::vector<std::string_view> fields = splitFields(lines[i], separator);
        if (fields.size() > static_cast<std::size_t>(maxMatrixSide))
            refuseAt(lineNumber, static_cast<std::size_t>(maxMatrixSide) + 1,
                     "more than " + maxMatrixSideText + " values");
        if (rows == 0) {
            cols = fields.size();
            values.reserve(cols *
                           std::min<std::size_t>(last - first, static_cast<std::size_t>(maxMatrixSide)));
        } else if (fields.size() != cols) {
            std::string problem = std::to_string(fields.size()) + " values on this line, but " +
                                  std::to_string(cols) + " on line " + std::to_string(first + 1);
            if (fields.size() > cols && isBlank(fields.back()))
                problem += " (the line ends with a separator)";
            refuseAt(lineNumber, std::min(fields.size(), cols) + 1, problem);
        }
        for (std::size_t c = 0; c < fields.size(); ++c)
            values.push_back(parseNumber(fields[c], separator, lineNumber, c + 1));
        ++rows;
    }
    Matrix m(rows, static_cast<Index>(cols));
    std::copy(values.begin(), values.end(), m.data()); // row-major, as the values were read
    return m;
}

std::string formatDelimited(const Matrix& m, char separator)
{
    std::string out;
    out.reserve(static_cast<std::size_t>(m.size()) * 20);
    char buffer[64];
    for (Index r = 0; r < m.rows(); ++r) {
        for (Index c = 0; c < m.cols(); ++c) {
            if (c > 0)
                out += separator;
            const std::to_chars_result result = std::to_chars(buffer, buffer + sizeof buffer, m(r, c));
            out.append(buffer, result.ptr);
        }
        out += '\n';
    }
    return out;
}

} // namespace qkv
