// Ring slots, their encoding, and the worker's live statistics.
#include "capture/recorder.h"

#include <algorithm>
#include <chrono>

namespace portico::capture {

std::int64_t nowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::int64_t unixNowNs() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::int64_t unixNsAt(std::int64_t monoNs) {
    thread_local bool known = false;
    thread_local std::int64_t offset = 0, readAt = 0;
    if (!known || monoNs - readAt > 1'000'000'000) { // an older monoNs keeps the offset
        readAt = nowNs();
        offset = unixNowNs() - readAt;
        known = true;
    }
    return monoNs + offset;
}

// ---- SlotWriter ----

void SlotWriter::str(std::string_view s, std::size_t limit) {
    if (cap_ - used_ < 4) {
        head_->flags |= kHeadersTruncated;
        used_ = cap_;
        return;
    }
    std::size_t n = std::min<std::size_t>({s.size(), limit, cap_ - used_ - 4});
    if (n < s.size() && n < limit) head_->flags |= kHeadersTruncated;
    const auto len = static_cast<std::uint32_t>(n);
    std::memcpy(p_ + used_, &len, 4);
    if (n) std::memcpy(p_ + used_ + 4, s.data(), n); // s.data() may be null when empty
    used_ += 4 + n;
}

std::size_t SlotWriter::beginList() {
    if (cap_ - used_ < 4) {
        head_->flags |= kHeadersTruncated;
        used_ = cap_;
        return ~std::size_t{0};
    }
    const std::uint32_t zero = 0;
    std::memcpy(p_ + used_, &zero, 4);
    std::size_t at = used_;
    used_ += 4;
    return at;
}

void SlotWriter::pair(std::size_t list, std::string_view name, std::string_view value) {
    // Keep 8 bytes for the two body lengths that follow every list.
    if (list == ~std::size_t{0} || cap_ - used_ < name.size() + value.size() + 8 + 16) {
        head_->flags |= kHeadersTruncated;
        return;
    }
    std::uint32_t count = 0;
    std::memcpy(&count, p_ + list, 4);
    ++count;
    std::memcpy(p_ + list, &count, 4);
    str(name);
    str(value);
}

char* SlotWriter::bodyInPlace(std::size_t n) {
    if (cap_ - used_ < 4) return nullptr;
    pendingLen_ = std::min(n, cap_ - used_ - 4);
    return p_ + used_ + 4;
}

void SlotWriter::commitBody(std::size_t k) {
    if (cap_ - used_ < 4) {
        used_ = cap_;
        return;
    }
    k = std::min(k, pendingLen_);
    const auto len = static_cast<std::uint32_t>(k);
    std::memcpy(p_ + used_, &len, 4);
    used_ += 4 + k;
    pendingLen_ = 0;
}

// ---- decoding ----

namespace {
struct Reader {
    const char* p;
    std::size_t size;
    std::size_t at = 0;
    std::string str() {
        if (size - at < 4) {
            at = size;
            return {};
        }
        std::uint32_t n = 0;
        std::memcpy(&n, p + at, 4);
        at += 4;
        n = static_cast<std::uint32_t>(std::min<std::size_t>(n, size - at));
        std::string s(p + at, n);
        at += n;
        return s;
    }
    std::vector<Header> list() {
        std::vector<Header> out;
        if (size - at < 4) {
            at = size;
            return out;
        }
        std::uint32_t n = 0;
        std::memcpy(&n, p + at, 4);
        at += 4;
        for (std::uint32_t i = 0; i < n && at < size; ++i) {
            Header h;
            h.name = str();
            h.value = str();
            out.push_back(std::move(h));
        }
        return out;
    }
};
} // namespace

Exchange decodeSlot(const SlotHead& h, const char* payload) {
    Exchange e;
    e.connectionId = h.connectionId;
    e.streamId = h.streamId;
    e.protocol = static_cast<Protocol>(h.protocol);
    e.httpVersion = h.httpVersion;
    e.localPort = h.localPort;
    e.source = h.source <= static_cast<std::uint8_t>(Source::Tunnel) ? static_cast<Source>(h.source)
                                                                     : Source::Server;
    e.status = h.status;
    e.flags = h.flags;
    e.startedUnixNs = h.startedUnixNs;
    for (std::size_t i = 0; i < kPhaseCount; ++i)
        e.phases[i] = h.phases[i];
    e.requestBodySize = h.requestBodySize;
    e.responseBodySize = h.responseBodySize;
    e.requestHeadersSize = h.requestHeadersSize;
    e.responseHeadersSize = h.responseHeadersSize;
    Reader r{payload, h.used};
    e.tlsVersion = r.str();
    e.alpn = r.str();
    e.upstreamAddress = r.str();
    e.upstreamTlsVersion = r.str();
    e.upstreamAlpn = r.str();
    e.client = r.str();
    e.vhost = r.str();
    e.route = r.str();
    e.method = r.str();
    e.scheme = r.str();
    e.authority = r.str();
    e.target = r.str();
    e.error = r.str();
    e.requestHeaders = r.list();
    e.requestTrailers = r.list();
    e.responseHeaders = r.list();
    e.rules = splitRuleNames(r.str());
    e.originalRequestFields = r.str();
    e.originalResponseFields = r.str();
    e.requestBody = r.str();
    e.responseBody = r.str();
    e.originalRequestBody = r.str(); // absent (a record no replace_body changed): ""
    e.originalResponseBody = r.str();
    if (e.requestBody.size() < e.requestBodySize) e.flags |= kRequestBodyTruncated;
    if (e.responseBody.size() < e.responseBodySize) e.flags |= kResponseBodyTruncated;
    return e;
}

// ---- rings ----

Ring::Ring(std::size_t slots, std::size_t slotBytes)
    : slots_(slots), slotBytes_((std::max(slotBytes, sizeof(SlotHead) + 256) + 63) & ~std::size_t{63}),
      mem_(new char[slots_ * slotBytes_]) {}

SlotHead* Ring::reserve(std::size_t k) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed) + k;
    if (head - tail_.load(std::memory_order_acquire) >= slots_) return nullptr;
    auto* h = reinterpret_cast<SlotHead*>(mem_.get() + (head % slots_) * slotBytes_);
    *h = SlotHead{};
    for (auto& ph : h->phases)
        ph = -1;
    return h;
}

bool CompletionRing::push(const Completion& c) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= buf_.size()) return false;
    buf_[head % buf_.size()] = c;
    head_.store(head + 1, std::memory_order_release);
    return true;
}

bool FullRing::push(FullRecord&& r) {
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) >= buf_.size()) return false;
    buf_[head % buf_.size()] = std::move(r);
    head_.store(head + 1, std::memory_order_release);
    return true;
}

void Recorder::ensureRings(std::size_t ringRecords, std::size_t recordBytes) {
    if (ringOwner_) return;
    ringOwner_ = std::make_unique<Ring>(ringRecords, recordBytes);
    completions_ = std::make_unique<CompletionRing>(ringRecords);
    // WebSocket sessions open and close far less often than requests complete.
    full_ = std::make_unique<FullRing>(std::max<std::size_t>(64, ringRecords / 4));
    ring_.store(ringOwner_.get(), std::memory_order_release);
}

bool Recorder::publishFull(std::uint64_t key, bool final, std::unique_ptr<Exchange> record) {
    if (!full_ || !full_->push(FullRecord{key, final, std::move(record)})) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    return true;
}

SlotHead* Recorder::reserve(std::size_t k) {
    Ring* r = ring_.load(std::memory_order_relaxed);
    SlotHead* h = r ? r->reserve(k) : nullptr;
    if (!h) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    h->seq = nextSeq_ + k;
    return h;
}

// ---- stats ----

WorkerStats::Group* WorkerStats::group(std::string_view vhost, std::string_view route) {
    const std::size_t n = count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i)
        if (groups_[i]->vhost == vhost && groups_[i]->route == route) return groups_[i].get();
    if (n == kMaxGroups) {
        for (std::size_t i = 0; i < n; ++i)
            if (groups_[i]->route == "(other)") return groups_[i].get();
        return groups_[n - 1].get();
    }
    auto g = std::make_unique<Group>();
    g->vhost = vhost;
    g->route = n + 1 == kMaxGroups ? std::string("(other)") : std::string(route);
    groups_[n] = std::move(g);
    count_.store(n + 1, std::memory_order_release);
    return groups_[n].get();
}

} // namespace portico::capture
