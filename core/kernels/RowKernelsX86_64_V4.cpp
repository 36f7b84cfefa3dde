// SPDX-License-Identifier: GPL-3.0-or-later
// The row kernels for x86-64-v4 (AVX-512 F, DQ, BW, VL): vectors of 64 bytes. Compiled with that level's
// -march (kernels/CMakeLists.txt); RowKernels.cpp calls them only on a CPU that has it.
#define QKV_ROW_LEVEL x86_64_v4
#define QKV_REGISTER_BYTES 64
#include "RowKernelLevel.inc"
