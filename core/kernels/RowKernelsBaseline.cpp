// SPDX-License-Identifier: GPL-3.0-or-later
// The row kernels for the target's baseline instruction set (SSE2 on x86-64): vectors of 16 bytes. Compiled
// with no -march of its own, so any CPU of the target runs it.
#define QKV_ROW_LEVEL baseline
#define QKV_REGISTER_BYTES 16
#include "RowKernelLevel.inc"
