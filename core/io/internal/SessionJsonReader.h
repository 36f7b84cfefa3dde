// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to core (SessionFileReader.cpp): the session file's JSON read from the parser's events
// (Json::sax_parse) into the document tree Json::parse would build, except that the matrices of a session go
// straight into Eigen storage as they come and the tree holds placeholders for them: a 4096 × 4096 matrix
// takes its 128 MiB, not a tree node per number.

#include "EigenTypes.h"
#include "Error.h"
#include "JsonText.h"
#include "SessionFile.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace qkv::json {

/// The matrices parseSession read straight into Eigen storage, which the document tree holds as binary
/// placeholders (a value JSON text cannot produce): subtype 1 for `numbers`, 2 for `masks`, the index in
/// the bytes.
struct CompactMatrices {
    std::vector<Matrix> numbers;
    std::vector<MaskMatrix> masks;
};

enum class Compact : std::uint8_t { Numbers = 1, Mask = 2 };

inline Json placeholder(Compact kind, std::size_t index)
{
    std::vector<std::uint8_t> bytes(sizeof index);
    std::memcpy(bytes.data(), &index, sizeof index);
    return Json::binary(std::move(bytes), static_cast<std::uint8_t>(kind));
}

/// The index of the matrix a placeholder of `kind` stands for (none when `value` is not one).
inline std::optional<std::size_t> placeholderIndex(const Json& value, Compact kind)
{
    if (!value.is_binary() || value.get_binary().subtype() != static_cast<std::uint8_t>(kind) ||
        value.get_binary().size() != sizeof(std::size_t))
        return std::nullopt;
    std::size_t index = 0;
    std::memcpy(&index, value.get_binary().data(), sizeof index);
    return index;
}

/// The document tree of a session file, built from parser events as Json::parse builds it.
class TreeBuilder {
public:
    explicit TreeBuilder(Json& root) : root_(root) {}

    Json& add(Json&& value)
    {
        if (open_.empty()) {
            root_ = std::move(value);
            return root_;
        }
        Json& parent = *open_.back();
        if (parent.is_array()) {
            parent.push_back(std::move(value));
            return parent.back();
        }
        *slot_ = std::move(value); // a repeated key keeps its first place and takes the last value
        return *slot_;
    }
    void open(Json&& container) { open_.push_back(&add(std::move(container))); }
    void key(const std::string& name) { slot_ = &(*open_.back())[name]; }
    void close() { open_.pop_back(); }

private:
    Json& root_;
    std::vector<Json*> open_; // the containers being filled, innermost last
    Json* slot_ = nullptr;    // the value of the key just read
};

/// The rows of one matrix read into Eigen storage as they come: row 0 into a vector, whose length fixes
/// the width, then every row straight into a row-major matrix whose row capacity doubles. Growing is a
/// realloc, which moves a large block's pages instead of copying them, so the peak is the matrix itself.
template <typename Scalar> class RowCollector {
public:
    using Storage = Eigen::Matrix<Scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

    void clear()
    {
        rows_ = cols_ = filled_ = 0;
        std::vector<Scalar>().swap(first_);
        storage_.resize(0, 0);
    }
    void startRow() { filled_ = 0; }
    /// False when the row is longer than row 0.
    bool add(Scalar value)
    {
        if (rows_ == 0) {
            first_.push_back(value);
            ++filled_;
            return true;
        }
        if (filled_ == cols_)
            return false;
        if (rows_ == storage_.rows())
            storage_.conservativeResize(2 * rows_, cols_);
        storage_(rows_, filled_++) = value;
        return true;
    }
    /// False when row 0 is empty or a later row shorter than it.
    bool endRow()
    {
        if (rows_ == 0) {
            if (first_.empty())
                return false;
            cols_ = static_cast<Index>(first_.size());
            storage_.resize(1, cols_);
            std::copy(first_.begin(), first_.end(), storage_.data());
            std::vector<Scalar>().swap(first_);
        } else if (filled_ != cols_) {
            return false;
        }
        ++rows_;
        return true;
    }
    Index rows() const { return rows_; }
    Index cols() const { return cols_; }
    /// Entries of the row being read so far.
    Index filled() const { return filled_; }
    /// Entry c of row r (r == rows(): the row being read).
    Scalar at(Index r, Index c) const
    {
        return rows_ == 0 ? first_[static_cast<std::size_t>(c)] : storage_(r, c);
    }
    Storage take()
    {
        storage_.conservativeResize(rows_, cols_);
        Storage matrix = std::move(storage_);
        clear();
        return matrix;
    }

private:
    Index rows_ = 0;   // complete rows
    Index cols_ = 0;   // row 0's length, once complete
    Index filled_ = 0; // entries of the row being read
    std::vector<Scalar> first_;
    Storage storage_;
};

/// The SAX handler of parseSession. It builds the document tree Json::parse would, with two differences.
/// It keeps the key path of the value being read, for messages, and refuses nesting deeper than
/// maxSessionNesting. And a matrix where a session has one (X, context.Z, a head's W_Q, W_K, W_V, W_S, W_a
/// and U_a, W_O: numbers; mask.allowed: 0, 1, true or false) goes straight into Eigen storage, 8 bytes a
/// number (1 for the mask) instead of a tree node a number, and the tree gets a placeholder: a 4096 × 4096
/// matrix takes its 128 MiB, not gigabytes. The first value that breaks the pattern (a ragged row, a
/// string, an empty row) replays what was collected into the tree and the rest follows it there, so the
/// readers see what Json::parse gives and refuse it with the same message.
class SessionJsonReader {
public:
    using number_integer_t = Json::number_integer_t;
    using number_unsigned_t = Json::number_unsigned_t;
    using number_float_t = Json::number_float_t;
    using string_t = Json::string_t;
    using binary_t = Json::binary_t;

    SessionJsonReader(Json& root, CompactMatrices& compact) : tree_(root), compact_(compact) {}

    bool null() { return value(Json(nullptr)); }
    bool boolean(bool flag)
    {
        if (inRow_ && kind_ == Compact::Mask && mask_.add(static_cast<std::uint8_t>(flag ? 1 : 0)))
            return counted();
        return value(Json(flag));
    }
    bool number_integer(number_integer_t number) { return numberValue(number); }
    bool number_unsigned(number_unsigned_t number) { return numberValue(number); }
    bool number_float(number_float_t number, const string_t& /*text*/) { return numberValue(number); }
    bool string(string_t& text) { return value(Json(std::move(text))); }
    bool binary(binary_t& bytes) { return value(Json(std::move(bytes))); }

    bool start_object(std::size_t /*elements*/)
    {
        enter(false);
        if (collecting_)
            replay();
        tree_.open(Json::object());
        return true;
    }
    bool key(string_t& name)
    {
        tree_.key(name);
        containers_.back().key = std::move(name);
        return true;
    }
    bool end_object()
    {
        tree_.close();
        return leave();
    }

    bool start_array(std::size_t /*elements*/)
    {
        const std::optional<Compact> matrix = collecting_ ? std::nullopt : matrixHere();
        enter(true);
        if (collecting_ && !inRow_) { // a row of the matrix being collected
            inRow_ = true;
            if (kind_ == Compact::Numbers)
                numbers_.startRow();
            else
                mask_.startRow();
            return true;
        }
        if (collecting_)
            replay();
        if (matrix) {
            collecting_ = true;
            kind_ = *matrix;
            return true;
        }
        tree_.open(Json::array());
        return true;
    }
    bool end_array()
    {
        if (collecting_ && inRow_) {
            if (kind_ == Compact::Numbers ? numbers_.endRow() : mask_.endRow()) {
                inRow_ = false;
                return leave();
            }
            replay(); // an empty or short row: the tree gets it as it is
        } else if (collecting_) {
            if (collectedRows() > 0) {
                collecting_ = false;
                tree_.add(kind_ == Compact::Numbers ? store(compact_.numbers, numbers_)
                                                    : store(compact_.masks, mask_));
                return leave();
            }
            replay(); // []
        }
        tree_.close();
        return leave();
    }

    template <class Exception>
    bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e)
    {
        throw e;
    }

    /// The key path of the value being read ("heads[1].W_K[2][0]"); a deep one is cut short after its
    /// first steps.
    std::string currentPath() const
    {
        constexpr std::size_t shownSteps = 8;
        std::string path;
        for (std::size_t i = 0; i < containers_.size() && i < shownSteps; ++i) {
            const Open& o = containers_[i];
            path += o.isArray ? "[" + std::to_string(o.count) + "]" : (path.empty() ? "" : ".") + o.key;
        }
        if (containers_.size() > shownSteps)
            path += "…";
        return path.empty() ? std::string("(file)") : path;
    }

private:
    struct Open {
        bool isArray;
        std::string key;       // object: the key being read
        std::size_t count = 0; // array: elements read so far
    };

    void enter(bool isArray)
    {
        if (containers_.size() >= static_cast<std::size_t>(maxSessionNesting))
            throw Error(currentPath() + ": nested more than " + std::to_string(maxSessionNesting) +
                        " levels deep (objects and arrays inside each other)");
        containers_.push_back({isArray, {}});
    }
    bool leave()
    {
        containers_.pop_back();
        return counted();
    }
    bool counted()
    {
        if (!containers_.empty() && containers_.back().isArray)
            ++containers_.back().count;
        return true;
    }
    bool value(Json&& v)
    {
        if (collecting_)
            replay();
        tree_.add(std::move(v));
        return counted();
    }
    template <typename Number> bool numberValue(Number number)
    {
        if (inRow_) {
            const auto x = static_cast<double>(number);
            const bool kept =
                kind_ == Compact::Numbers
                    ? numbers_.add(x)
                    : (x == 0.0 || x == 1.0) && mask_.add(static_cast<std::uint8_t>(x == 1.0 ? 1 : 0));
            if (kept)
                return counted();
        }
        return value(Json(number));
    }

    /// The kind of matrix a session has at the array starting here, if any.
    std::optional<Compact> matrixHere() const
    {
        const auto keyIs = [this](std::size_t i, std::initializer_list<const char*> keys) {
            if (containers_[i].isArray)
                return false;
            for (const char* key : keys)
                if (containers_[i].key == key)
                    return true;
            return false;
        };
        switch (containers_.size()) {
        case 1:
            if (keyIs(0, {"X", "W_O"}))
                return Compact::Numbers;
            break;
        case 2:
            if (keyIs(0, {"context"}) && keyIs(1, {"Z"}))
                return Compact::Numbers;
            if (keyIs(0, {"mask"}) && keyIs(1, {"allowed"}))
                return Compact::Mask;
            if (keyIs(0, {"positions"}) && keyIs(1, {"P"}))
                return Compact::Numbers;
            break;
        case 3:
            if (keyIs(0, {"heads"}) && containers_[1].isArray &&
                keyIs(2, {"W_Q", "W_K", "W_V", "W_S", "W_a", "U_a"}))
                return Compact::Numbers;
            break;
        default:
            break;
        }
        return std::nullopt;
    }

    Index collectedRows() const { return kind_ == Compact::Numbers ? numbers_.rows() : mask_.rows(); }

    template <typename Scalar>
    static Json store(std::vector<typename RowCollector<Scalar>::Storage>& matrices,
                      RowCollector<Scalar>& rows)
    {
        matrices.push_back(rows.take());
        return placeholder(std::is_same_v<Scalar, double> ? Compact::Numbers : Compact::Mask,
                           matrices.size() - 1);
    }

    /// Stops collecting: the tree gets the matrix's array, its complete rows and the row being read.
    void replay()
    {
        collecting_ = false;
        if (kind_ == Compact::Numbers)
            replay(numbers_, [](double x) { return Json(x); });
        else
            replay(mask_, [](std::uint8_t x) { return Json(static_cast<unsigned>(x)); });
        inRow_ = false;
    }
    template <typename Scalar, typename ToJson> void replay(RowCollector<Scalar>& rows, ToJson toJson)
    {
        tree_.open(Json::array());
        for (Index r = 0; r < rows.rows(); ++r) {
            tree_.open(Json::array());
            for (Index c = 0; c < rows.cols(); ++c)
                tree_.add(toJson(rows.at(r, c)));
            tree_.close();
        }
        if (inRow_) {
            tree_.open(Json::array());
            for (Index c = 0; c < rows.filled(); ++c)
                tree_.add(toJson(rows.at(rows.rows(), c)));
        }
        rows.clear();
    }

    TreeBuilder tree_;
    CompactMatrices& compact_;
    std::vector<Open> containers_;
    bool collecting_ = false; // inside a matrix's array, its rows not in the tree
    bool inRow_ = false;      // ... inside one of its rows
    Compact kind_ = Compact::Numbers;
    RowCollector<double> numbers_;
    RowCollector<std::uint8_t> mask_;
};

} // namespace qkv::json
