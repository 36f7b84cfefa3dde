// Qt 6.4's raster paint engine splits a fill of more than 96 spans (a frame's vertical edge, a gradient, an
// image drawn with transparency: most of what a window paints) into tasks on QThreadPool::globalInstance()
// and sleeps until they are done, and so do its large image conversions and scalings, unless the painting
// thread is one of that pool's own. Each split costs two or three thread wake-ups, 20–50 µs each on a virtual
// machine, for microseconds of work, and a paint of the window makes hundreds. Measured with qkv_gui_bench
// (README, "Window performance"): an edit at n = 256 took 22–26 ms with the splits and 14 ms without.
//
// Qt 6.4 has no setting for it: its one test is QThreadPool::contains(QThread::currentThread()). Only QtGui
// calls that function, through the dynamic linker, so a definition in the program comes first: for the global
// pool it answers "the caller is one of yours", and Qt fills on the calling thread. Any other pool gets Qt's
// own answer. Parallel work stays where QKV Lab decides it (the engine's threads, background computations).

#include "RasterFills.h"

#include <QThreadPool>

#include <dlfcn.h>

#include <atomic>

namespace {

std::atomic<std::uint64_t> declined{0};

// Qt's own QThreadPool::contains, for pools other than the global one.
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
    if (this == QThreadPool::globalInstance()) {
        declined.fetch_add(1, std::memory_order_relaxed);
        return true;
    }
    const ContainsFunction qt = qtContains();
    return qt != nullptr && qt(this, thread);
}

namespace qkv::ui::RasterFills {

void keepOnPaintingThread() {}

std::uint64_t splitsDeclined()
{
    return declined.load(std::memory_order_relaxed);
}

} // namespace qkv::ui::RasterFills
