// SPDX-License-Identifier: GPL-3.0-or-later
// hook_gradients FOLDER IDS [loss | logit POSITION A B]: for a model folder and comma-separated token ids,
// every hook's value and the gradient of the objective (the mean loss, or logit(A) − logit(B) at POSITION)
// with respect to it, in float64, as one JSON object on standard output. hook_reference.py compares them
// with PyTorch autograd.

#include "Error.h"
#include "HookPoints.h"
#include "MatrixProduct.h"
#include "Network.h"
#include "TrainingModel.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

using namespace qkv;

namespace {

nlohmann::json rowsOf(const Matrix& m)
{
    nlohmann::json rows = nlohmann::json::array();
    for (Index r = 0; r < m.rows(); ++r)
        rows.push_back(std::vector<double>(m.row(r).data(), m.row(r).data() + m.cols()));
    return rows;
}

} // namespace

int main(int argc, char** argv)
{
    prepareMatrixProducts();
    if (argc != 4 && argc != 7) {
        std::cerr << "usage: hook_gradients FOLDER IDS [loss | logit POSITION A B]\n";
        return 2;
    }
    try {
        const std::string folder = argv[1];
        std::vector<std::int64_t> ids;
        std::stringstream list(argv[2]);
        for (std::string id; std::getline(list, id, ',');)
            ids.push_back(std::stoll(id));
        transformer::Objective objective;
        if (std::string(argv[3]) == "logit" && argc == 7) {
            objective.kind = transformer::Objective::Kind::LogitDifference;
            objective.position = std::atol(argv[4]);
            objective.tokenA = std::atoll(argv[5]);
            objective.tokenB = std::atoll(argv[6]);
        }
        const training::Architecture a = training::architectureOf(folder);
        const training::Layout layout = training::layoutOf(a);
        const training::Tensors<double> p = training::loadParameters<double>(folder, a, layout);
        training::Network<double> network(a, layout);
        const transformer::HookRequest keepAll{{"*"}, {}};
        nlohmann::json out;
        out["loss"] = network.forward(p, {ids}, &keepAll);
        for (const auto& [name, value] : network.cache())
            out["values"][name] = rowsOf(value);
        for (const auto& [name, gradient] : network.hookGradients(p, objective))
            out["gradients"][name] = rowsOf(gradient);
        std::cout << out.dump() << "\n";
    } catch (const std::exception& e) {
        std::cerr << e.what() << "\n";
        return 2;
    }
    return 0;
}
