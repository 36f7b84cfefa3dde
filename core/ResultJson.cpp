#include "ResultJson.h"

#include "JsonText.h"

namespace qkv {

std::string resultToJson(const AttentionResult& result)
{
    using json::Json;
    Json heads = Json::array();
    for (const HeadResult& head : result.heads) {
        Json h = Json::object();
        h["Q"] = json::matrix(head.Q);
        h["K"] = json::matrix(head.K);
        h["V"] = json::matrix(head.V);
        h["scores"] = json::matrix(head.scores);
        h["scaled"] = json::matrix(head.scaled);
        h["allowed"] = json::matrix(head.allowed.cast<int>());
        h["weights"] = json::matrix(head.weights);
        h["output"] = json::matrix(head.output);
        Json stats = Json::array();
        for (const RowStats& row : head.rowStats)
            stats.push_back(
                Json{{"entropy", row.entropy}, {"support", row.support}, {"max", row.max}, {"sum", row.sum}});
        h["row_stats"] = std::move(stats);
        h["empty_rows"] = head.emptyRows;
        heads.push_back(std::move(h));
    }
    Json root = Json::object();
    root["heads"] = std::move(heads);
    root["concat"] = json::matrix(result.concat);
    root["output"] = json::matrix(result.output);
    root["precision"] = toString(result.precision);
    return json::prettyJson(root);
}

} // namespace qkv
