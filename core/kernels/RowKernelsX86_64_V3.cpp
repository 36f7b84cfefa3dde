// SPDX-License-Identifier: GPL-3.0-or-later
// The row kernels for x86-64-v3 (AVX2): vectors of 32 bytes. Compiled with that level's -march
// (kernels/CMakeLists.txt); RowKernels.cpp calls them only on a CPU that has it.
#define QKV_ROW_LEVEL x86_64_v3
#define QKV_REGISTER_BYTES 32
#include "RowKernelLevel.inc"
