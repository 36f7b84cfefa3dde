// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The one exception the engine throws: a refused session or file, with a message that names the key path.

#include <stdexcept>
#include <string>

namespace qkv {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A computation stopped on request (ComputeOptions::cancel) before it finished.
class Cancelled : public Error {
public:
    Cancelled() : Error("the computation was stopped before it finished") {}
};

} // namespace qkv
