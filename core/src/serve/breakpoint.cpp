// An exchange held at a breakpoint: its place in the Paused queue and its timeout (serve/breakpoint.h;
// serve::resume is in serve.cpp, beside the stage it continues).
#include "serve/breakpoint.h"

#include <boost/asio/post.hpp>

namespace portico::serve {

Paused::~Paused() {
    if (queue_ && shown.id) queue_->remove(shown.id);
}

void Paused::start(rules::BreakpointQueue& queue) {
    queue_ = &queue;
    shown.pausedAt = std::chrono::system_clock::now();
    shown.timeout = hit.action ? hit.action->breakpointTimeout : std::chrono::minutes(5);
    std::weak_ptr<Paused> weak = weak_from_this();
    boost::asio::io_context* ioc = io;
    // Under the queue's lock: only posts (the worker runs it; this object may be gone by then).
    shown.id = queue.add(shown, [weak, ioc](rules::BreakpointDecision d) {
        boost::asio::post(*ioc, [weak, d = std::move(d)]() mutable {
            auto self = weak.lock();
            if (!self || self->decision) return;
            self->decision = std::move(d);
            if (self->timer_) self->timer_->cancel();
            if (auto wake = self->wake) wake();
        });
    });
    timer_.emplace(*io);
    timer_->expires_after(shown.timeout);
    timer_->async_wait([weak](const boost::system::error_code& ec) {
        if (ec) return;
        if (auto self = weak.lock()) self->onTimeout();
    });
}

void Paused::onTimeout() {
    // Decided at the same moment: that decision is on its way and wins.
    if (decision || !queue_->remove(shown.id)) return;
    rules::BreakpointDecision d;
    d.timedOut = true;
    decision = std::move(d);
    if (auto w = wake) w();
}

} // namespace portico::serve
