// SPDX-License-Identifier: GPL-3.0-or-later
#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace qkv {

namespace {

thread_local bool insideChunk = false;

using Clock = std::chrono::steady_clock;

/// How long a thread that just worked on a job watches for the next one before it sleeps: an eighth of the
/// time it worked, at most 50 µs. Waking a sleeping thread costs tens of microseconds, a sizeable part of a
/// small pipeline, and the engine's parallel steps follow one another closely; a watch this short costs a
/// busy machine at most an eighth more CPU, where spinning between jobs as OpenMP and OpenBLAS do costs it
/// the core.
Clock::duration watchTime(Clock::duration worked)
{
    return std::min<Clock::duration>(worked / 8, std::chrono::microseconds(50));
}

/// Spins until `changed()` or the deadline, whichever comes first.
template <typename Changed> void watchUntil(Clock::time_point deadline, Changed changed)
{
    while (!changed() && Clock::now() < deadline) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause(); // lets the other hyper-thread run, and saves power
#endif
    }
}

/// One job at a time; workers sleep until a job is posted and return to sleep when its chunks are claimed.
class Pool {
public:
    explicit Pool(int workerCount)
    {
        for (int w = 0; w < workerCount; ++w)
            m_workers.emplace_back([this] { workerLoop(); });
    }

    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    /// False when another thread's job holds the pool (the caller then runs its job alone).
    bool tryRun(Index count, Index grain, const std::function<void(Index, Index)>& body)
    {
        std::unique_lock caller(m_callerMutex, std::try_to_lock);
        if (!caller.owns_lock())
            return false;
        {
            std::lock_guard lock(m_mutex);
            m_body = &body;
            m_count = count;
            m_grain = grain;
            m_next.store(0, std::memory_order_relaxed);
            m_failed.store(false, std::memory_order_relaxed);
            m_error = nullptr;
            m_open = true;
            ++m_job;
        }
        m_wake.notify_all();
        const Clock::time_point start = Clock::now();
        claimChunks();
        const Clock::time_point claimed = Clock::now();
        std::unique_lock lock(m_mutex);
        // Workers that wake from now on find the job closed; those inside finish their current chunk.
        m_open = false;
        if (m_busyWorkers > 0) {
            lock.unlock();
            watchUntil(claimed + watchTime(claimed - start),
                       [this] { return m_busyWorkers.load(std::memory_order_acquire) == 0; });
            lock.lock();
        }
        m_idle.wait(lock, [this] { return m_busyWorkers == 0; });
        m_body = nullptr;
        if (m_error)
            std::rethrow_exception(m_error);
        return true;
    }

private:
    void workerLoop()
    {
        std::uint64_t seenJob = 0;
        Clock::duration watch{};
        std::unique_lock lock(m_mutex);
        for (;;) {
            if (watch > Clock::duration::zero()) {
                lock.unlock();
                watchUntil(Clock::now() + watch,
                           [&] { return m_job.load(std::memory_order_acquire) != seenJob; });
                lock.lock();
            }
            m_wake.wait(lock, [&] { return m_job != seenJob; });
            seenJob = m_job;
            watch = Clock::duration::zero();
            if (!m_open)
                continue;
            ++m_busyWorkers;
            lock.unlock();
            const Clock::time_point start = Clock::now();
            claimChunks();
            watch = watchTime(Clock::now() - start); // about zero when the others had claimed every chunk
            lock.lock();
            if (--m_busyWorkers == 0)
                m_idle.notify_all();
        }
    }

    void claimChunks()
    {
        insideChunk = true;
        for (;;) {
            const Index begin = m_next.fetch_add(m_grain, std::memory_order_relaxed);
            if (begin >= m_count || m_failed.load(std::memory_order_relaxed))
                break;
            try {
                (*m_body)(begin, std::min(m_count, begin + m_grain));
            } catch (...) {
                std::lock_guard lock(m_mutex);
                if (!m_error)
                    m_error = std::current_exception();
                m_failed.store(true, std::memory_order_relaxed);
            }
        }
        insideChunk = false;
    }

    std::vector<std::thread> m_workers;
    std::mutex m_callerMutex; // one job at a time
    std::mutex m_mutex;       // everything below except the atomics
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    // Changed under m_mutex only; atomic so that a watching thread may read them without it.
    std::atomic<std::uint64_t> m_job{0};
    std::atomic<int> m_busyWorkers{0};
    bool m_open = false;
    const std::function<void(Index, Index)>* m_body = nullptr;
    Index m_count = 0;
    Index m_grain = 1;
    std::atomic<Index> m_next{0};
    std::atomic<bool> m_failed{false};
    std::exception_ptr m_error;
};

int threadsFromEnvironment()
{
    if (const char* text = std::getenv("QKV_THREADS")) {
        char* end = nullptr;
        const long value = std::strtol(text, &end, 10);
        if (end != text && *end == '\0' && value >= 1 && value <= 64)
            return static_cast<int>(value);
    }
    const unsigned hardware = std::thread::hardware_concurrency();
    return static_cast<int>(std::clamp(hardware, 1u, 8u));
}

/// Never destroyed: its workers sleep until the process ends, so no job can outlive the pool at exit.
Pool& pool()
{
    static Pool* const instance = new Pool(engineThreads() - 1);
    return *instance;
}

} // namespace

int engineThreads()
{
    static const int threads = threadsFromEnvironment();
    return threads;
}

void parallelFor(Index count, Index grain, const std::function<void(Index, Index)>& body)
{
    if (count <= 0)
        return;
    grain = std::max<Index>(grain, 1);
    if (count <= grain || engineThreads() == 1 || insideChunk || !pool().tryRun(count, grain, body)) {
        for (Index begin = 0; begin < count; begin += grain)
            body(begin, std::min(count, begin + grain));
    }
}

bool allPiecesPass(Index count, const std::function<bool(Index first, Index size)>& test)
{
    constexpr Index piece = Index(1) << 16;
    if (count <= piece)
        return test(0, count);
    std::atomic<bool> passed{true};
    parallelFor((count + piece - 1) / piece, 1, [&](Index begin, Index end) {
        for (Index p = begin; p < end; ++p)
            if (!test(p * piece, std::min(piece, count - p * piece)))
                passed.store(false, std::memory_order_relaxed);
    });
    return passed.load(std::memory_order_relaxed);
}

} // namespace qkv
