// The engine's Paused queue (rules/breakpoints.h).
#include <portico/rules/breakpoints.h>

#include <portico/http/message.h>

#include <algorithm>

namespace portico::rules {

std::string PausedExchange::url() const {
    const std::string& t = request.target;
    if (t.starts_with("http://") || t.starts_with("https://")) return t;
    return (scheme.empty() ? std::string("http") : scheme) + "://" + request.host + t;
}

namespace {

bool isToken(std::string_view s) {
    if (s.empty()) return false;
    return std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
    });
}

bool hasBreak(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) != s.npos; }

// `answer`: the fields of a response, where the connection writes the framing itself.
std::string checkFields(const PausedMessage& m, bool answer) {
    for (const auto& [name, value] : m.headers) {
        if (!isToken(name)) return "header name '" + name + "' is not a token (RFC 9110 §5.1)";
        if (hasBreak(value)) return "header " + name + ": a value cannot hold CR, LF or NUL";
        if (answer && (http::iequals(name, "content-length") || http::isHopByHop(name)))
            return "header " + name + " is written by the server (it follows the body and the connection)";
    }
    return {};
}

std::string checkStatus(int status) {
    if (status < 200 || status > 599) return "status must be 200..599 (a final answer; 1xx are interim)";
    return {};
}

} // namespace

std::string BreakpointQueue::check(const BreakpointDecision& d, config::Rule::Stage stage) {
    if (d.kind == BreakpointDecision::Kind::Respond) {
        if (std::string why = checkStatus(d.response.status); !why.empty()) return why;
        return checkFields(d.response, true);
    }
    if (d.kind != BreakpointDecision::Kind::Resume || !d.edited) return {};
    const PausedMessage& m = *d.edited;
    if (stage == config::Rule::Stage::Response) {
        if (std::string why = checkStatus(m.status); !why.empty()) return why;
        return checkFields(m, true);
    }
    if (!isToken(m.method)) return "method '" + m.method + "' is not a token (RFC 9110 §9.1)";
    const bool absolute = m.target.starts_with("http://") || m.target.starts_with("https://");
    if (!absolute && !m.target.starts_with('/')) return "the URL must start with / (or http:// or https://)";
    if (m.target.find_first_of(" \t\r\n") != std::string::npos || m.target.find('\0') != std::string::npos)
        return "the URL cannot hold spaces or control characters";
    if (hasBreak(m.host) || m.host.find_first_of(" \t/") != std::string::npos)
        return "host '" + m.host + "' is not an authority";
    return checkFields(m, false);
}

void BreakpointQueue::setEnabled(bool on) {
    std::lock_guard lock(mutex_);
    enabled_ = on;
}

bool BreakpointQueue::enabled() const {
    std::lock_guard lock(mutex_);
    return enabled_;
}

void BreakpointQueue::setListener(std::function<void()> listener) {
    std::lock_guard lock(mutex_);
    listener_ = std::move(listener);
}

std::vector<PausedExchange> BreakpointQueue::list() const {
    std::lock_guard lock(mutex_);
    std::vector<PausedExchange> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_)
        out.push_back(e.paused);
    return out;
}

std::size_t BreakpointQueue::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

std::uint64_t BreakpointQueue::generation() const {
    std::lock_guard lock(mutex_);
    return generation_;
}

void BreakpointQueue::changed() {
    std::function<void()> listener;
    {
        std::lock_guard lock(mutex_);
        listener = listener_;
    }
    if (listener) listener();
}

bool BreakpointQueue::decide(std::uint64_t id, BreakpointDecision d, std::string* error) {
    {
        std::lock_guard lock(mutex_);
        auto it =
            std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.paused.id == id; });
        if (it == entries_.end()) {
            if (error) *error = "exchange " + std::to_string(id) + " is no longer paused";
            return false;
        }
        if (std::string why = check(d, it->paused.stage); !why.empty()) {
            if (error) *error = why;
            return false;
        }
        if (d.edited && (it->paused.stage == config::Rule::Stage::Request
                             ? *d.edited == it->paused.request
                             : it->paused.response && *d.edited == *it->paused.response))
            d.edited.reset(); // the same as paused: unchanged
        Deliver deliver = std::move(it->deliver);
        entries_.erase(it);
        ++generation_;
        deliver(std::move(d));
    }
    changed();
    return true;
}

std::size_t BreakpointQueue::decideAll(const BreakpointDecision& d) {
    BreakpointDecision each = d;
    each.edited.reset();
    std::size_t n = 0;
    {
        std::lock_guard lock(mutex_);
        if (!check(each, config::Rule::Stage::Request).empty()) return 0;
        for (Entry& e : entries_) {
            e.deliver(each);
            ++n;
        }
        entries_.clear();
        if (n) ++generation_;
    }
    if (n) changed();
    return n;
}

std::uint64_t BreakpointQueue::add(PausedExchange paused, Deliver deliver) {
    std::uint64_t id = 0;
    {
        std::lock_guard lock(mutex_);
        id = nextId_++;
        paused.id = id;
        entries_.push_back({std::move(paused), std::move(deliver)});
        ++generation_;
    }
    changed();
    return id;
}

bool BreakpointQueue::remove(std::uint64_t id) {
    bool found = false;
    {
        std::lock_guard lock(mutex_);
        auto it =
            std::find_if(entries_.begin(), entries_.end(), [&](const Entry& e) { return e.paused.id == id; });
        if (it != entries_.end()) {
            entries_.erase(it);
            ++generation_;
            found = true;
        }
    }
    if (found) changed();
    return found;
}

} // namespace portico::rules
