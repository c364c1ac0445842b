// Checks a read config as data: what the YAML reader cannot decide from the text alone.
#pragma once

#include <portico/config/config.h>
#include <portico/config/reader.h>

#include <cstdint>
#include <vector>

namespace portico::validate {

/// Which checks to run. `NoFiles` leaves out everything that looks at the disk (vhost and static
/// roots, error pages, respond files, FastCGI roots, certificate and key files and whether they
/// pair, gRPC descriptor sets, spa_fallback files, the folders of access_log.path and
/// capture.store), e.g. for a draft checked on every keystroke.
enum class Checks : std::uint8_t { All, NoFiles };

/// Every problem of `config` that reading could not see, each located through `map` (file:line:column
/// and the path such as "vhosts[1].routes[3].path"; line 0 when the map does not know the path, as
/// for a config built in code), sorted by line and column:
/// - route patterns (config::checkPattern) and `~`/`~*` regexes (compiled as the router compiles
///   them, PCRE2), and routes of one vhost that match the same requests;
/// - listeners on the same address and port; vhosts: one default, a `port:` some listener has,
///   names used once per port;
/// - files and folders unless `checks` is NoFiles (see Checks), cert/key pairs (tls::checkCertKeyPair),
///   descriptor sets (capture::GrpcSchema::load).
/// An empty result means the config can be published. The messages are the ones the loader has
/// always given (docs/configuration.md lists them).
std::vector<config::ConfigError> validate(const config::Config& config, const config::SourceMap& map,
                                          Checks checks = Checks::All);

} // namespace portico::validate
