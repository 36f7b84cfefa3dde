// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: SafetensorsFile::fromBytes, the header validation SafetensorsFile::open applies to a
// file. Refusal with qkv::Error is fine. An accepted file's tensors must lie within the input; every 1-D or
// 2-D tensor of a readable dtype must read as finite numbers of its shape (or be refused by name), and
// survive formatSafetensors → fromBytes bit for bit.

#include "FuzzChecks.h"
#include "Safetensors.h"

#include <cstring>
#include <optional>
#include <vector>

using namespace qkv;
using namespace qkv::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    std::optional<SafetensorsFile> file;
    try {
        file.emplace(SafetensorsFile::fromBytes(text(data, size), "fuzz input"));
    } catch (const Error&) {
        return 0;
    }
    std::vector<SafetensorsTensor> read;
    for (const SafetensorsTensorInfo& t : file->tensors()) {
        if (t.dataBegin > t.dataEnd || t.dataEnd > size)
            fail("tensor " + t.name + " accepted with bytes outside the input");
        if (!isReadableSafetensorsDtype(t.dtype) || (t.shape.size() != 1 && t.shape.size() != 2))
            continue;
        std::vector<double> values;
        try {
            if (t.shape.size() == 2) {
                const Matrix m = file->readMatrix(t.name);
                if (static_cast<std::uint64_t>(m.rows()) != t.shape[0] ||
                    static_cast<std::uint64_t>(m.cols()) != t.shape[1] || !allFinite(m))
                    fail("readMatrix(" + t.name + ") gave a matrix that is not finite or not of its shape");
                values.assign(m.data(), m.data() + m.size());
            } else {
                const RowVector v = file->readVector(t.name);
                if (static_cast<std::uint64_t>(v.size()) != t.shape[0] || !allFinite(v))
                    fail("readVector(" + t.name + ") gave a vector that is not finite or not of its shape");
                values.assign(v.data(), v.data() + v.size());
            }
        } catch (const Error& e) {
            if (std::string(e.what()).find(t.name) == std::string::npos)
                fail(std::string("a refused tensor is not named: ") + e.what());
            continue;
        }
        read.push_back({t.name, t.dtype, t.shape, std::move(values)});
    }
    const std::string bytes = mustNotThrow("formatSafetensors", [&] { return formatSafetensors(read); });
    const SafetensorsFile back = mustNotThrow("fromBytes(formatSafetensors(...))",
                                              [&] { return SafetensorsFile::fromBytes(bytes, "again"); });
    for (const SafetensorsTensor& t : read) {
        const std::vector<double> again = mustNotThrow("reading back", [&] {
            std::vector<double> out;
            if (t.shape.size() == 2) {
                const Matrix m = back.readMatrix(t.name);
                out.assign(m.data(), m.data() + m.size());
            } else {
                const RowVector v = back.readVector(t.name);
                out.assign(v.data(), v.data() + v.size());
            }
            return out;
        });
        if (again.size() != t.values.size() ||
            (!again.empty() &&
             std::memcmp(again.data(), t.values.data(), again.size() * sizeof(double)) != 0))
            fail("formatSafetensors/fromBytes round trip changed tensor " + t.name);
    }
    return 0;
}
