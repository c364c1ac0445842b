// The rule engine's request stage (rules.h).
#include <portico/rules/rules.h>

#include <portico/http/ascii.h>

#include <algorithm>
#include <random>

namespace portico::rules {

namespace {
constexpr std::string_view kRequestKeys[] = {"method", "path",     "url",    "host",  "header",
                                             "client", "protocol", "status", "vhost", "route",
                                             "error",  "source",   "process"};
// Known to the Traffic filter but not (yet) to rules: refused with a reason.
constexpr std::string_view kRecordOnlyKeys[] = {"vhost", "route", "error", "source", "process"};

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
    m.terms_ = std::move(*terms);
    return m;
}

bool Match::matches(const RequestView& r) const {
    thread_local std::string url;
    if (needsUrl_) urlOf(r.req, url);
    for (const Term& t : terms_) {
        bool m = false;
        if (t.key.empty() || t.key == "url") {
            m = contains(url, t.value);
        } else if (t.key == "method") {
            std::string_view list = t.value;
            while (!list.empty() && !m) {
                const auto comma = list.find(',');
                m = http::iequals(list.substr(0, comma), r.req.methodToken);
                list.remove_prefix(comma == std::string_view::npos ? list.size() : comma + 1);
            }
        } else if (t.key == "path") {
            m = r.req.rawPath.starts_with(t.value);
        } else if (t.key == "host") {
            m = contains(r.req.host, t.value);
        } else if (t.key == "client") {
            m = r.req.clientAddress.starts_with(t.value);
        } else if (t.key == "protocol") {
            m = (t.value == "h2") == (r.httpVersion == 2);
        } else if (t.key == "header") {
            const auto eq = t.value.find('=');
            const std::string_view name = std::string_view(t.value).substr(0, eq);
            const std::string_view value =
                eq == std::string::npos ? std::string_view() : std::string_view(t.value).substr(eq + 1);
            for (const auto& h : r.req.headers)
                if (http::iequals(h.name, name) && (eq == std::string::npos || contains(h.value, value))) {
                    m = true;
                    break;
                }
        } // `status`: no request has one (parse refuses it at the request stage)
        if (m == t.negate) return false;
    }
    return true;
}

std::string_view Match::requiredPathPrefix() const {
    for (const Term& t : terms_)
        if (t.key == "path" && !t.negate) return t.value;
    return {};
}

RuleSet::RuleSet(const config::Config& config) {
    for (const auto& rule : config.rules) {
        if (!rule.enabled || rule.stage != config::Rule::Stage::Request) continue;
        std::string error;
        if (auto m = Match::parse(rule.match, rule.stage, error)) request_.push_back({&rule, std::move(*m)});
    }
    // The index: a rule whose match needs a path prefix long enough to have a key is filed under
    // it; the others are tried for every request.
    for (std::uint32_t i = 0; i < request_.size(); ++i) {
        const std::string_view prefix = request_[i].match.requiredPathPrefix();
        if (prefix.size() < kKeyBytes + 1) {
            always_.push_back(i);
            continue;
        }
        byKey_[keyOf(prefix)].push_back(i);
        keys_.set(keyOf(prefix));
    }
}

// One candidate rule on the request: false when it failed the exchange (`verdict` says how).
bool RuleSet::applyOne(const Compiled& c, const RequestView& view, http::Request& req,
                       std::vector<http::Header>& scratch, RequestVerdict& verdict) const {
    if (!c.match.matches(view)) return true;
    thread_local std::vector<http::Header> next;
    bool copied = false;
    auto erase = [&](std::string_view name) {
        std::erase_if(next, [&](const http::Header& h) { return http::iequals(h.name, name); });
    };
    for (const auto& a : c.rule->actions) {
        if (a.kind == config::RuleAction::Kind::Fail) {
            thread_local std::minstd_rand rng{std::random_device{}()};
            if (a.rate >= 1.0 || std::uniform_real_distribution<double>(0.0, 1.0)(rng) < a.rate) {
                verdict.failedBy = c.rule;
                verdict.fail = &a;
                return false;
            }
            continue;
        }
        if (!copied) { // the first change of this rule: work on a copy of the fields
            next.assign(req.headers.begin(), req.headers.end());
            copied = true;
        }
        if (a.kind == config::RuleAction::Kind::RemoveHeader) {
            for (const auto& name : a.remove)
                erase(name);
        } else {
            for (const auto& [name, value] : a.set) {
                erase(name);
                next.push_back({name, value});
            }
        }
    }
    if (copied) {
        scratch.assign(next.begin(), next.end());
        req.headers = scratch;
        ++verdict.changed;
    }
    return true;
}

RequestVerdict RuleSet::applyRequest(http::Request& req, int httpVersion,
                                     std::vector<http::Header>& scratch) const {
    RequestVerdict verdict;
    const RequestView view{req, httpVersion};
    // The candidates, in list order: the rules tried for every request (always_) merged with those
    // filed under the path's key (both lists ascending).
    const std::vector<std::uint32_t>* filed = nullptr;
    if (req.rawPath.size() >= kKeyBytes + 1) {
        const std::uint16_t key = keyOf(req.rawPath);
        if (keys_.test(key)) filed = &byKey_.find(key)->second;
    }
    std::size_t a = 0, f = 0;
    const std::size_t fn = filed ? filed->size() : 0;
    while (a < always_.size() || f < fn) {
        const bool fromAlways = f == fn || (a < always_.size() && always_[a] < (*filed)[f]);
        const std::uint32_t index = fromAlways ? always_[a++] : (*filed)[f++];
        if (!applyOne(request_[index], view, req, scratch, verdict)) return verdict;
    }
    return verdict;
}

std::string checkMatch(const config::Rule& rule) {
    std::string error;
    if (!Match::parse(rule.match, rule.stage, error)) return error;
    return {};
}

} // namespace portico::rules
