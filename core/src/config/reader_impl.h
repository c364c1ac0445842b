// Private to core/src/config: the Reader that reader.cpp, read_values.cpp, read_vhosts.cpp,
// read_actions.cpp and read_rules.cpp implement between them, and the helpers more than one of
// them uses.
#pragma once

#include <portico/config/reader.h>
#include <portico/http/message.h>

#include "yaml_scan.h"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace portico::config::detail {

namespace fs = std::filesystem;
using Keys = std::span<const std::string_view>;

using http::isToken; // RFC 9110 §5.6.2 token
using http::lower;
using http::upper;

/// " (did you mean 'x'?)" when exactly one candidate is closest and within distance 2, else "".
std::string suggestion(std::string_view word, Keys candidates);
bool hasControlChars(std::string_view s);
using yaml::describe;
std::string item(const std::string& path, std::size_t i);
std::string normalise(const fs::path& p);

/// A route's path parameters, for checking {{param.NAME}} templates.
struct RouteShape {
    bool pattern = false;
    bool unknown = false; ///< the path itself was invalid: do not check {{param.*}} against it
    std::vector<std::string> params;
    bool wildcard = false;
};

struct GroupContext {
    std::string prefix; ///< joined prefixes of the enclosing groups, "" at the top
    bool prefixHasParams = false;
    int depth = 0;
};

class Reader {
public:
    Reader(std::string file, fs::path baseDir) : file_(std::move(file)), baseDir_(std::move(baseDir)) {
        map_.file = file_;
    }

    ReadResult run(std::string_view text, std::string sourcePath);

private:
    /// A node with its path in the document and the position errors about it point at.
    struct Value {
        YAML::Node node;
        std::string path;
        YAML::Mark mark;
    };
    /// One key/value pair of a map.
    struct Entry {
        std::string key;
        YAML::Mark keyMark;
        Value value;
    };

    void error(const YAML::Mark& mark, const std::string& path, std::string message);
    void error(const Value& v, std::string message) { error(v.mark, v.path, std::move(message)); }
    void errorAtKey(const Entry& e, std::string message) {
        error(e.keyMark, e.value.path, std::move(message));
    }
    Location locate(const YAML::Mark& mark) const;

    Value root(const YAML::Node& node) const { return {node, "", node.Mark()}; }
    bool readMap(const Value& v, Keys known, const std::function<bool(const Entry&)>& visit, Keys notYet = {},
                 std::string_view notYetHint = {});
    std::optional<std::vector<Value>> list(const Value& v, bool scalarAllowed);

    std::optional<std::string> string(const Value& v);
    std::optional<std::vector<std::string>> strings(const Value& v);
    std::optional<bool> boolean(const Value& v);
    std::optional<std::int64_t> integer(const Value& v, std::int64_t min, std::int64_t max);
    std::optional<double> number(const Value& v, double min, double max);
    std::optional<std::uint64_t> size(const Value& v, std::uint64_t min);
    std::optional<Duration> duration(const Value& v, bool zeroAllowed);
    std::optional<int> status(const Value& v, int min, int max);
    std::optional<std::string> absolute(const Value& v);
    std::optional<HeaderList> headers(const Value& v, const RouteShape* templates);
    void checkTemplates(const Value& v, std::string_view text, const RouteShape& shape);

    void readTop(const Value& v, Config& c);
    void readListen(const Value& v, std::vector<Listen>& out);
    std::optional<Listen> parseAddress(const Value& v);
    std::optional<ForwardProxy> readForwardProxy(const Value& v);
    void readHosts(const Value& v, HostOverrides& out);
    // `rules:` (read_rules.cpp): the list, one action item, and each action kind's value.
    void readRules(const Value& v, std::vector<Rule>& out);
    std::optional<RuleAction> readRuleAction(const Value& v);
    bool readSetHeader(const Value& v, RuleAction& a);
    bool readRemoveHeader(const Value& v, RuleAction& a);
    bool readFail(const Value& v, RuleAction& a);
    void readLimits(const Value& v, Limits& l);
    void readAccessLog(const Value& v, AccessLog& a);
    void readCompression(const Value& v, Compression& c);
    void readHttp2(const Value& v, Http2& h);
    void readCapture(const Value& v, Capture& c);
    std::optional<TlsFiles> readTlsFiles(const Value& v);
    void readVhost(const Value& v, Vhost& vh, std::vector<SourceMap::RouteSource>& sources);
    bool readStaticKey(const Entry& e, StaticAction& st);
    void readRoutes(const Value& v, const GroupContext& group, std::vector<Route>& out,
                    std::vector<SourceMap::RouteSource>& sources);
    void readRoute(const Value& v, const GroupContext& group, std::vector<Route>& out,
                   std::vector<SourceMap::RouteSource>& sources);
    void readGroup(const Value& v, const GroupContext& group, std::vector<Route>& out,
                   std::vector<SourceMap::RouteSource>& sources);
    bool parseMatch(const Entry& e, const GroupContext& group, Route& r, RouteShape& shape);
    std::optional<std::uint32_t> methods(const Value& v);
    // One reader per route action; kActions lists them by key.
    std::optional<Action> readStatic(const Entry& e, const RouteShape& shape);
    std::optional<Action> readRespond(const Entry& e, const RouteShape& shape);
    std::optional<Action> readRedirect(const Entry& e, const RouteShape& shape);
    std::optional<Action> readProxy(const Entry& e, const RouteShape& shape);
    std::optional<Action> readFastCgi(const Entry& e, const RouteShape& shape);
    std::optional<Action> readWebSocket(const Entry& e, const RouteShape& shape);
    void upstreamUrl(const Value& v, ProxyAction& px);
    bool readProxyKey(const Entry& k, ProxyAction& px);
    void fastCgiAddress(const Value& v, FastCgi& f);

    using ActionReader = std::optional<Action> (Reader::*)(const Entry&, const RouteShape&);
    struct ActionKind {
        std::string_view key;
        ActionReader read;
        /// The kind with every value at its default: what a route whose action did not read holds,
        /// so a refused file read for the GUI's form shows the route as written.
        Action (*empty)();
    };
    /// The route actions: key → reader (the keys are also in kRouteKeys); in read_actions.cpp.
    static const ActionKind kActions[];
    static const ActionKind* actionKind(std::string_view key);
    /// Notes where the value at `path` starts (the first time only: a duplicate key is an error).
    void note(const Value& v) { map_.values.emplace(v.path, locate(v.mark)); }

    std::string file_;
    fs::path baseDir_;
    std::vector<ConfigError> errors_;
    SourceMap map_;
};

} // namespace portico::config::detail
