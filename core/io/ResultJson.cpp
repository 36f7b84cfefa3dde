// SPDX-License-Identifier: GPL-3.0-or-later
#include "ResultJson.h"

#include "Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace qkv {

namespace {

/// Text into a fixed buffer, handed to the stream when full. Formats numbers exactly as nlohmann/json's
/// dump does, so the output is the same bytes as the document tree it replaces.
class JsonStreamWriter {
public:
    explicit JsonStreamWriter(std::ostream& out) : out_(out) {}

    void text(std::string_view chunk)
    {
        while (!chunk.empty()) {
            if (used_ == buffer_.size())
                flush();
            const std::size_t count = std::min(chunk.size(), buffer_.size() - used_);
            std::memcpy(buffer_.data() + used_, chunk.data(), count);
            used_ += count;
            chunk.remove_prefix(count);
        }
    }

    void indent(int depth) { text(std::string_view(spaces, static_cast<std::size_t>(depth) * 2)); }

    /// `"name": ` on a new line of an object at `depth`, with the separator from the previous key.
    void key(int depth, std::string_view name, bool first = false)
    {
        text(first ? "\n" : ",\n");
        indent(depth + 1);
        text("\"");
        text(name); // the names written here need no escaping
        text("\": ");
    }

    /// As nlohmann/json's serializer: grisu2 shortest round-trip ("1.0", "0.1", "1e+300"), "null" when
    /// not finite.
    void number(double value)
    {
        if (!std::isfinite(value)) {
            text("null");
            return;
        }
        reserve(maxNumberLength);
        char* begin = buffer_.data() + used_;
        used_ += static_cast<std::size_t>(nlohmann::detail::to_chars(begin, begin + maxNumberLength, value) -
                                          begin);
    }

    void number(long long value)
    {
        reserve(maxNumberLength);
        char* begin = buffer_.data() + used_;
        used_ += static_cast<std::size_t>(std::to_chars(begin, begin + maxNumberLength, value).ptr - begin);
    }

    void flush()
    {
        if (used_ == 0)
            return;
        errno = 0;
        out_.write(buffer_.data(), static_cast<std::streamsize>(used_));
        used_ = 0;
        check();
    }

    void finish()
    {
        flush();
        errno = 0;
        out_.flush();
        check();
    }

private:
    static constexpr std::size_t maxNumberLength = 64;                        // nlohmann's own number buffer
    static constexpr const char* spaces = "                                "; // 16 levels

    void reserve(std::size_t count)
    {
        if (buffer_.size() - used_ < count)
            flush();
    }

    void check() const
    {
        if (!out_) {
            // The stream does not say why; errno does when it writes to a file or pipe (std::cout).
            const int error = errno;
            throw Error(std::string("cannot write") +
                        (error != 0 ? ": " + std::string(std::strerror(error)) : ""));
        }
    }

    std::ostream& out_;
    std::array<char, 65536> buffer_{};
    std::size_t used_ = 0;
};

/// A matrix at `depth` as an array of rows, each on one line: what json::prettyJson writes for it.
template <typename Derived>
void writeMatrix(JsonStreamWriter& w, const Eigen::MatrixBase<Derived>& m, int depth)
{
    if (m.rows() == 0) {
        w.text("[]");
        return;
    }
    w.text("[");
    for (Index r = 0; r < m.rows(); ++r) {
        w.text(r > 0 ? ",\n" : "\n");
        w.indent(depth + 1);
        w.text("[");
        for (Index c = 0; c < m.cols(); ++c) {
            if (c > 0)
                w.text(", ");
            if constexpr (std::is_floating_point_v<typename Derived::Scalar>)
                w.number(static_cast<double>(m(r, c)));
            else
                w.number(static_cast<long long>(m(r, c)));
        }
        w.text("]");
    }
    w.text("\n");
    w.indent(depth);
    w.text("]");
}

void writeRowStats(JsonStreamWriter& w, const std::vector<RowStats>& stats, int depth)
{
    if (stats.empty()) {
        w.text("[]");
        return;
    }
    w.text("[");
    for (std::size_t i = 0; i < stats.size(); ++i) {
        w.text(i > 0 ? ",\n" : "\n");
        w.indent(depth + 1);
        w.text("{");
        w.key(depth + 1, "entropy", true);
        w.number(stats[i].entropy);
        w.key(depth + 1, "support");
        w.number(static_cast<long long>(stats[i].support));
        w.key(depth + 1, "max");
        w.number(stats[i].max);
        w.key(depth + 1, "sum");
        w.number(stats[i].sum);
        w.text("\n");
        w.indent(depth + 1);
        w.text("}");
    }
    w.text("\n");
    w.indent(depth);
    w.text("]");
}

void writeHead(JsonStreamWriter& w, const HeadResult& head, int depth)
{
    w.text("{");
    const std::pair<const char*, const Matrix*> matrices[] = {
        {"Q", &head.Q}, {"K", &head.K}, {"V", &head.V}, {"scores", &head.scores}, {"scaled", &head.scaled}};
    bool first = true;
    for (const auto& [name, matrix] : matrices) {
        w.key(depth, name, first);
        first = false;
        writeMatrix(w, *matrix, depth + 1);
    }
    w.key(depth, "allowed");
    writeMatrix(w, head.allowed, depth + 1);
    w.key(depth, "weights");
    writeMatrix(w, head.weights, depth + 1);
    w.key(depth, "output");
    writeMatrix(w, head.output, depth + 1);
    w.key(depth, "row_stats");
    writeRowStats(w, head.rowStats, depth + 1);
    w.key(depth, "empty_rows");
    w.text("[");
    for (std::size_t i = 0; i < head.emptyRows.size(); ++i) {
        if (i > 0)
            w.text(", ");
        w.number(static_cast<long long>(head.emptyRows[i]));
    }
    w.text("]\n");
    w.indent(depth);
    w.text("}");
}

} // namespace

void writeResultJson(const AttentionResult& result, std::ostream& out)
{
    JsonStreamWriter w(out);
    w.text("{");
    w.key(0, "heads", true);
    if (result.heads.empty()) {
        w.text("[]");
    } else {
        w.text("[");
        for (std::size_t h = 0; h < result.heads.size(); ++h) {
            w.text(h > 0 ? ",\n" : "\n");
            w.indent(2);
            writeHead(w, result.heads[h], 2);
        }
        w.text("\n");
        w.indent(1);
        w.text("]");
    }
    w.key(0, "concat");
    writeMatrix(w, result.concat, 1);
    w.key(0, "output");
    writeMatrix(w, result.output, 1);
    w.key(0, "precision");
    w.text(nlohmann::ordered_json(toString(result.precision)).dump());
    w.text("\n}\n");
    w.finish();
}

} // namespace qkv
