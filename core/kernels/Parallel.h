// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
/// @file
/// The engine's threads: one small pool of sleeping workers that the calling thread works beside.
///
/// Why not OpenMP or OpenBLAS's own threads: both spin-wait between jobs, and on a busy machine a spinning
/// worker takes the core the job needs, so the pipeline runs far slower than on one thread.
/// Here workers sleep on a condition variable, and work is split into chunks that whichever thread is free
/// claims next, the caller included: when the other core is taken, the caller simply does every chunk
/// itself, so two threads are never much slower than one. After a job, a worker (and a caller waiting for
/// it) watches for the next for an eighth of the time it just worked, at most 50 µs, before sleeping: waking
/// a sleeping thread costs tens of microseconds, and the pipeline's parallel steps follow one another closely
/// (docs/design.md, "Threads that do not spin-wait").

#include "EigenTypes.h"

#include <functional>

namespace qkv {

/// Threads the engine uses, the caller included: QKV_THREADS when set to a number from 1 to 64 (1 runs
/// everything on the calling thread), else the hardware's thread count, at most 8.
int engineThreads();

/// Runs body(begin, end) for the chunks [0, grain), [grain, 2·grain), … of [0, count), on the calling thread
/// and the pool's workers. Chunk boundaries depend only on count and grain (never on the number of threads),
/// so results are the same with any number of threads. Runs everything on the calling thread when there is
/// one chunk, one engine thread, when called from inside a chunk, or while another thread uses the pool.
/// The first exception a chunk throws is rethrown once every started chunk has ended; chunks not yet started
/// are skipped.
void parallelFor(Index count, Index grain, const std::function<void(Index begin, Index end)>& body);

/// True when test(first, size) is true for every piece [first, first + size) of [0, count), pieces of 2¹⁶
/// (one piece on the calling thread when count is no larger), tested with parallelFor: for one pass over a
/// large matrix (a finiteness scan, a rounding to float32).
bool allPiecesPass(Index count, const std::function<bool(Index first, Index size)>& test);

} // namespace qkv
