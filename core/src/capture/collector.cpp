// Collector thread: drain rings → window (+ store), completions, 1 s time series.
#include "capture/collector.h"

#include "capture/process_lookup.h"
#include <portico/http/ascii.h>

#include <algorithm>
#include <iterator>
#include <pthread.h>

namespace portico::capture {

namespace {
constexpr auto kCommitEvery = std::chrono::milliseconds(250); // the dropped-records count
// The session file's transactions: the drains between two commits share one (a commit per drain
// rewrote the same B-tree pages each time once drains came every few milliseconds).
constexpr auto kStoreCommitEvery = std::chrono::milliseconds(50);
// Records taken from one ring per drain: small enough that a commit (and the count of records the
// rings dropped) is never more than a fraction of a second old, even when the store is slower
// than the traffic (then the rings drop, and say so, instead of the file falling behind).
constexpr std::size_t kDrainBatch = 512;
// How long a drain waits for a forward-proxy connection's client process lookup still running (a
// scan of /proc takes a few ms; more on a loaded machine). Only records of such connections wait.
constexpr auto kProcessWait = std::chrono::milliseconds(250);
constexpr std::size_t kSeriesSlots = 300;
constexpr auto kCheckpointEvery = std::chrono::milliseconds(100);

stats::SeriesPoint pointOf(std::int64_t unixSecond, const stats::SparseCounts& diff, std::uint64_t errors) {
    stats::SeriesPoint p;
    p.unixSecond = unixSecond;
    p.errors = errors;
    for (const auto& [index, c] : diff)
        p.count += c;
    if (p.count) {
        p.p50 = stats::percentileOf(diff, 50);
        p.p90 = stats::percentileOf(diff, 90);
        p.p99 = stats::percentileOf(diff, 99);
        p.max = stats::bucketHighest(diff.back().first);
    }
    return p;
}

void appendPoint(std::vector<stats::SeriesPoint>& series, const stats::SeriesPoint& p) {
    series.push_back(p);
    if (series.size() > kSeriesSlots) series.erase(series.begin());
}
} // namespace

std::int64_t Exchange::durationNs() const {
    const std::int64_t start = at(Phase::RequestHeaders);
    if (start < 0) return -1;
    std::int64_t end = -1;
    for (std::size_t i = static_cast<std::size_t>(Phase::RequestHeaders); i < kPhaseCount; ++i)
        end = std::max(end, phases[i]);
    return end < start ? -1 : end - start;
}

std::string Exchange::url() const {
    auto startsWithNoCase = [this](std::string_view prefix) {
        return target.size() >= prefix.size() &&
               http::iequals(std::string_view(target).substr(0, prefix.size()), prefix);
    };
    if (startsWithNoCase("http://") || startsWithNoCase("https://")) return target; // absolute-form
    if (http::iequals(method, "CONNECT")) return target;                            // authority-form
    const std::string base = (scheme.empty() ? std::string("http") : scheme) + "://" + authority;
    if (target == "*") return base; // OPTIONS * (asterisk-form)
    return base + target;
}

namespace {
using http::iequals;
std::string_view find(const std::vector<Header>& h, std::string_view name) {
    for (const auto& x : h)
        if (iequals(x.name, name)) return x.value;
    return {};
}
} // namespace

std::string_view Exchange::requestHeader(std::string_view name) const { return find(requestHeaders, name); }
std::string_view Exchange::responseHeader(std::string_view name) const { return find(responseHeaders, name); }

namespace {
// A trailer of a gRPC call: the trailers, else the headers of a Trailers-Only answer.
const Header* grpcField(const Exchange& e, std::string_view name) {
    for (const auto* list : {&e.responseTrailers, &e.responseHeaders})
        for (const auto& h : *list)
            if (iequals(h.name, name)) return &h;
    return nullptr;
}
int hexDigit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}
} // namespace

int Exchange::grpcStatus() const {
    const Header* h = grpcField(*this, "grpc-status");
    if (!h || h->value.empty() || h->value.size() > 9) return -1;
    int n = 0;
    for (char c : h->value) {
        if (c < '0' || c > '9') return -1;
        n = n * 10 + (c - '0');
    }
    return n;
}

std::string Exchange::grpcMessage() const {
    const Header* h = grpcField(*this, "grpc-message");
    if (!h) return {};
    // PROTOCOL-HTTP2.md: grpc-message is percent-encoded UTF-8; a bad escape is kept as it is.
    std::string out;
    const std::string& v = h->value;
    for (std::size_t i = 0; i < v.size(); ++i) {
        int hi, lo;
        if (v[i] == '%' && i + 2 < v.size() && (hi = hexDigit(v[i + 1])) >= 0 &&
            (lo = hexDigit(v[i + 2])) >= 0) {
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(v[i]);
        }
    }
    return out;
}

std::vector<std::string> splitRuleNames(std::string_view lines) {
    std::vector<std::string> out;
    for (std::size_t at = 0; at < lines.size();) {
        const std::size_t eol = std::min(lines.find('\n', at), lines.size());
        if (eol > at) out.emplace_back(lines.substr(at, eol - at));
        at = eol + 1;
    }
    return out;
}

std::string joinRuleNames(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) {
        if (!out.empty()) out += '\n';
        out += n;
    }
    return out;
}

std::size_t Exchange::approximateBytes() const {
    std::size_t n = sizeof(Exchange) + tlsVersion.size() + alpn.size() + client.size() + vhost.size() +
                    route.size() + method.size() + scheme.size() + authority.size() + target.size() +
                    error.size() + requestBody.size() + responseBody.size() + originalRequestFields.size() +
                    originalResponseFields.size() + originalRequestBody.size() + originalResponseBody.size();
    for (const auto& r : rules)
        n += sizeof(std::string) + r.size();
    for (const auto* list : {&requestHeaders, &requestTrailers, &responseHeaders, &responseTrailers})
        for (const auto& h : *list)
            n += sizeof(Header) + h.name.size() + h.value.size();
    for (const auto& m : messages)
        n += sizeof(Message) + m.data.size();
    return n;
}

Collector::Collector(const config::Capture& cfg, std::unique_ptr<Store> store)
    : cfg_(cfg), store_(std::move(store)) {
    if (!store_) return;
    nextId_ = store_->maxId() + 1;
    storeOldest_ = store_->minId();
    std::string error;
    reader_ = Store::openReadOnly(store_->path(), error);
    if (!reader_) storeError_ = error;
}

Collector::~Collector() { stop(); }

void Collector::start(std::vector<Recorder*> recorders) {
    recorders_ = std::move(recorders);
    if (!processes_) processes_ = std::make_unique<ProcessLookup>();
    for (auto* rec : recorders_) {
        rec->setWaker(this);
        rec->setProcessLookup(processes_.get());
    }
    stop_ = false;
    final_.reset();
    lastCommit_ = std::chrono::steady_clock::now();
    lastTickUnix_ = unixNowNs() / 1'000'000'000;
    // Threads are named here, not inside them, so the names are there when start() returns. The
    // writer first: the collector's first drain hands its batch over to it.
    if (store_) {
        storeStop_ = false;
        storeRunning_ = true;
        storeThread_ = std::thread([this] { writeStore(); });
        pthread_setname_np(storeThread_.native_handle(), "portico-store");
    }
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "portico-capture");
    std::string error;
    if (store_ && (checkpointStore_ = Store::openForCheckpoints(store_->path(), error))) {
        checkpointStop_ = false;
        checkpointThread_ = std::thread([this] {
            std::unique_lock lock(checkpointMutex_);
            while (!checkpointCv_.wait_for(lock, kCheckpointEvery, [&] { return checkpointStop_; })) {
                lock.unlock();
                checkpointStore_->checkpoint(); // a failure is retried next time; the writer goes on
                lock.lock();
            }
        });
        pthread_setname_np(checkpointThread_.native_handle(), "portico-ckpt");
    }
}

void Collector::stop() {
    if (!thread_.joinable()) return;
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    if (checkpointThread_.joinable()) {
        {
            std::lock_guard lock(checkpointMutex_);
            checkpointStop_ = true;
        }
        checkpointCv_.notify_all();
        checkpointThread_.join();
        checkpointStore_.reset();
    }
    for (auto* rec : recorders_) {
        rec->setWaker(nullptr);
        rec->setProcessLookup(nullptr); // the lookup thread lives on with this collector
    }
    {
        std::lock_guard d(drainMutex_);
        drain();
        if (store_) {
            StoreJob last;
            last.dropped = dropped();
            last.commit = true;
            queueStore(std::move(last));
        }
    }
    if (storeThread_.joinable()) {
        {
            std::lock_guard s(storeMutex_);
            storeStop_ = true; // the writer finishes the queue first
        }
        storeCv_.notify_all();
        storeThread_.join();
    }
    auto r = compute();
    std::lock_guard lock(mutex_);
    droppedAtStop_ = 0;
    for (auto* rec : recorders_)
        droppedAtStop_ += rec->dropped();
    final_ = std::move(r);
    recorders_.clear();
}

std::chrono::nanoseconds Collector::nextWait(double fullestShare, std::chrono::nanoseconds interval,
                                             std::chrono::nanoseconds previous) {
    const std::chrono::nanoseconds shortest = kMinWait;
    const std::chrono::nanoseconds longest =
        std::clamp<std::chrono::nanoseconds>(2 * previous, shortest, kMaxWait);
    if (!(fullestShare > 0)) return longest;
    const double ns = 0.25 * static_cast<double>(interval.count()) / fullestShare;
    if (ns >= static_cast<double>(longest.count())) return longest;
    if (ns <= static_cast<double>(shortest.count())) return shortest;
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

void Collector::ringHalfFull() {
    // Without mutex_ (a worker must not wait on readers): a wake-up that lands between the wait's
    // check and its sleep is lost, and that drain comes when the wait ends instead.
    woken_.store(true);
    cv_.notify_one();
}

void Collector::run() {
    bool more = false;
    std::chrono::nanoseconds wait = kMaxWait;
    auto lastDrain = std::chrono::steady_clock::now();
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            if (!more) cv_.wait_for(lock, wait, [&] { return stop_ || woken_.load(); });
            if (stop_) return;
            woken_.store(false);
        }
        std::lock_guard d(drainMutex_);
        const auto now = std::chrono::steady_clock::now();
        if (store_ && storeBacklogged()) {
            // The session file is behind: the rings hold what comes meanwhile (and drop past it).
            more = false;
            wait = kMinWait * 5;
        } else {
            more = drain();
            wait = nextWait(fullestShare_, now - lastDrain, wait);
            lastDrain = now;
        }
        const std::int64_t sec = unixNowNs() / 1'000'000'000;
        if (sec != lastTickUnix_) {
            tickSeries();
            lastTickUnix_ = sec;
        }
        if (store_ && std::chrono::steady_clock::now() - lastCommit_ >= kCommitEvery) {
            // Records dropped this run (rings full), committed with the records they sit between.
            StoreJob count;
            count.dropped = dropped();
            queueStore(std::move(count));
            lastCommit_ = std::chrono::steady_clock::now();
        }
    }
}

void Collector::drainNow() {
    std::uint64_t seq = 0;
    {
        std::lock_guard d(drainMutex_);
        drain();
        if (!store_) return;
        StoreJob flush;
        flush.commit = true;
        seq = queueStore(std::move(flush));
    }
    waitStored(seq);
}

std::uint64_t Collector::queueStore(StoreJob&& job) {
    std::unique_lock s(storeMutex_);
    job.seq = ++storeQueuedSeq_;
    const std::uint64_t seq = job.seq;
    if (!storeRunning_ || storeStop_) {
        // No writer (before start, after stop, or stopping: then once it has finished its queue):
        // written here, under drainMutex_ as the callers hold it.
        doneCv_.wait(s, [&] { return !storeRunning_; });
        s.unlock();
        writeJob(job);
        s.lock();
        storeDoneSeq_ = seq;
        return seq;
    }
    storeQueuedBytes_ += job.bytes;
    storeQueue_.push_back(std::move(job));
    s.unlock();
    storeCv_.notify_one();
    return seq;
}

void Collector::waitStored(std::uint64_t seq) {
    std::unique_lock s(storeMutex_);
    doneCv_.wait(s, [&] { return storeDoneSeq_ >= seq; });
}

bool Collector::storeBacklogged() {
    std::lock_guard s(storeMutex_);
    return storeQueuedBytes_ > kMaxStoreQueueBytes;
}

void Collector::writeStore() {
    std::unique_lock s(storeMutex_);
    for (;;) {
        if (storeQueue_.empty()) {
            if (storeStop_) {
                storeRunning_ = false;
                doneCv_.notify_all();
                return;
            }
            // An open transaction is committed kStoreCommitEvery after the last commit, jobs or not.
            if (uncommitted_)
                storeCv_.wait_until(s, lastStoreCommit_ + kStoreCommitEvery,
                                    [&] { return storeStop_ || !storeQueue_.empty(); });
            else
                storeCv_.wait(s, [&] { return storeStop_ || !storeQueue_.empty(); });
        }
        std::optional<StoreJob> job;
        if (!storeQueue_.empty()) {
            job = std::move(storeQueue_.front());
            storeQueue_.pop_front();
        }
        s.unlock();
        if (job) {
            writeJob(*job);
        } else if (uncommitted_ && !commitStore()) {
            std::lock_guard lock(mutex_);
            storeError_ = store_->error();
        }
        s.lock();
        if (job) {
            storeQueuedBytes_ -= std::min(storeQueuedBytes_, job->bytes);
            storeDoneSeq_ = job->seq;
            doneCv_.notify_all();
        }
    }
}

void Collector::writeJob(StoreJob& job) {
    bool ok = true;
    if (!job.rows.empty()) {
        ok = store_->append(job.rows);
        if (ok) {
            appendedId_ = job.rows.back().id;
            if (!firstAppendedId_) firstAppendedId_ = job.rows.front().id;
        }
    }
    for (const auto& e : job.rewrites)
        ok = store_->update(e) && ok;
    if (job.dropped) ok = store_->setMeta("dropped_records", std::to_string(*job.dropped)) && ok;
    uncommitted_ = uncommitted_ || !job.rows.empty() || !job.rewrites.empty() || job.dropped;
    if (uncommitted_ &&
        (job.commit || std::chrono::steady_clock::now() - lastStoreCommit_ >= kStoreCommitEvery))
        ok = commitStore() && ok;
    maybeEvict();
    if (!ok) {
        std::lock_guard lock(mutex_);
        storeError_ = store_->error();
    }
}

bool Collector::commitStore() {
    uncommitted_ = false;
    lastStoreCommit_ = std::chrono::steady_clock::now();
    if (!store_->commit()) return false;
    {
        std::lock_guard lock(mutex_);
        committedId_ = appendedId_;
    }
    if (!storeOldest_.load(std::memory_order_relaxed) && firstAppendedId_)
        storeOldest_.store(firstAppendedId_, std::memory_order_relaxed);
    return true;
}

void Collector::maybeEvict() {
    // About once a second, new records or not (the cap may have been passed by the last batch).
    if (!store_ || !cfg_.storeMaxBytes) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - lastEvictCheck_ < kEvictEvery) return;
    lastEvictCheck_ = now;
    if (store_->evict(cfg_.storeMaxBytes)) storeOldest_.store(store_->minId(), std::memory_order_relaxed);
}

Exchange Collector::Stored::decode() const {
    if (full) {
        Exchange e = *full;
        e.id = id;
        return e;
    }
    Exchange e = decodeSlot(head, payload.data());
    e.id = id;
    if (!error.empty()) e.error = error;
    if (!clientProcess.empty()) e.clientProcess = clientProcess;
    return e;
}

bool Collector::takeFromRings(std::vector<Stored>& batch,
                              std::vector<std::pair<unsigned, Completion>>& completions,
                              std::vector<std::pair<unsigned, FullRecord>>& fulls) {
    bool more = false;
    fullestShare_ = 0;
    for (auto* rec : recorders_) {
        Ring* ring = rec->ringForReader();
        if (!ring) continue;
        const unsigned w = rec->workerIndex();
        // Records first, then completions: a completion always follows its record's publication.
        const std::size_t before = batch.size();
        ring->drain(
            [&](const SlotHead& h, const char* payload) {
                Stored& st = batch.emplace_back();
                st.head = h;
                st.payload.assign(payload, h.used);
                st.id = (static_cast<std::uint64_t>(w) << 48) | h.seq; // renumbered below
                if (h.source != static_cast<std::uint8_t>(Source::Server))
                    st.clientProcess = processes_->find(h.connectionId, kProcessWait);
            },
            kDrainBatch);
        const std::size_t taken = batch.size() - before;
        if (taken == kDrainBatch) more = true;
        fullestShare_ =
            std::max(fullestShare_, static_cast<double>(taken) / static_cast<double>(ring->capacity()));
        if (auto* c = rec->completionsForReader())
            c->drain([&](const Completion& x) { completions.emplace_back(w, x); });
        if (auto* f = rec->fullForReader())
            f->drain([&](FullRecord&& x) {
                if (x.record && x.record->source != Source::Server && x.record->clientProcess.empty())
                    x.record->clientProcess = processes_->find(x.record->connectionId, kProcessWait);
                fulls.emplace_back(w, std::move(x));
            });
    }
    return more;
}

// Whole records (WebSocket sessions): a final version replaces the one published at open, under
// its id, wherever it is (this batch, the window, or only the store); else it is a new record.
void Collector::applyFullRecords(std::vector<std::pair<unsigned, FullRecord>>& fulls,
                                 std::vector<Stored>& batch, std::vector<const Stored*>& updated,
                                 std::vector<Exchange>& storeOnlyUpdates) {
    for (auto& [w, f] : fulls) {
        if (!f.record) continue;
        std::shared_ptr<const Exchange> rec(std::move(f.record));
        if (f.final) {
            if (auto it = awaitingFull_.find({w, f.key}); it != awaitingFull_.end()) {
                const std::uint64_t id = it->second;
                awaitingFull_.erase(it);
                if (!batch.empty() && id >= batch.front().id) {
                    batch[id - batch.front().id].full = std::move(rec);
                } else if (!window_.empty() && id >= window_.front().id &&
                           id - window_.front().id < window_.size()) {
                    Stored& st = window_[id - window_.front().id];
                    windowBytes_ -= std::min(windowBytes_, st.bytes());
                    st.full = std::move(rec);
                    windowBytes_ += st.bytes();
                    updated.push_back(&st);
                } else if (store_) {
                    Exchange e = *rec;
                    e.id = id;
                    storeOnlyUpdates.push_back(std::move(e));
                }
                continue;
            }
        }
        Stored& st = batch.emplace_back();
        st.id = nextId_++;
        st.full = std::move(rec);
        if (!f.final) awaitingFull_[{w, f.key}] = st.id;
    }
    while (awaitingFull_.size() > 100000)
        awaitingFull_.erase(awaitingFull_.begin());
}

// Completions edit records of this batch or of the window (and the store).
void Collector::applyCompletions(const std::vector<std::pair<unsigned, Completion>>& completions,
                                 std::vector<Stored>& batch, std::vector<const Stored*>& updated) {
    for (auto& [w, c] : completions) {
        auto it = awaiting_.find({w, c.seq});
        if (it == awaiting_.end()) continue;
        const std::uint64_t id = it->second;
        awaiting_.erase(it);
        Stored* st = nullptr;
        if (!batch.empty() && id >= batch.front().id) st = &batch[id - batch.front().id];
        bool inWindow = false;
        if (!st && !window_.empty() && id >= window_.front().id && id - window_.front().id < window_.size()) {
            st = &window_[id - window_.front().id]; // ids in the window are consecutive
            inWindow = true;
        }
        if (!st) continue;
        if (c.firstByteNs >= 0)
            st->head.phases[static_cast<std::size_t>(Phase::ResponseFirstByte)] = c.firstByteNs;
        if (c.doneNs >= 0) {
            st->head.phases[static_cast<std::size_t>(Phase::ResponseDone)] = c.doneNs;
            st->head.flags &= ~kIncomplete;
        }
        if (c.error == 1 && st->error.empty()) st->error = "connection closed before the response was sent";
        if (inWindow) updated.push_back(st);
    }
    // Incomplete records older than the window's reach are never completed; forget old keys.
    while (awaiting_.size() > 100000)
        awaiting_.erase(awaiting_.begin());
}

bool Collector::drain() {
    std::vector<Stored> batch;
    std::vector<std::pair<unsigned, Completion>> completions;
    std::vector<std::pair<unsigned, FullRecord>> fulls;
    const bool more = takeFromRings(batch, completions, fulls);
    if (batch.empty() && completions.empty() && fulls.empty()) return false;
    // Ids in the order the exchanges started, not worker by worker: one drain holds records of
    // every worker from the last 50 ms.
    std::stable_sort(batch.begin(), batch.end(), [](const Stored& a, const Stored& b) {
        return a.head.startedUnixNs < b.head.startedUnixNs;
    });
    std::unique_lock lock(mutex_);
    for (auto& st : batch) {
        const unsigned w = static_cast<unsigned>(st.id >> 48);
        const std::uint64_t seq = st.id & ((1ull << 48) - 1);
        st.id = nextId_++;
        if (st.head.flags & kIncomplete) awaiting_[{w, seq}] = st.id;
    }
    std::vector<const Stored*> updated;
    std::vector<Exchange> storeOnlyUpdates;
    applyFullRecords(fulls, batch, updated, storeOnlyUpdates);
    applyCompletions(completions, batch, updated);
    // The store is written outside mutex_ (readers of the window do not wait on SQLite); the
    // window keeps every record until the store has committed it, so a reader always finds a
    // record in one of them.
    std::vector<Exchange> rows, rewrites;
    if (store_) {
        rows.reserve(batch.size());
        for (const auto& st : batch)
            rows.push_back(st.decode());
        for (const auto* st : updated)
            rewrites.push_back(st->decode());
        for (auto& e : storeOnlyUpdates)
            rewrites.push_back(std::move(e));
    }
    captured_ += batch.size();
    for (auto& st : batch) {
        windowBytes_ += st.bytes();
        window_.push_back(std::move(st));
    }
    if (!store_) {
        trimWindow();
        return more;
    }
    trimWindow();
    lock.unlock();
    if (!rows.empty() || !rewrites.empty()) {
        StoreJob job;
        for (const auto& e : rows)
            job.bytes += e.approximateBytes();
        for (const auto& e : rewrites)
            job.bytes += e.approximateBytes();
        job.rows = std::move(rows);
        job.rewrites = std::move(rewrites);
        queueStore(std::move(job));
    }
    return more;
}

void Collector::tickSeries() {
    stats::BucketCounts counts(stats::kBucketCount, 0);
    std::uint64_t total = 0, errors = 0;
    for (auto* rec : recorders_) {
        total += rec->stats.overall.count();
        errors += rec->stats.overall.errors();
        rec->stats.overall.addCounts(counts);
    }
    if (lastCounts_.empty()) lastCounts_.assign(stats::kBucketCount, 0);
    stats::BucketCounts diff(stats::kBucketCount, 0);
    std::uint64_t maxIdx = 0, n = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        diff[i] = counts[i] >= lastCounts_[i] ? counts[i] - lastCounts_[i] : 0;
        n += diff[i];
        if (diff[i]) maxIdx = i;
    }
    stats::SeriesPoint p;
    p.unixSecond = lastTickUnix_;
    p.count = n;
    p.errors = errors >= lastErrors_ ? errors - lastErrors_ : 0;
    if (n) {
        p.p50 = stats::percentileOf(diff, 50);
        p.p90 = stats::percentileOf(diff, 90);
        p.p99 = stats::percentileOf(diff, 99);
        p.max = stats::bucketHighest(maxIdx);
    }
    lastCounts_ = std::move(counts);
    lastTotal_ = total;
    lastErrors_ = errors;
    {
        std::lock_guard lock(mutex_);
        appendPoint(series_, p);
    }
    tickScopes();
}

void Collector::tickScopes() {
    // A (vhost, route) may have a group in every worker.
    std::map<ScopeKey, std::vector<const WorkerStats::Group*>> groups;
    for (auto* rec : recorders_)
        for (std::size_t i = 0, n = rec->stats.groupCount(); i < n; ++i) {
            const auto& g = rec->stats.groupAt(i);
            groups[{g.vhost, g.route}].push_back(&g);
        }
    if (scratch_.size() != stats::kBucketCount) scratch_.assign(stats::kBucketCount, 0);
    std::vector<std::pair<const ScopeKey*, stats::SeriesPoint>> routePoints;
    std::map<std::string, std::pair<stats::SparseCounts, std::uint64_t>> vhostDiffs; // diff, errors
    for (const auto& [key, list] : groups) {
        std::uint64_t total = 0, errors = 0;
        for (const auto* g : list) {
            total += g->hist.count();
            errors += g->hist.errors();
        }
        ScopeState& st = scopeState_[key];
        stats::SparseCounts diff;
        if (total != st.lastTotal) { // only a scope with new exchanges costs a pass over the buckets
            for (const auto* g : list)
                g->hist.addCounts(scratch_);
            stats::SparseCounts now;
            for (std::size_t i = 0; i < scratch_.size(); ++i)
                if (scratch_[i]) {
                    now.emplace_back(static_cast<std::uint32_t>(i), scratch_[i]);
                    scratch_[i] = 0;
                }
            auto before = st.last.begin();
            for (const auto& [index, c] : now) { // bucket counts never decrease
                while (before != st.last.end() && before->first < index)
                    ++before;
                const std::uint64_t was =
                    before != st.last.end() && before->first == index ? before->second : 0;
                if (c > was) diff.emplace_back(index, c - was);
            }
            st.last = std::move(now);
        }
        const std::uint64_t newErrors = errors >= st.lastErrors ? errors - st.lastErrors : 0;
        st.lastTotal = total;
        st.lastErrors = errors;
        routePoints.emplace_back(&key, pointOf(lastTickUnix_, diff, newErrors));
        auto& v = vhostDiffs[key.first];
        v.first.insert(v.first.end(), diff.begin(), diff.end());
        v.second += newErrors;
    }
    std::vector<std::pair<std::string, stats::SeriesPoint>> vhostPoints;
    for (auto& [vhost, d] : vhostDiffs) {
        auto& [parts, errors] = d;
        std::sort(parts.begin(), parts.end());
        stats::SparseCounts merged;
        for (const auto& [index, c] : parts)
            if (!merged.empty() && merged.back().first == index)
                merged.back().second += c;
            else
                merged.emplace_back(index, c);
        vhostPoints.emplace_back(vhost, pointOf(lastTickUnix_, merged, errors));
    }
    std::lock_guard lock(mutex_);
    for (const auto& [key, p] : routePoints)
        appendPoint(routeSeries_[*key], p);
    for (const auto& [vhost, p] : vhostPoints)
        appendPoint(vhostSeries_[vhost], p);
}

stats::Report Collector::compute() const {
    stats::Report r;
    std::map<std::pair<std::string, std::string>, stats::GroupStats> routes;
    for (auto* rec : recorders_) {
        r.overall.count += rec->stats.overall.count();
        r.overall.errors += rec->stats.overall.errors();
        r.overall.clientErrors += rec->stats.overall.clientErrors();
        rec->stats.overall.addTo(r.overall.histogram);
        for (std::size_t i = 0, n = rec->stats.groupCount(); i < n; ++i) {
            const auto& g = rec->stats.groupAt(i);
            auto& out = routes[{g.vhost, g.route}];
            out.vhost = g.vhost;
            out.route = g.route;
            out.count += g.hist.count();
            out.errors += g.hist.errors();
            out.clientErrors += g.hist.clientErrors();
            g.hist.addTo(out.histogram);
        }
    }
    std::map<std::string, stats::GroupStats> vhosts;
    for (auto& [key, g] : routes) {
        auto& v = vhosts[key.first];
        v.vhost = key.first;
        v.count += g.count;
        v.errors += g.errors;
        v.clientErrors += g.clientErrors;
        v.histogram.merge(g.histogram);
        r.routes.push_back(std::move(g));
    }
    for (auto& [k, v] : vhosts)
        r.vhosts.push_back(std::move(v));
    return r;
}

void Collector::trimWindow() {
    while (!window_.empty() && (window_.size() > cfg_.maxRecords || windowBytes_ > cfg_.maxBytes)) {
        // With a working session file, a record leaves the window only once committed there (a
        // reader finds every record in one of them); the window may pass its cap by a commit's
        // worth. A file that failed (disk full) holds nothing back: the window keeps its cap.
        if (store_ && storeError_.empty() && window_.front().id > committedId_) break;
        windowBytes_ -= std::min(windowBytes_, window_.front().bytes());
        window_.pop_front();
    }
}

std::vector<Exchange> Collector::recent(std::uint64_t sinceId, std::size_t max) const {
    std::unique_lock lock(mutex_);
    std::vector<Exchange> out;
    // Records older than the window are read back from the session file (without their bodies:
    // callers of recent() want rows; get() has the rest). Every id below the window's front is
    // committed there (the window lets a record go only after its commit); the window may move on
    // while the file is read, so look again until the read reaches it or the file has no more.
    while (reader_ && out.size() < max && (window_.empty() || sinceId + 1 < window_.front().id)) {
        const std::uint64_t front = window_.empty() ? ~std::uint64_t{0} : window_.front().id;
        lock.unlock();
        std::vector<Exchange> older;
        {
            std::lock_guard r(readerMutex_);
            older = reader_->load(sinceId, max - out.size(), false);
        }
        std::erase_if(older, [front](const Exchange& e) { return e.id >= front; });
        lock.lock();
        if (older.empty()) break; // evicted, or nothing newer in the file: the window follows
        sinceId = older.back().id;
        out.insert(out.end(), std::make_move_iterator(older.begin()), std::make_move_iterator(older.end()));
    }
    if (out.size() >= max) return out;
    // Copied under the lock (a memcpy of each slot's bytes), decoded after it: the collector's
    // next drain waits on this lock, and decoding costs several times the copy.
    std::vector<Stored> copies;
    auto pos = std::upper_bound(window_.begin(), window_.end(), sinceId,
                                [](std::uint64_t v, const Stored& x) { return v < x.id; });
    copies.reserve(std::min<std::size_t>(max - out.size(), static_cast<std::size_t>(window_.end() - pos)));
    for (; pos != window_.end() && out.size() + copies.size() < max; ++pos)
        copies.push_back(*pos);
    lock.unlock();
    out.reserve(out.size() + copies.size());
    for (const Stored& st : copies)
        out.push_back(st.decode());
    return out;
}

std::optional<Exchange> Collector::get(std::uint64_t id) const {
    {
        std::lock_guard lock(mutex_);
        auto pos = std::lower_bound(window_.begin(), window_.end(), id,
                                    [](const Stored& x, std::uint64_t v) { return x.id < v; });
        if (pos != window_.end() && pos->id == id) return pos->decode();
        if (!reader_ || id >= nextId_) return std::nullopt;
    }
    std::lock_guard r(readerMutex_);
    return reader_->get(id);
}

bool Collector::saveCopy(const std::string& path, std::string& error) {
    if (!reader_) {
        error = "capture has no session file";
        return false;
    }
    drainNow();
    std::lock_guard r(readerMutex_);
    if (reader_->copyTo(path)) return true;
    error = reader_->error();
    return false;
}

stats::Report Collector::report() const {
    stats::Report r;
    bool stopped = false;
    {
        std::lock_guard lock(mutex_);
        stopped = final_.has_value();
        if (stopped) r = *final_;
    }
    if (!stopped) r = compute();
    std::lock_guard lock(mutex_);
    r.overall.series = series_;
    for (auto& v : r.vhosts)
        if (auto it = vhostSeries_.find(v.vhost); it != vhostSeries_.end()) v.series = it->second;
    for (auto& g : r.routes)
        if (auto it = routeSeries_.find({g.vhost, g.route}); it != routeSeries_.end()) g.series = it->second;
    return r;
}

std::uint64_t Collector::dropped() const {
    std::lock_guard lock(mutex_);
    if (recorders_.empty()) return droppedAtStop_;
    std::uint64_t n = 0;
    for (auto* rec : recorders_)
        n += rec->dropped();
    return n;
}

std::uint64_t Collector::oldestId() const {
    if (reader_)
        if (const std::uint64_t id = storeOldest_.load(std::memory_order_relaxed)) return id;
    std::lock_guard lock(mutex_);
    return window_.empty() ? 0 : window_.front().id;
}

std::uint64_t Collector::captured() const {
    std::lock_guard lock(mutex_);
    return captured_;
}

std::uint64_t Collector::lastId() const {
    std::lock_guard lock(mutex_);
    return nextId_ - 1;
}

std::string Collector::storeError() const {
    std::lock_guard lock(mutex_);
    return storeError_;
}

} // namespace portico::capture
