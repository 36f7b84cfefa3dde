#include "Masks.h"

namespace qkv {

bool patternAllows(const MaskSpec& mask, Index i, Index j)
{
    switch (mask.type) {
    case MaskType::None:
        return true;
    case MaskType::Causal:
        return j <= i;
    case MaskType::Prefix:
        return j < mask.prefixLength || j <= i;
    case MaskType::Sliding:
        return j <= i && i - j < mask.window;
    case MaskType::Custom:
        return i < mask.allowed.rows() && j < mask.allowed.cols() && mask.allowed(i, j) != 0;
    }
    return false;
}

void buildMask(const Session& session, MaskMatrix& allowed)
{
    const Index n = session.n();
    const Index m = session.m();
    allowed.resize(n, m);
    const MaskSpec& mask = session.mask;
    switch (mask.type) {
    case MaskType::None:
        allowed.setOnes();
        break;
    case MaskType::Custom:
        allowed = mask.allowed;
        break;
    default:
        for (Index i = 0; i < n; ++i)
            for (Index j = 0; j < m; ++j)
                allowed(i, j) = patternAllows(mask, i, j) ? 1 : 0;
        break;
    }
    const std::vector<bool>& keyPad = session.keyPad();
    for (Index j = 0; j < m && j < static_cast<Index>(keyPad.size()); ++j)
        if (keyPad[static_cast<std::size_t>(j)])
            allowed.col(j).setZero();
    for (Index i = 0; i < n && i < static_cast<Index>(session.pad.size()); ++i)
        if (session.pad[static_cast<std::size_t>(i)])
            allowed.row(i).setZero();
}

} // namespace qkv
