// The worker side of capture: a single-producer/single-consumer ring of fixed-size, preallocated
// record slots, a small ring of completion events, and the worker's live statistics. The worker
// (producer) never blocks and never allocates per request: when a ring is full the record's
// details are dropped and counted; statistics always count the exchange.
#pragma once

#include <portico/capture/exchange.h>
#include <portico/stats/live.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace portico::capture {

/// Fixed part of a ring slot; the variable part (strings, headers, bodies) follows it.
struct SlotHead {
    std::uint64_t seq = 0; ///< worker-local record sequence (for completions)
    std::uint64_t connectionId = 0;
    std::uint32_t streamId = 0;
    std::uint8_t protocol = 0;
    std::uint8_t httpVersion = 11;
    std::uint16_t localPort = 0;
    std::uint8_t source = 0; ///< Source
    std::int32_t status = 0;
    std::uint32_t flags = 0;
    std::int64_t startedUnixNs = 0;
    std::int64_t phases[kPhaseCount];
    std::uint64_t requestBodySize = 0;
    std::uint64_t responseBodySize = 0;
    std::uint64_t requestHeadersSize = 0;
    std::uint64_t responseHeadersSize = 0;
    std::uint32_t used = 0; ///< payload bytes
};

/// Writes the payload of a slot: strings as (u32 length, bytes), header lists as (u32 count,
/// pairs). Never writes past `cap`; what does not fit is cut and flagged.
class SlotWriter {
public:
    SlotWriter(SlotHead* head, char* payload, std::size_t cap) : head_(head), p_(payload), cap_(cap) {}
    /// A string, cut to what fits (at most `limit` bytes).
    void str(std::string_view s, std::size_t limit = ~std::size_t{0});
    /// Starts a header list; returns a handle for add/end.
    std::size_t beginList();
    /// Adds a pair if it fits whole (else flags kHeadersTruncated).
    void pair(std::size_t list, std::string_view name, std::string_view value);
    /// Room left for a body prefix written with `bodyInPlace`.
    std::size_t room() const { return cap_ - used_ > 4 ? cap_ - used_ - 4 : 0; }
    /// Reserves a string of up to `n` bytes and returns where to write it; `commitBody(k)` sets its length.
    char* bodyInPlace(std::size_t n);
    void commitBody(std::size_t k);
    void finish() { head_->used = static_cast<std::uint32_t>(used_); }

private:
    SlotHead* head_;
    char* p_;
    std::size_t cap_;
    std::size_t used_ = 0;
    std::size_t pendingLen_ = 0;
    std::uint32_t listCount_ = 0;
};

/// Reads a slot back into an Exchange (collector thread).
Exchange decodeSlot(const SlotHead& head, const char* payload);

/// A completion event: the end of an HTTP/1.1 response whose record was published before it was
/// fully written (write blocked, mock latency).
struct Completion {
    std::uint64_t seq = 0;
    std::int64_t firstByteNs = -1;
    std::int64_t doneNs = -1;
    std::uint32_t error = 0; ///< 1: the connection closed before the response was written
};

/// SPSC ring of `slots` slots of `slotBytes` bytes (SlotHead included).
class Ring {
public:
    Ring(std::size_t slots, std::size_t slotBytes);
    std::size_t slotBytes() const { return slotBytes_; }
    std::size_t capacity() const { return slots_; }
    // Producer.
    /// The k-th not yet published slot (k = 0 is the next one); null when the ring has no room.
    SlotHead* reserve(std::size_t k);
    char* payload(SlotHead* h) { return reinterpret_cast<char*>(h) + sizeof(SlotHead); }
    std::size_t payloadBytes() const { return slotBytes_ - sizeof(SlotHead); }
    /// Makes the next `n` reserved slots visible to the consumer.
    /// The k-th not yet published slot as it was written (no reset); k below what was reserved.
    SlotHead* pending(std::size_t k) {
        return reinterpret_cast<SlotHead*>(
            mem_.get() + ((head_.load(std::memory_order_relaxed) + k) % slots_) * slotBytes_);
    }
    /// Returns true when these `n` took the ring to half its capacity or past it from below: the
    /// moment to wake the consumer early (Recorder::publish does).
    bool publish(std::size_t n) {
        const std::uint64_t head = head_.load(std::memory_order_relaxed) + n;
        head_.store(head, std::memory_order_release);
        const std::uint64_t used = head - tail_.load(std::memory_order_relaxed);
        return used >= slots_ / 2 && used - n < slots_ / 2;
    }
    // Consumer.
    /// Calls fn(const SlotHead&, const char* payload) for at most `max` published slots, oldest first.
    template <class F> std::size_t drain(F&& fn, std::size_t max) {
        std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        const std::uint64_t head = head_.load(std::memory_order_acquire);
        std::size_t n = 0;
        for (; tail != head && n < max; ++tail, ++n) {
            auto* h = reinterpret_cast<const SlotHead*>(mem_.get() + (tail % slots_) * slotBytes_);
            fn(*h, reinterpret_cast<const char*>(h) + sizeof(SlotHead));
        }
        tail_.store(tail, std::memory_order_release);
        return n;
    }

private:
    std::size_t slots_;
    std::size_t slotBytes_;
    std::unique_ptr<char[]> mem_;
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> tail_{0};
};

/// SPSC ring of completions (fixed capacity; overflow is counted as dropped).
class CompletionRing {
public:
    explicit CompletionRing(std::size_t n) : buf_(n) {}
    bool push(const Completion& c);
    template <class F> void drain(F&& fn) {
        std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        const std::uint64_t head = head_.load(std::memory_order_acquire);
        for (; tail != head; ++tail)
            fn(buf_[tail % buf_.size()]);
        tail_.store(tail, std::memory_order_release);
    }

private:
    std::vector<Completion> buf_;
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> tail_{0};
};

/// A whole record built on the worker (a WebSocket session: too large and too long-lived for a
/// fixed slot). `key` is worker-local: the final version of a record (`final`) replaces the
/// version published before under the same key.
struct FullRecord {
    std::uint64_t key = 0;
    bool final = true;
    std::unique_ptr<Exchange> record;
};

/// SPSC ring of full records (fixed capacity; a push into a full ring fails).
class FullRing {
public:
    explicit FullRing(std::size_t n) : buf_(n) {}
    bool push(FullRecord&& r);
    template <class F> void drain(F&& fn) {
        std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        const std::uint64_t head = head_.load(std::memory_order_acquire);
        for (; tail != head; ++tail)
            fn(std::move(buf_[tail % buf_.size()]));
        tail_.store(tail, std::memory_order_release);
    }

private:
    std::vector<FullRecord> buf_;
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> tail_{0};
};

/// Live statistics of one worker: overall and per (vhost, route) label.
class WorkerStats {
public:
    static constexpr std::size_t kMaxGroups = 512; ///< more distinct routes go to "(other)"
    struct Group {
        std::string vhost;
        std::string route;
        stats::LiveHistogram hist;
    };
    /// Writer: the group for these labels (created on first use; the only allocation).
    Group* group(std::string_view vhost, std::string_view route);
    stats::LiveHistogram overall;
    /// Readers: groups published so far.
    std::size_t groupCount() const { return count_.load(std::memory_order_acquire); }
    const Group& groupAt(std::size_t i) const { return *groups_[i]; }

private:
    std::unique_ptr<Group> groups_[kMaxGroups];
    std::atomic<std::size_t> count_{0};
};

/// What a worker calls when its ring is half full, so the collector drains before its wait ends
/// (the collector implements it). Called on the worker thread; must not block.
class ProcessLookup;

class RingWaker {
public:
    virtual void ringHalfFull() = 0;

protected:
    ~RingWaker() = default;
};

/// Everything a worker shares with the collector. Created with the worker; the rings are
/// allocated when the worker first captures (sizes from the config in force then).
class Recorder {
public:
    explicit Recorder(unsigned workerIndex) : workerIndex_(workerIndex) {}
    unsigned workerIndex() const { return workerIndex_; }

    // ---- worker thread ----
    /// Allocates the rings on first use. False if capture is unusable (never after success).
    void ensureRings(std::size_t ringRecords, std::size_t recordBytes);
    Ring* ring() { return ring_.load(std::memory_order_relaxed); }
    std::uint64_t nextSeq() const { return nextSeq_; }
    /// Takes the k-th pending slot for a record; null (and counted as dropped) when full.
    SlotHead* reserve(std::size_t k);
    void publish(std::size_t n) {
        nextSeq_ += n;
        if (ring_.load(std::memory_order_relaxed)->publish(n))
            if (RingWaker* w = waker_.load(std::memory_order_acquire)) w->ringHalfFull();
    }
    void complete(const Completion& c) {
        if (!completions_ || !completions_->push(c)) dropped_.fetch_add(1, std::memory_order_relaxed);
    }
    std::uint64_t newConnectionId() { return (std::uint64_t{workerIndex_} << 48) | ++connections_; }
    /// A key for a full record and its later final version.
    std::uint64_t newFullKey() { return ++fullKeys_; }
    /// Hands a whole record to the collector; false (and counted as dropped) when its ring is full.
    /// Never blocks.
    bool publishFull(std::uint64_t key, bool final, std::unique_ptr<Exchange> record);
    WorkerStats stats;

    // ---- collector thread ----
    Ring* ringForReader() const { return ring_.load(std::memory_order_acquire); }
    CompletionRing* completionsForReader() const {
        return ring_.load(std::memory_order_acquire) ? completions_.get() : nullptr;
    }
    FullRing* fullForReader() const { return ring_.load(std::memory_order_acquire) ? full_.get() : nullptr; }
    std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
    /// Who to wake when the ring reaches half full (null: nobody); set by the collector at start
    /// and cleared at stop, while the worker may be publishing.
    void setWaker(RingWaker* w) { waker_.store(w, std::memory_order_release); }
    /// Where a worker asks for a connection's client process (the collector's; null when none).
    void setProcessLookup(ProcessLookup* p) { processes_.store(p, std::memory_order_release); }
    ProcessLookup* processLookup() const { return processes_.load(std::memory_order_acquire); }

private:
    unsigned workerIndex_;
    std::unique_ptr<Ring> ringOwner_;
    std::unique_ptr<CompletionRing> completions_;
    std::unique_ptr<FullRing> full_;
    std::atomic<Ring*> ring_{nullptr};
    std::atomic<RingWaker*> waker_{nullptr};
    std::atomic<ProcessLookup*> processes_{nullptr};
    std::uint64_t nextSeq_ = 1;
    std::uint64_t connections_ = 0;
    std::uint64_t fullKeys_ = 0;
    std::atomic<std::uint64_t> dropped_{0};
};

/// Monotonic clock in ns (steady_clock), the timeline's clock.
std::int64_t nowNs();
/// Wall clock in ns since the Unix epoch.
std::int64_t unixNowNs();
/// The wall-clock time (ns since the Unix epoch) of the monotonic instant `monoNs` (a nowNs()
/// value): `monoNs` plus the offset between the two clocks, read at most once a second per thread
/// (a step of the wall clock shows within a second). Two clock reads less per record.
std::int64_t unixNsAt(std::int64_t monoNs);

} // namespace portico::capture
