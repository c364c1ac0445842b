// The rule engine's request stage (rules.h).
#include <portico/rules/rules.h>

#include "rules/body_rewrite.h"

#include <portico/http/ascii.h>

#include <algorithm>
#include <filesystem>
#include <random>

namespace portico::rules {

namespace {
constexpr std::string_view kRequestKeys[] = {"method", "path",     "url",     "host",  "header",
                                             "client", "protocol", "status",  "vhost", "route",
                                             "error",  "source",   "process", "rule"};
// Known to the Traffic filter but not (yet) to rules: refused with a reason.
constexpr std::string_view kRecordOnlyKeys[] = {"vhost", "route", "error", "source", "process", "rule"};

bool contains(std::string_view hay, std::string_view needle) {
    return http::ifind(hay, needle) != std::string_view::npos;
}

// scheme://host/target, or the target itself when absolute-form.
void urlOf(const http::Request& req, std::string& out) {
    out.clear();
    if (req.target.find("://") != std::string_view::npos) {
        out.assign(req.target);
        return;
    }
    out.append(req.scheme);
    out.append("://");
    out.append(req.host);
    out.append(req.target);
}

} // namespace

std::optional<Match> Match::parse(std::string_view expr, config::Rule::Stage stage, std::string& error) {
    auto terms = parseTerms(expr, kRequestKeys, error);
    if (!terms) return std::nullopt;
    Match m;
    for (Term& t : *terms) {
        if (std::find(std::begin(kRecordOnlyKeys), std::end(kRecordOnlyKeys), t.key) !=
            std::end(kRecordOnlyKeys)) {
            error = termError(t, "'" + t.key +
                                     ":' is known to the Traffic filter only, not to rules (rules may use "
                                     "method, path, url, host, header, client, protocol and status)");
            return std::nullopt;
        }
        if (t.key == "status" && stage == config::Rule::Stage::Request) {
            error = termError(t, "'status:' needs a response: use it in a rule with `stage: response`");
            return std::nullopt;
        }
        if (t.key == "protocol") {
            t.value = http::lower(t.value);
            if (t.value != "h1" && t.value != "h2") {
                error = termError(t, "protocol: expected h1 or h2, got '" + t.value + "'");
                return std::nullopt;
            }
        }
        if (t.key.empty() || t.key == "url") m.needsUrl_ = true;
    }
    if (stage == config::Rule::Stage::Response && terms->size() > kMaxResponseTerms) {
        error = termError((*terms)[kMaxResponseTerms], "a response-stage match has at most " +
                                                           std::to_string(kMaxResponseTerms) + " terms");
        return std::nullopt;
    }
    m.terms_ = std::move(*terms);
    return m;
}

namespace {
// `header:NAME[=VALUE]`: the name and, after '=', the value substring (`any` when there is none).
struct HeaderTerm {
    std::string_view name, value;
    bool any;
};
HeaderTerm headerTerm(const Term& t) {
    const auto eq = t.value.find('=');
    const std::string_view v = t.value;
    return {v.substr(0, eq), eq == std::string::npos ? std::string_view() : v.substr(eq + 1),
            eq == std::string::npos};
}
} // namespace

bool Match::termMatches(const Term& t, const RequestView& r, const std::string& url) const {
    if (t.key.empty() || t.key == "url") return contains(url, t.value);
    if (t.key == "method") {
        std::string_view list = t.value;
        while (!list.empty()) {
            const auto comma = list.find(',');
            if (http::iequals(list.substr(0, comma), r.req.methodToken)) return true;
            list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
        }
        return false;
    }
    if (t.key == "path") return r.req.rawPath.starts_with(t.value);
    if (t.key == "host") return contains(r.req.host, t.value);
    if (t.key == "client") return r.req.clientAddress.starts_with(t.value);
    if (t.key == "protocol") return (t.value == "h2") == (r.httpVersion == 2);
    if (t.key == "header") {
        const HeaderTerm h = headerTerm(t);
        for (const auto& f : r.req.headers)
            if (http::iequals(f.name, h.name) && (h.any || contains(f.value, h.value))) return true;
        return false;
    }
    return false; // `status`: no request has one (the caller handles it)
}

bool Match::matches(const RequestView& r) const {
    thread_local std::string url;
    if (needsUrl_) urlOf(r.req, url);
    for (const Term& t : terms_)
        if (termMatches(t, r, url) == t.negate) return false;
    return true;
}

bool Match::matchesRequestSide(const RequestView& r, std::uint32_t& left) const {
    thread_local std::string url;
    if (needsUrl_) urlOf(r.req, url);
    left = 0;
    for (std::size_t i = 0; i < terms_.size(); ++i) {
        const Term& t = terms_[i];
        if (t.key == "status") {
            left |= 1u << i;
            continue;
        }
        const bool m = termMatches(t, r, url);
        if (t.key == "header" && !m) { // the response's fields may still have it
            left |= 1u << i;
            continue;
        }
        if (m == t.negate) return false;
    }
    return true;
}

bool Match::matchesResponseSide(std::uint32_t left, int status, std::string_view fields) const {
    for (std::size_t i = 0; left != 0 && i < terms_.size(); ++i) {
        if (!(left & (1u << i))) continue;
        left &= ~(1u << i);
        const Term& t = terms_[i];
        bool m = false;
        if (t.key == "status") {
            m = statusMatches(t, status);
        } else { // header: the request did not have it
            const HeaderTerm h = headerTerm(t);
            http::forEachFieldLine(fields, [&](std::string_view name, std::string_view value) {
                m = m || (http::iequals(name, h.name) && (h.any || contains(value, h.value)));
            });
        }
        if (m == t.negate) return false;
    }
    return true;
}

std::string_view Match::requiredPathPrefix() const {
    for (const Term& t : terms_)
        if (t.key == "path" && !t.negate) return t.value;
    return {};
}

std::string MatchCounts::keyOf(const config::Rule& rule, std::size_t index) {
    return rule.name.empty() ? "\x01#" + std::to_string(index) : rule.name;
}

MatchCounts::Counter MatchCounts::counterFor(const config::Rule& rule, std::size_t index) {
    std::lock_guard lock(mutex_);
    Counter& c = counters_[keyOf(rule, index)];
    if (!c) c = std::make_shared<std::atomic<std::uint64_t>>(0);
    return c;
}

std::vector<std::uint64_t> MatchCounts::countsFor(const config::Config& config) {
    std::vector<std::uint64_t> out;
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i < config.rules.size(); ++i) {
        auto it = counters_.find(keyOf(config.rules[i], i));
        out.push_back(it == counters_.end() ? 0 : it->second->load(std::memory_order_relaxed));
    }
    return out;
}

void RuleSet::StageRules::index() {
    // A rule whose match needs a path prefix long enough to have a key is filed under it; the
    // others are tried for every request.
    for (std::uint32_t i = 0; i < rules.size(); ++i) {
        const std::string_view prefix = rules[i].match.requiredPathPrefix();
        if (prefix.size() < kKeyBytes + 1) {
            always.push_back(i);
            continue;
        }
        byKey[keyOf(prefix)].push_back(i);
        keys.set(keyOf(prefix));
    }
}

template <class Fn> void RuleSet::StageRules::candidates(std::string_view path, Fn&& fn) const {
    // The rules tried for every request (always) merged with those filed under the path's key (both
    // lists ascending).
    const std::vector<std::uint32_t>* filed = nullptr;
    if (path.size() >= kKeyBytes + 1) {
        const std::uint16_t key = keyOf(path);
        if (keys.test(key)) filed = &byKey.find(key)->second;
    }
    std::size_t a = 0, f = 0;
    const std::size_t fn_ = filed ? filed->size() : 0;
    while (a < always.size() || f < fn_) {
        const bool fromAlways = f == fn_ || (a < always.size() && always[a] < (*filed)[f]);
        if (!fn(fromAlways ? always[a++] : (*filed)[f++])) return;
    }
}

std::string_view MapLocal::pathFor(std::string_view path) const {
    if (!file.empty()) return file;
    if (prefix.empty() || !path.starts_with(prefix)) return path;
    // "/assets/" and "/assets" take "/assets/app.js" to "/app.js"; "/assets" leaves "/assetsX"
    // whole (as strip_prefix does).
    if (prefix.ends_with('/')) return path.substr(prefix.size() - 1);
    const std::string_view rest = path.substr(prefix.size());
    if (!rest.empty() && rest.front() != '/') return path;
    return rest;
}

std::string BreakpointHit::ruleName() const {
    if (!rule) return {};
    return rule->name.empty() ? "rules[" + std::to_string(configIndex) + "]" : rule->name;
}

RuleSet::RuleSet(const config::Config& config, MatchCounts* counts, BreakpointQueue* breakpoints)
    : maxRewriteBody_(config.limits.maxRewriteBody), breakpoints_(breakpoints) {
    for (std::size_t i = 0; i < config.rules.size(); ++i) {
        const auto& rule = config.rules[i];
        if (!rule.enabled) continue;
        std::string error;
        auto m = Match::parse(rule.match, rule.stage, error);
        if (!m) continue;
        for (const auto& a : rule.actions) {
            if (a.kind != config::RuleAction::Kind::MapLocal) continue;
            MapLocal& ml = mapLocal_[&a];
            std::error_code ec;
            const std::filesystem::path target(a.mapLocal);
            if (std::filesystem::is_directory(target, ec)) {
                ml.root.root = a.mapLocal;
                ml.prefix.assign(m->requiredPathPrefix());
            } else { // a file (or gone since validate: served as not found)
                ml.root.root = target.parent_path().string();
                ml.file = "/" + target.filename().string();
            }
        }
        Compiled c{&rule, std::move(*m), static_cast<std::uint32_t>(i)};
        c.editsBegin = c.editsEnd = static_cast<std::uint32_t>(bodyEdits_.size());
        for (const auto& a : rule.actions) {
            if (a.kind != config::RuleAction::Kind::ReplaceBody) continue;
            std::string error;
            std::shared_ptr<const BodyRegex> re = BodyRegex::compile(a.regex, a.replaceWith, error);
            if (!re) continue; // validate refuses it; a rule built in code just lacks it
            bodyEdits_.push_back({re.get(), &rule, static_cast<std::uint32_t>(i)});
            bodyRegexes_.push_back(std::move(re));
            c.editsEnd = static_cast<std::uint32_t>(bodyEdits_.size());
        }
        for (const auto& a : rule.actions)
            if (a.kind == config::RuleAction::Kind::Breakpoint && !c.breakpoint) c.breakpoint = &a;
        if ((c.editsBegin != c.editsEnd || c.breakpoint) && rule.stage == config::Rule::Stage::Request)
            requestRewrites_ = true;
        if (counts) {
            counters_.push_back(counts->counterFor(rule, i));
            c.hits = counters_.back().get();
        }
        (rule.stage == config::Rule::Stage::Request ? request_ : response_).rules.push_back(std::move(c));
    }
    request_.index();
    response_.index();
}

namespace {
void appendName(std::string& names, const config::Rule& rule, std::size_t index) {
    if (!names.empty()) names.push_back('\n');
    if (rule.name.empty())
        names.append("rules[" + std::to_string(index) + "]");
    else
        names.append(rule.name);
}

// One rule's set_header / remove_header actions on a list of fields.
template <class Field> bool editFields(const config::Rule& rule, std::vector<Field>& fields) {
    bool changed = false;
    auto erase = [&](std::string_view name) {
        changed =
            std::erase_if(fields, [&](const Field& f) { return http::iequals(f.name, name); }) > 0 || changed;
    };
    for (const auto& a : rule.actions) {
        if (a.kind == config::RuleAction::Kind::RemoveHeader) {
            for (const auto& name : a.remove)
                erase(name);
        } else if (a.kind == config::RuleAction::Kind::SetHeader) {
            for (const auto& [name, value] : a.set) {
                erase(name);
                fields.push_back({name, value});
                changed = true;
            }
        }
    }
    return changed;
}

void appendFieldBlock(std::string& out, std::string_view name, std::string_view value) {
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}
} // namespace

// One candidate rule on the request: false when it ends the list (a fail or a map; `verdict` says
// which).
bool RuleSet::applyOne(const Compiled& c, const RequestView& view, http::Request& req, http::Response& res,
                       RequestVerdict& verdict) const {
    if (!c.match.matches(view)) return true;
    res.ruleStateUsed = true; // from here on the rule may write the exchange's rule state
    if (c.hits) c.hits->fetch_add(1, std::memory_order_relaxed);
    bool edits = false, touched = false;
    const config::RuleAction* map = nullptr;
    for (const auto& a : c.rule->actions) {
        switch (a.kind) {
        case config::RuleAction::Kind::Fail: {
            thread_local std::minstd_rand rng{std::random_device{}()};
            if (a.rate >= 1.0 || std::uniform_real_distribution<double>(0.0, 1.0)(rng) < a.rate) {
                verdict.failedBy = c.rule;
                verdict.fail = &a;
                appendName(res.ruleNames, *c.rule, c.configIndex);
                return false;
            }
            break;
        }
        case config::RuleAction::Kind::MapLocal:
        case config::RuleAction::Kind::MapRemote:
            if (!map) map = &a;
            break;
        case config::RuleAction::Kind::SetHeader:
        case config::RuleAction::Kind::RemoveHeader:
            edits = true;
            break;
        case config::RuleAction::Kind::Throttle:
            // A later throttle replaces an earlier one (the exchange has one link).
            res.throttle = {a.throttleLatency, a.throttleDown, a.throttleUp};
            touched = true;
            break;
        case config::RuleAction::Kind::ReplaceBody:
            break; // all of the rule's at once, below
        case config::RuleAction::Kind::Breakpoint:
            // Its record line ("NAME: breakpoint (...)") is written by whoever carries it out.
            if (!verdict.breakpoint) verdict.breakpoint = {c.rule, &a, c.configIndex};
            break;
        }
    }
    if (edits) {
        thread_local std::vector<http::Header> next;
        next.assign(req.headers.begin(), req.headers.end());
        editFields(*c.rule, next);
        if (res.originalRequestFields.empty())
            for (const auto& h : req.headers)
                appendFieldBlock(res.originalRequestFields, h.name, h.value);
        res.ruledRequestFields.assign(next.begin(), next.end());
        req.headers = res.ruledRequestFields;
        ++verdict.changed;
    }
    // replace_body: on a body that is here whole (an empty one may be streaming, see below).
    const bool rewrites = c.editsBegin != c.editsEnd;
    if (edits || map || touched || (rewrites && !req.body.empty()))
        appendName(res.ruleNames, *c.rule, c.configIndex);
    if (rewrites) rewriteRequestBody(c, req, res);
    if (!map) return true;
    verdict.mappedBy = c.rule;
    verdict.map = map;
    return false;
}

RequestVerdict RuleSet::applyRequest(http::Request& req, int httpVersion, http::Response& res) const {
    // The rule state is marked used only by a rule that matches (applyOne) or a response-stage rule
    // selected below: with rules none of which match, clearing it costs one test.
    RequestVerdict verdict;
    const RequestView view{req, httpVersion};
    if (!request_.rules.empty())
        request_.candidates(req.rawPath, [&](std::uint32_t i) {
            return applyOne(request_.rules[i], view, req, res, verdict);
        });
    // A map goes on: the mapped answer gets the response stage.
    if (verdict.fail || response_.rules.empty()) return verdict;
    response_.candidates(req.rawPath, [&](std::uint32_t i) {
        std::uint32_t left = 0;
        if (response_.rules[i].match.matchesRequestSide(view, left)) {
            res.ruleStateUsed = true;
            res.pendingRules.push_back(std::uint64_t{i} << 32 | left);
        }
        return true;
    });
    return verdict;
}

bool RuleSet::applyResponse(std::span<const std::uint64_t> pending, int status, std::string_view fields,
                            std::string& out, std::string& names, std::vector<BodyEdit>* bodyEdits,
                            BreakpointHit* breakpoint) const {
    struct Field {
        std::string_view name, value;
    };
    thread_local std::vector<Field> list;
    bool listed = false, changed = false;
    for (const std::uint64_t p : pending) {
        const std::uint32_t i = static_cast<std::uint32_t>(p >> 32);
        if (i >= response_.rules.size()) continue;
        const Compiled& c = response_.rules[i];
        // A later rule's `header:` terms see the fields as the earlier rules left them.
        if (!c.match.matchesResponseSide(static_cast<std::uint32_t>(p), status, changed ? out : fields))
            continue;
        if (c.hits) c.hits->fetch_add(1, std::memory_order_relaxed);
        if (!listed) {
            list.clear();
            http::forEachFieldLine(fields, [&](std::string_view n, std::string_view v) {
                list.push_back({n, v});
            });
            listed = true;
        }
        if (editFields(*c.rule, list)) {
            changed = true;
            std::string next; // `list` may view `out`: build apart, then swap
            for (const Field& f : list)
                appendFieldBlock(next, f.name, f.value);
            out.swap(next);
            list.clear();
            http::forEachFieldLine(out, [&](std::string_view n, std::string_view v) {
                list.push_back({n, v});
            });
        }
        appendName(names, *c.rule, c.configIndex);
        if (bodyEdits && c.editsBegin != c.editsEnd)
            bodyEdits->insert(bodyEdits->end(), bodyEdits_.begin() + c.editsBegin,
                              bodyEdits_.begin() + c.editsEnd);
        if (breakpoint && c.breakpoint && !*breakpoint) *breakpoint = {c.rule, c.breakpoint, c.configIndex};
    }
    return changed;
}

namespace {
void appendSkipped(std::string& names, const BodyEdit& e, std::string_view why) {
    appendName(names, *e.rule, e.configIndex);
    names.append(": replace_body skipped (");
    // One line per note: a reason never breaks the '\n'-separated list.
    for (const char ch : why)
        names.push_back(ch == '\n' || ch == '\r' ? ' ' : ch);
    names.push_back(')');
}
} // namespace

void RuleSet::noteSkipped(std::span<const BodyEdit> edits, std::string_view why, std::string& names) {
    const config::Rule* last = nullptr;
    for (const BodyEdit& e : edits) {
        if (e.rule == last) continue; // once per rule
        last = e.rule;
        appendSkipped(names, e, why);
    }
}

std::string RuleSet::bodySkipReason(std::string_view fields) {
    std::string why;
    http::forEachFieldLine(fields, [&](std::string_view name, std::string_view value) {
        if (!why.empty()) return;
        if (http::iequals(name, "content-encoding")) {
            while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
                value.remove_suffix(1);
            if (!value.empty() && !http::iequals(value, "identity"))
                why = "compressed body (Content-Encoding: " + std::string(value) + ")";
        } else if (http::iequals(name, "content-type") && http::istartsWith(value, "application/grpc")) {
            why = "gRPC message";
        }
    });
    return why;
}

bool RuleSet::rewriteBody(std::span<const BodyEdit> edits, std::string_view body, std::string& out,
                          std::string& names) const {
    if (edits.empty() || body.empty()) return false;
    if (body.size() > maxRewriteBody_) {
        noteSkipped(edits, "body over max_rewrite_body, " + std::to_string(maxRewriteBody_) + " bytes",
                    names);
        return false;
    }
    bool changed = false;
    std::string next, why;
    for (const BodyEdit& e : edits) {
        const std::string_view in = changed ? std::string_view(out) : body;
        switch (e.regex->substitute(in, maxRewriteBody_, next, why)) {
        case BodyRegex::Result::Unchanged:
            break;
        case BodyRegex::Result::Changed:
            out.swap(next);
            changed = true;
            break;
        case BodyRegex::Result::Failed:
            appendSkipped(names, e, why);
            break;
        }
    }
    return changed;
}

bool RuleSet::mayNeedRequestBody(std::string_view rawPath) const {
    if (!requestRewrites_) return false;
    bool found = false;
    request_.candidates(rawPath, [&](std::uint32_t i) {
        found = request_.rules[i].editsBegin != request_.rules[i].editsEnd || request_.rules[i].breakpoint;
        return !found;
    });
    return found;
}

// A request-stage rule's replace_body actions on the request's body, when it has one.
void RuleSet::rewriteRequestBody(const Compiled& c, http::Request& req, http::Response& res) const {
    const std::span<const BodyEdit> edits(bodyEdits_.data() + c.editsBegin, c.editsEnd - c.editsBegin);
    if (req.body.empty()) {
        // Either no body or one that streams to an upstream as it arrives (the session knows which
        // when it forwards: serve::ForwardTarget::bodyFollows).
        noteSkipped(edits, "streamed request body", res.streamedBodyNotes);
        return;
    }
    thread_local std::string fields;
    fields.clear();
    for (const auto& h : req.headers)
        appendFieldBlock(fields, h.name, h.value);
    if (std::string why = bodySkipReason(fields); !why.empty()) {
        noteSkipped(edits, why, res.ruleNames);
        return;
    }
    thread_local std::string out;
    if (rewriteBody(edits, req.body, out, res.ruleNames)) {
        // The body as received, for the record: the first rule that changes it keeps it.
        if (res.originalRequestBody.empty()) res.originalRequestBody.assign(req.body);
        res.ruledRequestBody.swap(out); // req.body may view the old one: swapped, not overwritten
        req.body = res.ruledRequestBody;
        if (out.capacity() > 64 * 1024) std::string().swap(out);
    }
}

std::string checkMatch(const config::Rule& rule) {
    std::string error;
    if (!Match::parse(rule.match, rule.stage, error)) return error;
    return {};
}

} // namespace portico::rules
