// Reads the top-level `rules:` list: each rule's name, enabled, stage and match (kept as text:
// validate parses it with the Traffic filter language) and its actions, one-key maps of
// set_header, remove_header, fail, map_local, map_remote, throttle, replace_body or breakpoint.
#include "config/throttle_presets.h"
#include "reader_impl.h"

#include <portico/http/message.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace portico::config::detail {

namespace {

constexpr std::string_view kRuleKeys[] = {"name", "enabled", "stage", "match", "actions"};
constexpr std::string_view kRuleStages[] = {"request", "response"};
constexpr std::string_view kRuleActionKeys[] = {"set_header", "remove_header", "fail",         "map_local",
                                                "map_remote", "throttle",      "replace_body", "breakpoint"};
// The action kinds, as error messages list them.
constexpr std::string_view kRuleActionList =
    "set_header, remove_header, fail, map_local, map_remote, throttle, replace_body or breakpoint";
constexpr std::string_view kFailKeys[] = {"rate", "with"};
constexpr std::string_view kThrottleKeys[] = {"latency", "down", "up"};
constexpr std::string_view kReplaceBodyKeys[] = {"regex", "with"};
constexpr std::string_view kBreakpointKeys[] = {"timeout"};
constexpr std::string_view kThrottleExample = "{latency: 400ms, down: 400kbit, up: 400kbit}";
constexpr std::string_view kRateExamples =
    "write bits per second as 400kbit, 1.44mbit or 1gbit, or bytes per second as 50kB, 2MB or 64KiB; "
    "`/s` may follow";
// A throttle's latency beyond this is a mistake (the exchange would outlive every timeout).
constexpr auto kMaxThrottleLatency = std::chrono::hours(1);
// A breakpoint's timeout: long enough to decide, short enough that a forgotten exchange ends.
constexpr auto kMinBreakpointTimeout = std::chrono::seconds(1);
constexpr auto kMaxBreakpointTimeout = std::chrono::hours(24);

// The presets' names, for the suggestion when a name is unknown (kThrottlePresets' order).
constexpr std::string_view kThrottlePresetNames[] = {"Slow 3G", "Fast 3G", "Slow 4G", "Fast 4G"};

// Rate units: bits per second (1000-based, as tc and Chrome count them; the prefix letter in either
// case) and bytes per second (the size units: decimal and binary). `factor` is in bits for the
// former, in bytes for the latter.
struct RateUnit {
    std::string_view name;
    std::uint64_t factor;
    bool bits;
};
constexpr RateUnit kRateUnits[] = {
    {"bit", 1, true},
    {"kbit", 1000, true},
    {"Kbit", 1000, true},
    {"mbit", 1000 * 1000, true},
    {"Mbit", 1000 * 1000, true},
    {"gbit", 1000 * 1000 * 1000, true},
    {"Gbit", 1000 * 1000 * 1000, true},
    {"B", 1, false},
    {"kB", 1000, false},
    {"KB", 1000, false},
    {"MB", 1000 * 1000, false},
    {"GB", 1000 * 1000 * 1000, false},
    {"KiB", 1024, false},
    {"MiB", 1024 * 1024, false},
    {"GiB", 1024 * 1024 * 1024, false},
};

enum class RateProblem { None, Syntax, NoUnit, Negative, Zero, BelowOneByte, TooLarge };

// "400kbit", "1.44mbit/s", "50kB" → bytes per second (bits / 8, rounded down). Unlike sizes, a
// rate may have a fraction (Chrome's own figures do: 1.44 Mbit/s), of at most 9 digits.
RateProblem parseRate(std::string_view text, std::uint64_t& bytesPerSecond) {
    if (text.starts_with('-')) return RateProblem::Negative;
    if (text.ends_with("/s")) text.remove_suffix(2);
    std::size_t i = 0;
    unsigned __int128 mantissa = 0, scale = 1;
    bool digits = false, fraction = false;
    int fractionDigits = 0;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '.' && !fraction && digits) {
            fraction = true;
            continue;
        }
        if (c < '0' || c > '9') break;
        digits = true;
        if (fraction && ++fractionDigits > 9) return RateProblem::Syntax;
        mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
        if (fraction) scale *= 10;
        if (mantissa > std::numeric_limits<std::uint64_t>::max()) return RateProblem::TooLarge;
    }
    if (!digits || text[i - 1] == '.') return RateProblem::Syntax; // "kbit", "1.kbit"
    const std::string_view unit = text.substr(i);
    if (unit.empty()) return mantissa == 0 ? RateProblem::Zero : RateProblem::NoUnit;
    const RateUnit* u = nullptr;
    for (const RateUnit& candidate : kRateUnits)
        if (candidate.name == unit) u = &candidate;
    if (!u) return RateProblem::Syntax;
    if (mantissa == 0) return RateProblem::Zero;
    // Exact in 128 bits: the mantissa is below 2^64 and the factor below 2^31.
    const unsigned __int128 bytes = mantissa * u->factor / scale / (u->bits ? 8 : 1);
    if (bytes == 0) return RateProblem::BelowOneByte;
    if (bytes > std::numeric_limits<std::uint64_t>::max() / 8) return RateProblem::TooLarge;
    bytesPerSecond = static_cast<std::uint64_t>(bytes);
    return RateProblem::None;
}

// The fields the connection writes itself, as Reader::headers refuses them for set_header
// (read_values.cpp): a rule cannot remove them either.
constexpr std::string_view kServerFields[] = {"content-length", "transfer-encoding", "connection", "date",
                                              "server"};

// Fields a rule cannot change: Host (the vhost is chosen by it before rules run; a proxy sends its
// own with change_origin) and the hop-by-hop ones (RFC 9110 §7.6.1), which never pass a proxy.
constexpr std::string_view kHopFields[] = {"host",   "te", "keep-alive", "upgrade", "proxy-connection",
                                           "trailer"};

std::string hopFieldError(std::string_view name, std::string_view lowered) {
    if (lowered == "host")
        return "'" + std::string(name) +
               "' cannot be changed by a rule: the vhost is chosen by it before rules run (map_remote sends "
               "the origin's own)";
    return "'" + std::string(name) +
           "' is a hop-by-hop field (RFC 9110 §7.6.1) and cannot be changed by a rule";
}

bool isNumber(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

void Reader::readRules(const Value& v, std::vector<Rule>& out) {
    auto items = list(v, false);
    if (!items) return;
    for (const Value& item : *items) {
        if (!item.node.IsMap()) {
            error(item, "expected a rule (a map with `actions:`), got " + describe(item.node));
            continue;
        }
        Rule rule;
        rule.where = locate(item.mark);
        std::optional<Value> actions;
        // readMap notes every value's position, so SourceMap::at("rules[N].match") locates the match
        // for validate, which parses it.
        readMap(item, kRuleKeys, [&](const Entry& e) {
            if (e.key == "name") {
                if (auto s = string(e.value)) rule.name = *s;
            } else if (e.key == "enabled") {
                if (auto b = boolean(e.value)) rule.enabled = *b;
            } else if (e.key == "stage") {
                auto s = string(e.value);
                if (!s) return true;
                if (*s == "request")
                    rule.stage = Rule::Stage::Request;
                else if (*s == "response")
                    rule.stage = Rule::Stage::Response;
                else
                    error(e.value, "stage must be request or response, got '" + *s + "'" +
                                       suggestion(*s, kRuleStages));
            } else if (e.key == "match") {
                if (auto s = string(e.value)) rule.match = *s;
            } else if (e.key == "actions") {
                actions = e.value;
            } else {
                return false;
            }
            return true;
        });
        if (!actions) {
            error(item, "a rule needs `actions:` (a list of " + std::string(kRuleActionList) + ")");
        } else if (auto written = list(*actions, false)) {
            if (written->empty()) error(*actions, "a rule needs at least one action");
            for (const Value& a : *written)
                if (auto action = readRuleAction(a)) rule.actions.push_back(std::move(*action));
        }
        // Kept even when something in it did not read: a refused file read for the GUI's form
        // still shows the rule as written.
        out.push_back(std::move(rule));
    }
}

std::optional<RuleAction> Reader::readRuleAction(const Value& v) {
    if (!v.node.IsMap() || v.node.size() == 0) {
        error(v, "expected an action: a map with one key, " + std::string(kRuleActionList) +
                     " (e.g. `- remove_header: Cache-Control`), got " +
                     (v.node.IsMap() ? std::string("an empty map") : describe(v.node)));
        return std::nullopt;
    }
    RuleAction a;
    a.where = locate(v.mark);
    std::optional<std::string> kind; // the first action key seen
    bool ok = true;

    // `throttle:` a preset's name, or a map of latency, down and up (at least one).
    auto readThrottle = [&](const Value& t) {
        a.kind = RuleAction::Kind::Throttle;
        if (t.node.IsScalar()) {
            const std::string name = t.node.Scalar();
            for (const ThrottlePreset& p : kThrottlePresets)
                if (p.name == name) {
                    a.throttlePreset = name;
                    a.throttleLatency = p.latency;
                    a.throttleDown = p.down;
                    a.throttleUp = p.up;
                    return true;
                }
            error(t, "unknown throttle preset '" + name + "'" + suggestion(name, kThrottlePresetNames) +
                         "; presets: Slow 3G, Fast 3G, Slow 4G, Fast 4G (as Chrome DevTools names them), or "
                         "write the link as " +
                         std::string(kThrottleExample));
            return false;
        }
        if (!t.node.IsMap() || t.node.size() == 0) {
            error(t, "throttle needs a preset name (Slow 3G, Fast 3G, Slow 4G or Fast 4G) or at least one of "
                     "latency, down and up (e.g. " +
                         std::string(kThrottleExample) + "), got " +
                         (t.node.IsMap() ? std::string("an empty map") : describe(t.node)));
            return false;
        }
        bool fine = true;
        auto rate = [&](const Entry& e, std::uint64_t& field) {
            auto s = string(e.value);
            if (!s) return false;
            std::uint64_t bytes = 0;
            switch (parseRate(*s, bytes)) {
            case RateProblem::None:
                field = bytes;
                return true;
            case RateProblem::NoUnit:
                error(e.value, "rate '" + *s + "' needs a unit: bits per second (e.g. " + *s +
                                   "kbit) or bytes per second (e.g. " + *s + "kB)");
                break;
            case RateProblem::Negative:
            case RateProblem::Zero:
                error(e.value,
                      e.key + " must be greater than 0 (leave `" + e.key + ":` out for no limit), got " + *s);
                break;
            case RateProblem::BelowOneByte:
                error(e.value, e.key + " must be at least 1 byte per second (8bit), got " + *s);
                break;
            case RateProblem::TooLarge:
                error(e.value, "rate '" + *s + "' is too large");
                break;
            case RateProblem::Syntax:
                error(e.value, "invalid rate '" + *s + "' (" + std::string(kRateExamples) + ")");
                break;
            }
            return false;
        };
        readMap(t, kThrottleKeys, [&](const Entry& e) {
            if (e.key == "latency") {
                auto d = duration(e.value, true);
                if (d && *d > kMaxThrottleLatency) {
                    error(e.value, "latency must be at most 1h, got " + e.value.node.Scalar());
                    d.reset();
                }
                if (d) a.throttleLatency = *d;
                fine = d.has_value() && fine;
            } else if (e.key == "down") {
                fine = rate(e, a.throttleDown) && fine;
            } else if (e.key == "up") {
                fine = rate(e, a.throttleUp) && fine;
            } else {
                return false;
            }
            return true;
        });
        return fine;
    };
    // `replace_body: {regex: RE, with: TEXT}`: both required; validate compiles the regex.
    auto readReplaceBody = [&](const Value& r) {
        a.kind = RuleAction::Kind::ReplaceBody;
        if (!r.node.IsMap() || r.node.size() == 0) {
            error(r, "replace_body needs {regex: RE, with: TEXT} (e.g. {regex: 'http://api\\.test', with: "
                     "'https://api.test'}), got " +
                         (r.node.IsMap() ? std::string("an empty map") : describe(r.node)));
            return false;
        }
        bool fine = true, sawRegex = false, sawWith = false;
        readMap(r, kReplaceBodyKeys, [&](const Entry& e) {
            if (e.key == "regex") {
                sawRegex = true;
                auto s = string(e.value);
                if (s && s->empty()) {
                    error(e.value, "regex cannot be empty");
                    s.reset();
                }
                if (s) a.regex = *s;
                fine = s.has_value() && fine;
            } else if (e.key == "with") {
                sawWith = true;
                if (e.value.node.IsNull()) {
                    error(e.value, "missing value (write \"\" to delete what the regex matches)");
                    fine = false;
                } else if (auto s = string(e.value)) {
                    a.replaceWith = *s;
                } else {
                    fine = false;
                }
            } else {
                return false;
            }
            return true;
        });
        if (!sawRegex) error(r, "replace_body needs `regex:` (the PCRE2 pattern to find)");
        if (!sawWith)
            error(r, "replace_body needs `with:` (the replacement: text, $1, ${name}; \"\" deletes what "
                     "matches)");
        return fine && sawRegex && sawWith;
    };
    // `breakpoint: {timeout: 5m}`; `{}`, nothing or `true` for the default timeout (RuleAction's).
    auto readBreakpoint = [&](const Value& b) {
        a.kind = RuleAction::Kind::Breakpoint;
        const char* shape = "breakpoint takes {timeout: 5m} (1s to 24h), or {} or true for the default 5m";
        if (b.node.IsScalar()) {
            bool on = false;
            if (!YAML::convert<bool>::decode(b.node, on)) {
                error(b, std::string(shape) + ", got " + describe(b.node));
                return false;
            }
            if (!on)
                error(b,
                      "breakpoint: false is not a setting: remove the action to turn the breakpoint off (or "
                      "set the rule's `enabled: false`)");
            return on;
        }
        if (!b.node.IsNull() && !b.node.IsMap()) {
            error(b, std::string(shape) + ", got " + describe(b.node));
            return false;
        }
        bool fine = true;
        readMap(b, kBreakpointKeys, [&](const Entry& e) {
            if (e.key != "timeout") return false;
            auto d = duration(e.value, true);
            if (d && (*d < kMinBreakpointTimeout || *d > kMaxBreakpointTimeout)) {
                error(e.value, "timeout must be between 1s and 24h, got " + e.value.node.Scalar());
                d.reset();
            }
            if (d) a.breakpointTimeout = *d;
            fine = d.has_value() && fine;
            return true;
        });
        return fine;
    };
    readMap(v, kRuleActionKeys, [&](const Entry& e) {
        if (std::find(std::begin(kRuleActionKeys), std::end(kRuleActionKeys), e.key) ==
            std::end(kRuleActionKeys))
            return false;
        if (kind) {
            errorAtKey(e, "an action takes exactly one key; this one already has '" + *kind +
                              "' (write each action as its own list item)");
            ok = false;
            return true;
        }
        kind = e.key;
        if (e.key == "set_header") {
            a.kind = RuleAction::Kind::SetHeader;
            ok = readSetHeader(e.value, a) && ok;
        } else if (e.key == "remove_header") {
            a.kind = RuleAction::Kind::RemoveHeader;
            ok = readRemoveHeader(e.value, a) && ok;
        } else if (e.key == "map_local") {
            a.kind = RuleAction::Kind::MapLocal;
            auto p = absolute(e.value); // a file or a folder; validate checks it is there
            if (p) a.mapLocal = *p;
            ok = p.has_value() && ok;
        } else if (e.key == "map_remote") {
            a.kind = RuleAction::Kind::MapRemote;
            const std::size_t before = errors_.size();
            upstreamUrl(e.value, a.mapRemote);
            a.mapRemote.changeOrigin = true;
            ok = errors_.size() == before && !a.mapRemote.upstreams.empty() && ok;
        } else if (e.key == "throttle") {
            ok = readThrottle(e.value) && ok;
        } else if (e.key == "replace_body") {
            ok = readReplaceBody(e.value) && ok;
        } else if (e.key == "breakpoint") {
            ok = readBreakpoint(e.value) && ok;
        } else {
            a.kind = RuleAction::Kind::Fail;
            ok = readFail(e.value, a) && ok;
        }
        return true;
    });
    if (!kind || !ok) return std::nullopt; // an unknown kind was reported by readMap
    return a;
}

bool Reader::readSetHeader(const Value& v, RuleAction& a) {
    if (v.node.IsNull() || (v.node.IsMap() && v.node.size() == 0)) {
        error(v, "set_header needs at least one header (e.g. {X-Debug: \"1\"})");
        return false;
    }
    // One value per name: the rule replaces every field of that name by one. Reader::headers takes
    // a list (a field given several times) and an empty value as no field; both are refused here.
    bool ok = true;
    if (v.node.IsMap()) {
        std::vector<std::pair<std::string, std::string>> seen; // lower-case name, as written
        for (auto it = v.node.begin(); it != v.node.end(); ++it) {
            const YAML::Node k = it->first, value = it->second;
            if (!k.IsScalar()) continue; // readMap reports it
            const std::string key = k.Scalar();
            YAML::Mark mark = value.Mark();
            if (value.IsNull() && (mark.line != k.Mark().line || mark.line < 0)) mark = k.Mark();
            const Value at{value, v.path + "." + key, mark};
            if (value.IsSequence()) {
                error(at, "a rule sets one value per header, got a list");
                ok = false;
            } else if (value.IsNull()) {
                error(at, "missing value (write \"\" for an empty one)");
                ok = false;
            }
            const std::string name = lower(key);
            auto same =
                std::find_if(seen.begin(), seen.end(), [&](const auto& s) { return s.first == name; });
            if (same != seen.end() && same->second != key) { // an exact repeat is readMap's duplicate key
                error(k.Mark(), at.path,
                      "'" + key + "' is already set as '" + same->second +
                          "' (header names are case-insensitive)");
                ok = false;
            }
            seen.emplace_back(name, key);
            if (std::find(std::begin(kHopFields), std::end(kHopFields), name) != std::end(kHopFields)) {
                error(k.Mark(), at.path, hopFieldError(key, name));
                ok = false;
            }
        }
    }
    auto set = headers(v, nullptr);
    if (!set || !ok) return false;
    a.set = std::move(*set);
    return true;
}

bool Reader::readRemoveHeader(const Value& v, RuleAction& a) {
    auto items = list(v, true);
    if (!items) return false;
    if (items->empty()) {
        error(v, "remove_header needs a header name or a list of them");
        return false;
    }
    bool ok = true;
    for (const Value& item : *items) {
        auto name = string(item);
        if (!name) {
            ok = false;
        } else if (!isToken(*name)) {
            error(item, "'" + *name + "' is not a valid header field name");
            ok = false;
        } else if (std::find(std::begin(kServerFields), std::end(kServerFields), lower(*name)) !=
                   std::end(kServerFields)) {
            error(item, "'" + *name + "' is set by the server and cannot be removed by a rule" +
                            (lower(*name) == "server" ? " (use server_header: false to leave it out)" : ""));
            ok = false;
        } else if (std::find(std::begin(kHopFields), std::end(kHopFields), lower(*name)) !=
                   std::end(kHopFields)) {
            error(item, hopFieldError(*name, lower(*name)));
            ok = false;
        } else {
            a.remove.push_back(*name);
        }
    }
    return ok;
}

bool Reader::readFail(const Value& v, RuleAction& a) {
    // `with:` as a value: reset, close, timeout, or a status.
    auto with = [&](const Value& w, std::string_view expected) {
        if (w.node.IsScalar()) {
            const std::string& word = w.node.Scalar();
            if (word == "reset" || word == "close" || word == "timeout") {
                a.failure = word == "reset"   ? RuleAction::Failure::Reset
                            : word == "close" ? RuleAction::Failure::Close
                                              : RuleAction::Failure::Timeout;
                return true;
            }
        }
        if (w.node.IsScalar() && isNumber(w.node.Scalar())) {
            auto s = status(w, 200, 599); // a final status: a 1xx answers nothing
            if (!s) return false;
            a.failure = RuleAction::Failure::Status;
            a.failStatus = *s;
            return true;
        }
        error(w, "expected " + std::string(expected) + ", got " + describe(w.node));
        return false;
    };
    if (!v.node.IsMap()) // `fail: 503`, `fail: reset`, `fail: close`, `fail: timeout`
        return with(
            v, "reset, close, timeout, a status (e.g. 503) or {rate: 0.2, with: reset|close|timeout|503}");
    bool ok = true, sawWith = false;
    readMap(v, kFailKeys, [&](const Entry& e) {
        if (e.key == "rate") {
            auto r = number(e.value, 0, 1);
            if (!r) {
                ok = false;
            } else if (*r <= 0) {
                error(e.value, "rate must be greater than 0 (the share of matching exchanges that fail, "
                               "0 < rate <= 1), got " +
                                   e.value.node.Scalar());
                ok = false;
            } else {
                a.rate = *r;
            }
        } else if (e.key == "with") {
            sawWith = true;
            ok = with(e.value, "reset, close, timeout or a status (e.g. 503)") && ok;
        } else {
            return false;
        }
        return true;
    });
    if (!sawWith) {
        error(v, "fail needs `with:` (reset, close, timeout, or a status such as 503)");
        ok = false;
    }
    return ok;
}

} // namespace portico::config::detail
