// validate(): the checks of a read config that need the router, TLS, the capture's gRPC schemas or
// the disk, and the cross-field checks (duplicates, default vhost, ports), each located through the
// SourceMap. One function per part of the config, as the reader has.
#include <portico/validate/validate.h>

#include <portico/capture/grpc.h>
#include <portico/config/network.h>
#include <portico/config/pattern.h>
#include <portico/http/message.h>
#include <portico/rules/rules.h>
#include <portico/tls/local_ca.h>

#include "routing/regex.h"
#include "rules/body_rewrite.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <tuple>

namespace portico::validate {

namespace {

namespace fs = std::filesystem;
using config::Config;
using config::ConfigError;
using config::MatchKind;
using config::Route;
using config::StaticAction;
using config::Vhost;

constexpr std::uint32_t kAllMethods = [] {
    std::uint32_t m = 0;
    for (unsigned i = 0; i < static_cast<unsigned>(http::Method::Other); ++i)
        m |= 1u << i;
    return m;
}();

/// The methods a route answers (0 in the model means every method). HEAD is not added for GET:
/// the router lets a route naming HEAD beat a GET route of the same path.
std::uint32_t effectiveMethods(std::uint32_t mask) { return mask == 0 ? kAllMethods : mask; }

/// Key under which two routes would match exactly the same requests.
std::string duplicateKey(const Route& r) {
    switch (r.kind) {
    case MatchKind::Pattern: {
        // Parameter names do not change what a pattern matches: "/u/:id" == "/u/:name".
        std::string out;
        std::size_t start = 0;
        while (start < r.path.size()) {
            std::size_t slash = r.path.find('/', start + 1);
            std::string_view seg(r.path.data() + start,
                                 (slash == std::string::npos ? r.path.size() : slash) - start);
            out += seg.size() > 1 && seg[1] == ':' ? std::string_view("/:") : seg;
            if (slash == std::string::npos) break;
            start = slash;
        }
        // The router ignores a trailing slash in a pattern: "/about/" is "/about".
        if (out.size() > 1 && out.back() == '/') out.pop_back();
        return "pattern " + out;
    }
    case MatchKind::Exact:
        return "exact " + r.path;
    case MatchKind::Prefix:
    case MatchKind::PrefixNoRegex:
        return "prefix " + r.path; // nginx also refuses "/x" next to "^~ /x"
    case MatchKind::Regex:
        return "regex " + r.path;
    case MatchKind::RegexCaseless:
        return "iregex " + r.path;
    }
    return {};
}

std::string normalise(const fs::path& p) {
    std::string s = p.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

std::string item(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

/// A listen host that only this machine reaches: "localhost", 127.0.0.0/8 or ::1.
bool isLoopbackHost(const std::string& host) {
    if (host == "localhost") return true;
    std::string ignored;
    auto n = config::parseNetwork(host, ignored);
    if (!n) return false;
    for (const config::Network& loopback : config::loopbackNetworks())
        if (config::contains(loopback, n->bytes.data(), n->v6)) return true;
    return false;
}

class Validator {
public:
    Validator(const Config& c, const config::SourceMap& map, Checks checks)
        : c_(c), map_(map), files_(checks == Checks::All) {}

    std::vector<ConfigError> run();

private:
    void error(const std::string& path, std::string message) {
        errors_.push_back(ConfigError{map_.at(path), path, std::move(message)});
    }
    bool existing(const std::string& path, const std::string& abs, bool directory);
    void tlsFiles(const config::TlsFiles& f, const std::string& path);
    void spaFallback(const std::string& path, const StaticAction& st);
    void listeners();
    void logAndCapture();
    void vhost(std::size_t i);
    bool match(std::size_t vhost, std::size_t route);
    void action(const Route& r, const std::string& path);
    void duplicateRoutes(std::size_t vhost, const std::vector<bool>& matchOk);
    void vhostsTogether();
    void rules();

    const Config& c_;
    const config::SourceMap& map_;
    bool files_;
    std::vector<ConfigError> errors_;
};

bool Validator::existing(const std::string& path, const std::string& abs, bool directory) {
    std::error_code ec;
    fs::file_status st = fs::status(abs, ec);
    if (!fs::exists(st)) {
        error(path, std::string(directory ? "directory" : "file") + " '" + abs + "' does not exist");
        return false;
    }
    if (directory && !fs::is_directory(st)) {
        error(path, "'" + abs + "' is not a directory");
        return false;
    }
    if (!directory && !fs::is_regular_file(st)) {
        error(path, "'" + abs + "' is not a regular file");
        return false;
    }
    return true;
}

void Validator::tlsFiles(const config::TlsFiles& f, const std::string& path) {
    // A file that is named but missing is the one error: the other may be missing for the same reason.
    bool certOk = !files_ || f.cert.empty() || existing(path + ".cert", f.cert, false);
    bool keyOk = !files_ || f.key.empty() || existing(path + ".key", f.key, false);
    if (!certOk || !keyOk) return;
    if (f.cert.empty() || f.key.empty()) {
        error(path, f.cert.empty() ? "needs `cert:` (the certificate chain, PEM)"
                                   : "needs `key:` (the private key, PEM)");
        return;
    }
    if (!files_) return;
    if (std::string problem = tls::checkCertKeyPair(f.cert, f.key); !problem.empty())
        error(path + ".cert", problem);
}

void Validator::spaFallback(const std::string& path, const StaticAction& st) {
    if (st.spaFallback.empty() || st.root.empty()) return;
    std::string_view relative = st.spaFallback;
    while (relative.starts_with("/"))
        relative.remove_prefix(1);
    std::string file = normalise(fs::path(st.root) / relative);
    std::error_code ec;
    if (!file.starts_with(st.root))
        error(path, "spa_fallback must stay inside the root");
    else if (files_ && !fs::is_regular_file(file, ec))
        error(path, "spa_fallback file '" + file + "' does not exist");
}

void Validator::listeners() {
    std::vector<const config::Listen*> kept;
    for (std::size_t i = 0; i < c_.listen.size(); ++i) {
        const config::Listen& l = c_.listen[i];
        const std::string path = i < map_.listen.size() ? map_.listen[i] : item("listen", i);
        if (l.tls && !l.tls->autoCa) tlsFiles(l.tls->files, path + ".tls");
        if (l.forwardProxy && l.tls)
            error(path + ".forward_proxy", "a forward proxy listener is cleartext (clients reach https:// "
                                           "origins through CONNECT): remove `tls:` or use another listener");
        // Loopback, or any address with the client networks that may use it: never an open proxy.
        if (l.forwardProxy && l.proxy.allow.empty() && !isLoopbackHost(l.host))
            error(path + ".forward_proxy",
                  "a forward proxy listener on " + l.host +
                      " needs `allow: [CIDR, ...]`, the client networks that may use it (e.g. "
                      "{allow: [192.168.1.0/24]}), so it is never an open proxy; without `allow:` it "
                      "binds loopback only (127.0.0.1, \"[::1]\" or localhost)");
        if (l.forwardProxy && files_ && !l.proxy.upstreamCaFile.empty())
            existing(path + ".forward_proxy.upstream_cacert", l.proxy.upstreamCaFile, false);
        // "localhost" is 127.0.0.1 and ::1: it overlaps either.
        auto covers = [](const std::string& a, const std::string& b) {
            return a == b || (a == "localhost" && (b == "127.0.0.1" || b == "::1"));
        };
        auto other = std::find_if(kept.begin(), kept.end(), [&](const config::Listen* o) {
            return (covers(o->host, l.host) || covers(l.host, o->host)) && o->port == l.port && l.port != 0;
        });
        if (other == kept.end()) {
            kept.push_back(&l);
            continue;
        }
        const bool v6 = l.host.find(':') != std::string::npos;
        error(path, "duplicate listener " + (v6 ? "[" + l.host + "]" : l.host) + ":" +
                        std::to_string(l.port) + " (already on line " + std::to_string((*other)->where.line) +
                        ")");
    }
}

void Validator::logAndCapture() {
    if (!files_) return;
    std::error_code ec;
    const std::string& log = c_.accessLog.path;
    if (!log.empty() && log != "-") {
        fs::path dir = fs::path(log).parent_path();
        if (!fs::is_directory(dir, ec))
            error("access_log.path", "directory '" + dir.string() + "' does not exist");
        else if (fs::is_directory(log, ec))
            error("access_log.path", "'" + log + "' is a directory");
    }
    if (!c_.capture.store.empty()) {
        fs::path dir = fs::path(c_.capture.store).parent_path();
        if (!fs::is_directory(dir, ec))
            error("capture.store", "directory '" + dir.string() + "' does not exist");
    }
}

void Validator::vhost(std::size_t i) {
    const Vhost& vh = c_.vhosts[i];
    const std::string path = item("vhosts", i);
    if (vh.root) {
        bool rootOk = !files_ || existing(path + ".root", vh.root->root, true);
        if (rootOk) spaFallback(path + ".spa_fallback", *vh.root);
    }
    if (vh.tls) tlsFiles(*vh.tls, path + ".tls");
    if (files_)
        for (const auto& [code, file] : vh.errorPages)
            existing(path + ".error_pages." + std::to_string(code), file, false);
    std::vector<bool> matchOk(vh.routes.size());
    for (std::size_t k = 0; k < vh.routes.size(); ++k) {
        matchOk[k] = match(i, k);
        action(vh.routes[k], map_.routePath(i, k));
    }
    duplicateRoutes(i, matchOk);
}

bool Validator::match(std::size_t vhost, std::size_t route) {
    const Route& r = c_.vhosts[vhost].routes[route];
    switch (r.kind) {
    case MatchKind::Pattern: {
        config::PatternShape shape;
        std::string problem = config::checkPattern(r.path, shape);
        if (problem.empty()) return true;
        error(map_.matchPath(vhost, route), problem);
        return false;
    }
    case MatchKind::Regex:
    case MatchKind::RegexCaseless: {
        // Compiled as the router will compile it (PCRE2, same flags), so the router cannot fail.
        routing::Regex::CompileError failure;
        if (routing::Regex::compile(r.path, r.kind == MatchKind::RegexCaseless, &failure)) return true;
        error(map_.matchPath(vhost, route), "invalid regular expression '" + r.path + "' at offset " +
                                                std::to_string(failure.offset) + ": " + failure.message);
        return false;
    }
    default:
        return true; // exact and prefix paths are checked by the reader
    }
}

void Validator::action(const Route& r, const std::string& path) {
    if (const auto* st = std::get_if<StaticAction>(&r.action)) {
        if (st->root.empty()) return; // a route whose action did not read
        bool rootOk = !files_ || existing(path + ".static.root", st->root, true);
        if (rootOk) spaFallback(path + ".static.spa_fallback", *st);
    } else if (const auto* rs = std::get_if<config::RespondAction>(&r.action)) {
        if (files_ && !rs->bodyFile.empty()) existing(path + ".respond.file", rs->bodyFile, false);
    } else if (const auto* px = std::get_if<config::ProxyAction>(&r.action)) {
        if (!files_) return;
        if (!px->fastcgi.address.empty() && !px->fastcgi.root.empty())
            existing(path + ".fastcgi.root", px->fastcgi.root, true);
        std::string why;
        if (!px->descriptorSet.empty() && !capture::GrpcSchema::load(px->descriptorSet, why))
            error(path + ".grpc.descriptor_set", why);
    }
}

void Validator::duplicateRoutes(std::size_t vhost, const std::vector<bool>& matchOk) {
    const std::vector<Route>& routes = c_.vhosts[vhost].routes;
    for (std::size_t i = 1; i < routes.size(); ++i) {
        if (!matchOk[i]) continue;
        std::string key = duplicateKey(routes[i]);
        for (std::size_t j = 0; j < i; ++j) {
            if (!matchOk[j]) continue;
            std::uint32_t overlap = effectiveMethods(routes[i].methods) & effectiveMethods(routes[j].methods);
            if (!overlap || duplicateKey(routes[j]) != key) continue;
            std::string methodsText =
                overlap == kAllMethods ? std::string("every method") : http::allowHeaderValue(overlap);
            error(map_.matchPath(vhost, i), "duplicate route '" + routes[i].spec + "' for " + methodsText +
                                                ": " + map_.routePath(vhost, j) + " (line " +
                                                std::to_string(routes[j].where.line) +
                                                ") already matches it");
            break;
        }
    }
}

void Validator::vhostsTogether() {
    const Vhost* firstDefault = nullptr;
    bool anyPortZero =
        std::any_of(c_.listen.begin(), c_.listen.end(), [](const config::Listen& l) { return l.port == 0; });
    for (std::size_t i = 0; i < c_.vhosts.size(); ++i) {
        const Vhost& vh = c_.vhosts[i];
        const std::string path = item("vhosts", i);
        if (vh.isDefault) {
            if (firstDefault)
                error(path + ".default", "only one vhost can be the default; vhost at line " +
                                             std::to_string(firstDefault->where.line) + " already is");
            else
                firstDefault = &vh;
        }
        if (vh.port && !anyPortZero &&
            std::none_of(c_.listen.begin(), c_.listen.end(),
                         [&](const config::Listen& l) { return l.port == *vh.port; }))
            error(path + ".port",
                  "no listener on port " + std::to_string(*vh.port) + " (add it under `listen:`)");
        for (std::size_t j = 0; j < i; ++j) {
            const Vhost& other = c_.vhosts[j];
            if (other.port != vh.port) continue;
            for (const std::string& name : vh.names) {
                if (std::find(other.names.begin(), other.names.end(), name) == other.names.end()) continue;
                error(path + ".names", "name '" + name + "' is already used by " + item("vhosts", j) +
                                           " (line " + std::to_string(other.where.line) + ")");
            }
        }
    }
}

// C0 and C1 controls, DEL, and the line and paragraph separators U+2028/U+2029 (UTF-8).
bool hasControlCharacter(std::string_view s) {
    for (std::size_t k = 0; k < s.size(); ++k) {
        const auto u = static_cast<unsigned char>(s[k]);
        if (u < 0x20 || u == 0x7f) return true;
        if (u == 0xc2 && k + 1 < s.size() && static_cast<unsigned char>(s[k + 1]) >= 0x80 &&
            static_cast<unsigned char>(s[k + 1]) <= 0x9f)
            return true;
        if (u == 0xe2 && k + 2 < s.size() && static_cast<unsigned char>(s[k + 1]) == 0x80 &&
            (static_cast<unsigned char>(s[k + 2]) == 0xa8 || static_cast<unsigned char>(s[k + 2]) == 0xa9))
            return true;
    }
    return false;
}

// Each rule's match parses for its stage (the Traffic filter language, rules/rules.h); actions that
// act before the request goes on (fail, map_local, map_remote) or on the whole exchange (throttle)
// are refused at the response stage (set_header, remove_header, replace_body and breakpoint work at
// both); replace_body's regex and replacement are compiled as the rule will compile them.
void Validator::rules() {
    for (std::size_t i = 0; i < c_.rules.size(); ++i) {
        const config::Rule& r = c_.rules[i];
        const std::string path = item("rules", i);
        if (hasControlCharacter(r.name))
            error(path + ".name", "a rule's name cannot hold control characters (it goes into records and "
                                  "the X-Portico-Rule field)");
        for (std::size_t j = 0; j < i; ++j)
            if (!r.name.empty() && c_.rules[j].name == r.name) {
                error(path + ".name", "another rule is named '" + r.name + "' (" + item("rules", j) +
                                          "): records, the rule: filter and match counts tell rules apart by "
                                          "name");
                break;
            }
        std::size_t next = 0; // the first item of the file's list the next action can be
        for (std::size_t k = 0; k < r.actions.size(); ++k) {
            const config::RuleAction& a = r.actions[k];
            // The reader leaves out an action that did not read (it reported why), so this may be a
            // later item of the list as written: its path is the item's found at its position.
            std::size_t written = k;
            for (std::size_t j = std::max(next, k); a.where.line > 0; ++j) {
                const config::Location l = map_.at(item(path + ".actions", j));
                if (l.line == 0) break; // not found: a config built in code
                if (l.line == a.where.line && l.column == a.where.column) {
                    written = j;
                    break;
                }
            }
            next = written + 1;
            const std::string at = item(path + ".actions", written);
            using Kind = config::RuleAction::Kind;
            if (r.stage == config::Rule::Stage::Response &&
                (a.kind == Kind::Fail || a.kind == Kind::MapLocal || a.kind == Kind::MapRemote)) {
                const char* name = a.kind == Kind::Fail       ? "fail"
                                   : a.kind == Kind::MapLocal ? "map_local"
                                                              : "map_remote";
                error(at,
                      std::string(name) +
                          " acts at the request stage (it answers instead of the route's action): use it in "
                          "a rule without `stage: response`");
            }
            if (r.stage == config::Rule::Stage::Response && a.kind == Kind::Throttle)
                error(at, "throttle applies to the whole exchange (the request's body and the response): use "
                          "it in a rule without `stage: response`");
            if (a.kind == Kind::ReplaceBody && !a.regex.empty()) {
                // Compiled as routes' regexes are (PCRE2, 8-bit, no UTF).
                routing::Regex::CompileError failure;
                if (!routing::Regex::compile(a.regex, false, &failure))
                    error(at + ".replace_body.regex", "invalid regular expression '" + a.regex +
                                                          "' at offset " + std::to_string(failure.offset) +
                                                          ": " + failure.message);
                else if (std::string why = rules::checkReplacement(a.regex, a.replaceWith); !why.empty())
                    error(at + ".replace_body.with",
                          "invalid replacement '" + a.replaceWith + "' " + why +
                              " (write $1 or ${name} for a group, $$ for a dollar)");
            }
            if (a.kind == Kind::MapLocal && files_) {
                std::error_code ec;
                if (!fs::exists(a.mapLocal, ec))
                    error(at + ".map_local", "file or folder '" + a.mapLocal + "' does not exist");
            }
        }
        if (std::string why = rules::checkMatch(r); !why.empty()) error(path + ".match", "match: " + why);
    }
}

std::vector<ConfigError> Validator::run() {
    listeners();
    logAndCapture();
    for (std::size_t i = 0; i < c_.vhosts.size(); ++i)
        vhost(i);
    vhostsTogether();
    rules();
    std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
        return std::tie(a.where.line, a.where.column) < std::tie(b.where.line, b.where.column);
    });
    return std::move(errors_);
}

} // namespace

std::vector<ConfigError> validate(const Config& config, const config::SourceMap& map, Checks checks) {
    return Validator(config, map, checks).run();
}

} // namespace portico::validate
