// Reads the top-level `rules:` list: each rule's name, enabled, stage and match (kept as text:
// validate parses it with the Traffic filter language) and its actions, one-key maps of
// set_header, remove_header, fail, map_local or map_remote.
#include "reader_impl.h"

#include <portico/http/message.h>

#include <algorithm>

namespace portico::config::detail {

namespace {

constexpr std::string_view kRuleKeys[] = {"name", "enabled", "stage", "match", "actions"};
constexpr std::string_view kRuleStages[] = {"request", "response"};
constexpr std::string_view kRuleActionKeys[] = {"set_header", "remove_header", "fail", "map_local",
                                                "map_remote"};
// Kinds of the design that this version refuses by name (readMap's notYet).
constexpr std::string_view kRuleActionNotYet[] = {"replace_body", "throttle", "breakpoint"};
constexpr std::string_view kRuleActionHint =
    "; supported actions: set_header, remove_header, fail, map_local, map_remote";
constexpr std::string_view kFailKeys[] = {"rate", "with"};
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
            error(item, "a rule needs `actions:` (a list of set_header, remove_header, fail, map_local or "
                        "map_remote)");
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
        error(v, "expected an action: a map with one key, set_header, remove_header, fail, map_local or "
                 "map_remote (e.g. "
                 "`- remove_header: Cache-Control`), got " +
                     (v.node.IsMap() ? std::string("an empty map") : describe(v.node)));
        return std::nullopt;
    }
    RuleAction a;
    a.where = locate(v.mark);
    std::optional<std::string> kind; // the first action key seen
    bool ok = true;
    readMap(
        v, kRuleActionKeys,
        [&](const Entry& e) {
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
            } else {
                a.kind = RuleAction::Kind::Fail;
                ok = readFail(e.value, a) && ok;
            }
            return true;
        },
        kRuleActionNotYet, kRuleActionHint);
    if (!kind || !ok) return std::nullopt; // an unknown or not-yet kind was reported by readMap
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
    // `with:` as a value: reset, or a status.
    auto with = [&](const Value& w, std::string_view expected) {
        if (w.node.IsScalar() && w.node.Scalar() == "reset") {
            a.failure = RuleAction::Failure::Reset;
            return true;
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
    if (!v.node.IsMap()) // `fail: 503`, `fail: reset`
        return with(v, "reset, a status (e.g. 503) or {rate: 0.2, with: reset|503}");
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
            ok = with(e.value, "reset or a status (e.g. 503)") && ok;
        } else {
            return false;
        }
        return true;
    });
    if (!sawWith) {
        error(v, "fail needs `with:` (reset, or a status such as 503)");
        ok = false;
    }
    return ok;
}

} // namespace portico::config::detail
