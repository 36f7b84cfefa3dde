// SPDX-License-Identifier: GPL-3.0-or-later
#include "NumpyExamples.h"

#include "Initializers.h"
#include "SessionEdits.h"
#include "SessionFile.h"

#include <cmath>

namespace qkv::detail {

namespace {

/// One dot-product softmax head of d_model × d_k (W_Q, W_K) and d_model × d_v (W_V), to be drawn.
Session selfAttention(std::vector<std::string> tokens, Index dModel, Index dK, Index dV)
{
    Session s;
    s.pad.assign(tokens.size(), false);
    s.X = Matrix::Zero(static_cast<Index>(tokens.size()), dModel);
    s.tokens = std::move(tokens);
    Head head;
    head.W_Q = Matrix::Zero(dModel, dK);
    head.W_K = Matrix::Zero(dModel, dK);
    head.W_V = Matrix::Zero(dModel, dV);
    s.heads.push_back(std::move(head));
    s.score = ScoreFunction::Dot;
    s.scale = defaultScale(ScoreFunction::Dot); // ÷ √d_k, as the article does
    return s;
}

InitializerSpec numpy(std::uint64_t seed, double scale)
{
    return InitializerSpec{Initializer::NumpyLegacy, scale, seed};
}

// "A Worked Example with Real Words" of Michael Brenndoerfer's article "Query, Key, Value: The Foundation of
// Transformer Attention" (docs/references.md): hand-made embeddings, then
//     np.random.seed(42); W_q = randn(4, 3) * 0.5; W_k = randn(4, 3) * 0.5; W_v = randn(4, 3) * 0.5
Session theCatSat()
{
    Session s = selfAttention({"The", "cat", "sat"}, 4, 3, 3);
    s.title = "The cat sat (interpretable features, np.random.seed(42))";
    s.dims = {"determiner", "noun", "verb", "animacy"};
    s.X << 1.0, 0.0, 0.0, 0.0, //
        0.1, 1.0, 0.0, 0.8,    //
        0.0, 0.1, 1.0, 0.0;
    reinitializeWeights(s, numpy(42, 0.5));
    setViewJson(
        s, R"({"note": "The worked example of Michael Brenndoerfer's article Query, Key, Value: )"
           R"(The Foundation of Transformer Attention. X is hand-made (determiner, noun, verb, animacy); )"
           R"(W_Q, W_K and W_V are np.random.seed(42) then randn(4, 3) * 0.5 three times, drawn by )"
           R"(QKV Lab's NumPy legacy initializer."})");
    return s;
}

// The same article's "Test the complete layer":
//     np.random.seed(42); X = randn(5, 8)
//     SelfAttention(8, 6, 6, seed=123): W_q, W_k, W_v = randn(8, 6) * sqrt(2 / (8 + 6)) each
// The article's tokens have no words; they are named after the rows of X.
Session layerTest()
{
    Session s = selfAttention({"x0", "x1", "x2", "x3", "x4"}, 8, 6, 6);
    s.title = "Self-attention layer test (np.random.seed(42) / seed=123)";
    reinitializeEmbeddings(s, numpy(42, 1.0));
    reinitializeWeights(s, numpy(123, std::sqrt(2.0 / (8.0 + 6.0))));
    setViewJson(s,
                R"({"note": "The layer test of Michael Brenndoerfer's article Query, Key, Value: The )"
                R"(Foundation of Transformer Attention. X is np.random.seed(42) then randn(5, 8); W_Q, W_K )"
                R"(and W_V are np.random.seed(123) then randn(8, 6) * sqrt(2 / 14) three times (Xavier), )"
                R"(drawn by QKV Lab's NumPy legacy initializer. Tokens x0 to x4 are the rows of X."})");
    return s;
}

} // namespace

const std::vector<GeneratedExample>& generatedExamples()
{
    static const std::vector<GeneratedExample> examples = {
        {"layer-test", &layerTest},
        {"the-cat-sat", &theCatSat},
    };
    return examples;
}

} // namespace qkv::detail
