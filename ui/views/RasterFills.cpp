// SPDX-License-Identifier: GPL-3.0-or-later
// Qt's raster paint engine (Qt 6.4) splits a fill of more than 96 spans (a frame's vertical edge, a gradient,
// an image drawn with transparency: most of what a window paints) into tasks on QThreadPool::globalInstance()
// and sleeps until they are done, and so do its large image conversions and scalings, unless the painting
// thread is one of that pool's own. Each split costs thread wake-ups that outweigh the microseconds of work,
// and a paint of the window makes hundreds: edits of large sessions repaint noticeably slower
// (docs/performance.md).
//
// Qt has no setting for it: its one test is QThreadPool::contains(QThread::currentThread()). Only QtGui calls
// that function, through the dynamic linker, so a definition in the program comes first. Once the program has
// called keepOnPaintingThread(), it answers "the caller is one of yours" for the global pool, and Qt fills on
// the calling thread; before that, and for any other pool, it gives Qt's own answer. Parallel work stays
// where QKV Lab decides it (the engine's threads, background computations).

#include "RasterFills.h"

#include <QThreadPool>

#include <dlfcn.h>

#include <atomic>

namespace {

std::atomic<bool> keeping{false};
std::atomic<std::uint64_t> declined{0};

// Qt's own QThreadPool::contains.
using ContainsFunction = bool (*)(const QThreadPool*, const QThread*);

ContainsFunction qtContains()
{
    static const auto function =
        reinterpret_cast<ContainsFunction>(dlsym(RTLD_NEXT, "_ZNK11QThreadPool8containsEPK7QThread"));
    return function;
}

} // namespace

bool QThreadPool::contains(const QThread* thread) const
{
    if (keeping.load(std::memory_order_relaxed) && this == QThreadPool::globalInstance()) {
        declined.fetch_add(1, std::memory_order_relaxed);
        return true;
    }
    const ContainsFunction qt = qtContains();
    return qt != nullptr && qt(this, thread);
}

namespace qkv::ui::RasterFills {

void keepOnPaintingThread()
{
    keeping.store(true, std::memory_order_relaxed);
}

std::uint64_t splitsDeclined()
{
    return declined.load(std::memory_order_relaxed);
}

} // namespace qkv::ui::RasterFills
