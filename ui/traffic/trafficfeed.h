// TrafficFeed: reads new exchanges from the engine's capture window on its own thread and hands
// them to the UI thread as ready-made rows, so the UI thread never decodes records.
#pragma once

#include "trafficmodel.h"

#include <portico/capture/filter.h>

#include <QObject>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

class QThread;
class QTimer;

namespace portico::engine {
class Engine;
}

namespace portico::ui {

/// One read of the window: new rows (ids increasing) with whether the filter of `generation`
/// matched them, and rows that were incomplete and are now complete.
struct TrafficBatch {
    bool reset = false; ///< the engine was restarted: ids begin again, drop what is kept
    std::vector<TrafficRow> rows;
    std::vector<bool> matched;
    std::uint64_t generation = 0;
    std::vector<TrafficRow> completed;
    /// Records that left the engine's window before this read reached them (a gap in the ids).
    std::uint64_t skipped = 0;
};

/// Lives on a worker thread with a timer (kIntervalMs). Each tick, unless paused or the UI has
/// more than kMaxPendingRows rows not yet taken (then the window moves on without it), it reads at
/// most batchLimit() records newer than the last one, converts them and re-reads up to 64 records
/// that were incomplete. Batches queue in order; `ready()` tells the UI thread to take() them.
/// fetchNow() does one read on the calling thread (tests, screenshots), in the same order.
class TrafficFeed : public QObject {
    Q_OBJECT

public:
    static constexpr int kIntervalMs = 33;
    static constexpr std::size_t kMaxPendingRows = 50000;

    explicit TrafficFeed(engine::Engine* engine);
    ~TrafficFeed() override;

    /// Starts the worker thread (until the feed is destroyed).
    void startThread();
    void fetchNow();
    std::vector<TrafficBatch> take();
    /// Drops the batches not taken yet (Clear).
    void discardPending();

    void setPaused(bool paused) { m_paused = paused; }
    void setBatchLimit(std::size_t n) { m_batchLimit = n ? n : 1; }
    std::size_t batchLimit() const { return m_batchLimit; }
    /// The filter applied to new rows, tagged with the model's filter generation.
    void setFilter(std::optional<capture::Filter> filter, std::uint64_t generation);

signals:
    void ready();

private:
    void tick();

    engine::Engine* m_engine;
    QThread* m_thread = nullptr;
    QTimer* m_timer = nullptr;
    std::atomic<bool> m_paused{false};
    std::atomic<std::size_t> m_batchLimit{5000};
    std::atomic<bool> m_notified{false};

    // Three locks, none held while another thread could wait long on it:
    std::mutex m_readMutex; ///< one read at a time (feed thread or fetchNow), so batches keep id order
    std::uint64_t m_lastId = 0;
    std::deque<std::uint64_t> m_incomplete;
    std::mutex m_filterMutex; ///< copied at the start of a read
    std::optional<capture::Filter> m_filter;
    std::uint64_t m_generation = 0;
    std::mutex m_queueMutex; ///< the hand-over to the UI thread
    std::deque<TrafficBatch> m_pending;
    std::size_t m_pendingRows = 0;
};

} // namespace portico::ui
