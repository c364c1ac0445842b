// The engine's capture collector: one thread draining every worker's rings into a bounded
// in-memory window (and the session file), and keeping the merged statistics and time series.
#pragma once

#include "capture/recorder.h"

#include <portico/capture/exchange.h>
#include <portico/capture/store.h>
#include <portico/config/config.h>
#include <portico/stats/report.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace portico::capture {

class ProcessLookup;

class Collector final : private RingWaker {
public:
    /// `store` may be null. Ids continue after the store's highest id.
    Collector(const config::Capture& cfg, std::unique_ptr<Store> store);
    ~Collector();
    /// Starts the thread over `recorders` (owned by the workers, which must outlive stop()).
    void start(std::vector<Recorder*> recorders);
    /// Final drain, commit, thread joined. The window and statistics stay readable.
    void stop();
    /// Drains now (from any thread); returns when done.
    void drainNow();

    std::vector<Exchange> recent(std::uint64_t sinceId, std::size_t max) const;
    std::optional<Exchange> get(std::uint64_t id) const;
    stats::Report report() const;
    std::uint64_t dropped() const;
    std::uint64_t captured() const;
    /// Id of the newest record (0 when none); with a session file, ids continue across restarts.
    std::uint64_t lastId() const;
    /// Id of the oldest record that get() can return (in the session file when there is one, else
    /// in the window); 0 when there is none.
    std::uint64_t oldestId() const;
    /// A consistent copy of the session file at `path` (which must not exist). False with `error`
    /// when there is no session file or the copy failed.
    bool saveCopy(const std::string& path, std::string& error);
    std::string storeError() const;

    /// How long the collector sleeps before its next drain. The rings are fixed-size (a worker's
    /// record is dropped when its ring is full), so the wait follows the traffic: `fullestShare`
    /// is the largest share of one ring's capacity the last drain took (0..1) and `interval` the
    /// time since the drain before it; the wait is what lets that ring fill to a quarter at the same
    /// rate (0.25 × interval / fullestShare), at least kMinWait and at most twice `previous` (the
    /// wait before; traffic comes in bursts, so one quiet interval does not undo the pace) and
    /// kMaxWait; that upper bound when the rings were empty. E.g. 1,000 records from a 1,024-record
    /// ring in 50 ms → 12.8 ms.
    static std::chrono::nanoseconds nextWait(double fullestShare, std::chrono::nanoseconds interval,
                                             std::chrono::nanoseconds previous = kMaxWait);
    static constexpr std::chrono::milliseconds kMinWait{1};
    static constexpr std::chrono::milliseconds kMaxWait{50};

private:
    void ringHalfFull() override; // a worker's thread: end the wait now
    void run();
    bool drain(); // collector thread or under drainMutex_; true if a ring had more than one batch
    struct Stored;
    // drain()'s steps: what the rings hold; whole records (WebSocket sessions) and completions
    // applied to this batch, the window or (whole records only) the store; under mutex_ but the first.
    bool takeFromRings(std::vector<Stored>& batch, std::vector<std::pair<unsigned, Completion>>& completions,
                       std::vector<std::pair<unsigned, FullRecord>>& fulls);
    void applyFullRecords(std::vector<std::pair<unsigned, FullRecord>>& fulls, std::vector<Stored>& batch,
                          std::vector<const Stored*>& updated, std::vector<Exchange>& storeOnlyUpdates);
    void applyCompletions(const std::vector<std::pair<unsigned, Completion>>& completions,
                          std::vector<Stored>& batch, std::vector<const Stored*>& updated);
    void tickSeries(); // once a second
    void tickScopes(); // the per-vhost and per-route series, from tickSeries
    void trimWindow(); // under mutex_
    // The session file's writer (`portico-store`): drain() hands each batch over (StoreJob) and
    // goes on; the writer appends, commits every kStoreCommitEvery and keeps the size cap. A
    // commit that also checkpoints the WAL can take hundreds of milliseconds on a busy disk while a
    // worker's ring holds a few tens of milliseconds of traffic, so no drain waits on SQLite. The
    // queue is bounded (kMaxStoreQueueBytes): past it the collector stops taking from the rings,
    // which then drop and count, as when the collector itself cannot keep up.
    struct StoreJob {
        std::vector<Exchange> rows;           // new records, ids set
        std::vector<Exchange> rewrites;       // records already stored, replaced under their id
        std::optional<std::uint64_t> dropped; // the rings' dropped count, for portico_session
        bool commit = false;                  // commit once written (drainNow, stop)
        std::size_t bytes = 0;                // approximate, for the queue's bound
        std::uint64_t seq = 0;
    };
    static constexpr std::size_t kMaxStoreQueueBytes = 64u << 20;
    void writeStore();                        // the writer thread's loop
    void writeJob(StoreJob& job);             // writer thread (or inline when it is not running)
    std::uint64_t queueStore(StoreJob&& job); // any thread; the job's sequence number
    void waitStored(std::uint64_t seq);       // until the writer has done job `seq`
    bool storeBacklogged();                   // more than kMaxStoreQueueBytes waits
    void maybeEvict();                        // writer: the session file's size cap (store_max_bytes)
    bool commitStore();                       // writer: commits the session file's open transaction

    config::Capture cfg_;
    std::unique_ptr<ProcessLookup>
        processes_;                 // while started: the client processes of forward-proxy connections
    std::unique_ptr<Store> store_;  // the writer thread's only while it runs (else under drainMutex_)
    std::unique_ptr<Store> reader_; // the same file read-only, for get() and recent() past the window
    mutable std::mutex readerMutex_;
    std::atomic<std::uint64_t> storeOldest_{0}; // lowest id in the file after eviction
    // The writer's: the highest id appended to the session file, the first appended this run,
    // whether a transaction is open, the last commit and size check. committedId_ (the highest
    // committed: the window keeps every record above it) is written under mutex_.
    std::uint64_t appendedId_ = 0, committedId_ = 0, firstAppendedId_ = 0;
    bool uncommitted_ = false;
    std::chrono::steady_clock::time_point lastStoreCommit_{};
    std::chrono::steady_clock::time_point lastEvictCheck_{};
    std::thread storeThread_;
    std::mutex storeMutex_;           // guards the queue and the fields below
    std::condition_variable storeCv_; // a job queued, or stop
    std::condition_variable doneCv_;  // a job done
    std::deque<StoreJob> storeQueue_;
    std::size_t storeQueuedBytes_ = 0;
    std::uint64_t storeQueuedSeq_ = 0, storeDoneSeq_ = 0;
    bool storeStop_ = false;
    bool storeRunning_ = false; // the writer thread runs (set by start, cleared by the writer at its end)
    static constexpr std::chrono::milliseconds kEvictEvery{1000};
    std::vector<Recorder*> recorders_;
    std::thread thread_;
    // The session file's WAL checkpoints, on their own thread and connection (every
    // kCheckpointEvery), so that the drains do not stall behind them (Store::checkpoint).
    std::unique_ptr<Store> checkpointStore_;
    std::thread checkpointThread_;
    std::mutex checkpointMutex_;
    std::condition_variable checkpointCv_;
    bool checkpointStop_ = false; // under checkpointMutex_
    std::mutex drainMutex_;       // one drain at a time
    mutable std::mutex mutex_;    // guards what readers see
    std::condition_variable cv_;
    bool stop_ = false;
    std::atomic<bool> woken_{false}; // a ring reached half full during the wait
    double fullestShare_ = 0;        // takeFromRings: the largest share of a ring's capacity it took
    // A record as the ring held it: decoded only when someone asks (keeps the collector's cost
    // per record to one copy).
    struct Stored {
        std::uint64_t id = 0;
        SlotHead head;
        std::string payload;
        std::string error;                    // set by a completion
        std::string clientProcess;            // Exchange::clientProcess (ProcessLookup's answer)
        std::shared_ptr<const Exchange> full; // a whole record (WebSocket session) instead of a slot
        Exchange decode() const;
        std::size_t bytes() const {
            return sizeof(Stored) + payload.capacity() + error.size() + (full ? full->approximateBytes() : 0);
        }
    };
    std::deque<Stored> window_;
    std::size_t windowBytes_ = 0;
    std::uint64_t nextId_ = 1;
    std::uint64_t captured_ = 0;
    std::uint64_t droppedAtStop_ = 0;
    std::map<std::pair<unsigned, std::uint64_t>, std::uint64_t> awaiting_;     // (worker, seq) → id
    std::map<std::pair<unsigned, std::uint64_t>, std::uint64_t> awaitingFull_; // (worker, key) → id
    std::vector<stats::SeriesPoint> series_;
    // Per (vhost, route): the counts at the previous tick (collector thread only) and the points
    // (read under mutex_); per vhost: the points, from the sum of its routes' differences.
    struct ScopeState {
        std::uint64_t lastTotal = 0, lastErrors = 0;
        stats::SparseCounts last;
    };
    using ScopeKey = std::pair<std::string, std::string>; // (vhost label, route label)
    std::map<ScopeKey, ScopeState> scopeState_;
    std::map<ScopeKey, std::vector<stats::SeriesPoint>> routeSeries_;
    std::map<std::string, std::vector<stats::SeriesPoint>> vhostSeries_;
    stats::BucketCounts scratch_; // kBucketCount, zero between uses
    stats::BucketCounts lastCounts_;
    std::uint64_t lastTotal_ = 0, lastErrors_ = 0;
    std::int64_t lastTickUnix_ = 0;
    std::chrono::steady_clock::time_point lastCommit_;
    std::string storeError_;
    // Statistics kept after stop (the workers' recorders go away).
    std::optional<stats::Report> final_;
    stats::Report compute() const;
};

} // namespace portico::capture
