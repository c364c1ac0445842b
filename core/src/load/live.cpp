// The live totals a load run's threads publish.
#include <portico/load/live.h>

namespace portico::load {

Live::Totals Live::totals(stats::Histogram* latency) const {
    Totals t;
    if (latency) latency->reset();
    std::lock_guard lock(mutex_);
    if (!started_) return t;
    t.started = true;
    t.address = address_;
    t.elapsed = std::chrono::steady_clock::now() - start_;
    std::unique_ptr<stats::Histogram> own;
    if (!latency) own = std::make_unique<stats::Histogram>();
    stats::Histogram* merged = latency ? latency : own.get();
    for (std::size_t i = 0; i < latency_.size(); ++i) {
        merged->merge(*latency_[i]);
        t.completed += completed_[i];
        t.failed += failed_[i];
    }
    t.p50Ns = merged->valueAtPercentile(50);
    t.p99Ns = merged->valueAtPercentile(99);
    return t;
}

void Live::begin(std::size_t threads, std::string address, std::chrono::steady_clock::time_point start) {
    std::lock_guard lock(mutex_);
    started_ = true;
    address_ = std::move(address);
    start_ = start;
    latency_.clear();
    for (std::size_t i = 0; i < threads; ++i)
        latency_.push_back(std::make_unique<stats::Histogram>());
    completed_.assign(threads, 0);
    failed_.assign(threads, 0);
}

void Live::publish(std::size_t thread, const stats::Histogram& latency, std::uint64_t completed,
                   std::uint64_t failed) {
    std::lock_guard lock(mutex_);
    if (thread >= latency_.size()) return;
    *latency_[thread] = latency;
    completed_[thread] = completed;
    failed_[thread] = failed;
}

} // namespace portico::load
