// TrafficFeed: the reader thread, its back-pressure and the queue of batches.
#include "trafficfeed.h"

#include <portico/engine/engine.h>

#include <algorithm>

#include <QThread>
#include <QTimer>

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace portico::ui {

namespace {
constexpr std::size_t kMaxIncomplete = 4096;
constexpr std::size_t kIncompletePerRead = 64;
constexpr std::size_t kReadChunk = 256;
} // namespace

TrafficFeed::TrafficFeed(engine::Engine* engine) : m_engine(engine) {}

TrafficFeed::~TrafficFeed() {
    if (m_thread) {
        m_thread->quit();
        m_thread->wait();
        delete m_thread;
    }
}

void TrafficFeed::startThread() {
    if (m_thread) return;
    m_thread = new QThread;
    m_thread->setObjectName("traffic-feed");
    m_timer = new QTimer;
    m_timer->setInterval(kIntervalMs);
    m_timer->moveToThread(m_thread);
    // The timer lives and dies on the feed thread; `this` stays on the UI thread (tick() is
    // called directly from the timer's thread and only touches state under m_mutex or atomics).
    connect(
        m_timer, &QTimer::timeout, m_timer, [this] { tick(); }, Qt::DirectConnection);
    connect(m_thread, &QThread::started, m_timer, qOverload<>(&QTimer::start));
#ifdef __linux__
    // Background work: on a busy machine the UI thread and the server's workers go first (Linux
    // nice values are per thread).
    connect(
        m_thread, &QThread::started, m_timer,
        [] { setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10); }, Qt::DirectConnection);
#endif
    connect(m_thread, &QThread::finished, m_timer, &QObject::deleteLater);
    m_thread->start();
}

void TrafficFeed::setFilter(std::optional<capture::Filter> filter, std::uint64_t generation) {
    std::lock_guard lock(m_filterMutex);
    m_filter = std::move(filter);
    m_generation = generation;
}

void TrafficFeed::tick() {
    if (m_paused) return;
    {
        std::lock_guard lock(m_queueMutex);
        if (m_pendingRows > kMaxPendingRows) return; // the UI is behind: let it catch up
    }
    fetchNow();
}

void TrafficFeed::fetchNow() {
    TrafficBatch batch;
    std::optional<capture::Filter> filter;
    {
        std::lock_guard lock(m_filterMutex);
        filter = m_filter;
        batch.generation = m_generation;
    }
    {
        std::lock_guard lock(m_readMutex);
        // Restarted without a session file (ids begin again); with one, ids go on and so do the rows.
        if (m_engine->lastCapturedId() < m_lastId) {
            m_lastId = 0;
            m_incomplete.clear();
            batch.reset = true;
        }
        // Records published before their end (mock latency, a blocked write, a WebSocket session
        // until it closes) are re-read until the engine has completed them, round-robin so that
        // long-lived ones do not starve the others.
        for (std::size_t n = std::min(kIncompletePerRead, m_incomplete.size()); n > 0; --n) {
            const std::uint64_t id = m_incomplete.front();
            m_incomplete.pop_front();
            auto e = m_engine->exchange(id);
            if (!e) continue; // left the window
            if (e->flags & capture::kIncomplete)
                m_incomplete.push_back(id);
            else
                batch.completed.push_back(TrafficRow::from(*e));
        }
        // Small reads: the engine holds its mutex while the collector decodes them, and the UI
        // thread takes that mutex too (counters, one exchange for the inspector).
        const std::size_t limit = m_batchLimit;
        while (batch.rows.size() < limit) {
            const std::size_t want = std::min(kReadChunk, limit - batch.rows.size());
            const auto records = m_engine->recentExchanges(m_lastId, want);
            for (const auto& e : records) {
                batch.rows.push_back(TrafficRow::from(e));
                batch.matched.push_back(!filter || filter->matches(e));
                if (e.flags & capture::kIncomplete) {
                    m_incomplete.push_back(e.id);
                    if (m_incomplete.size() > kMaxIncomplete) m_incomplete.pop_front();
                }
            }
            if (!records.empty()) {
                if (m_lastId && records.front().id > m_lastId + 1)
                    batch.skipped += records.front().id - m_lastId - 1;
                m_lastId = records.back().id;
            }
            if (records.size() < want) break;
        }
        if (!batch.reset && batch.rows.empty() && batch.completed.empty() && !batch.skipped) return;
        std::lock_guard queue(m_queueMutex); // still under m_readMutex: batches queue in read order
        m_pendingRows += batch.rows.size();
        m_pending.push_back(std::move(batch));
    }
    if (!m_notified.exchange(true)) emit ready(); // queued to the UI thread; one until take()
}

std::vector<TrafficBatch> TrafficFeed::take() {
    m_notified = false;
    std::lock_guard lock(m_queueMutex);
    std::vector<TrafficBatch> out(std::make_move_iterator(m_pending.begin()),
                                  std::make_move_iterator(m_pending.end()));
    m_pending.clear();
    m_pendingRows = 0;
    return out;
}

void TrafficFeed::discardPending() { take(); }

} // namespace portico::ui
