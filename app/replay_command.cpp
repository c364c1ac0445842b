// `portico replay FILE.db|IN.har --target URL [--filter EXPR]`: resend recorded requests, record
// the new exchanges, and show what changed (docs/cli.md).
#include "cli_checks.h"
#include "commands.h"

#include <portico/capture/filter.h>
#include <portico/capture/har.h>
#include <portico/capture/replay.h>
#include <portico/capture/session_file.h>
#include <portico/capture/store.h>

#include <fstream>
#include <iostream>
#include <sstream>

namespace portico::app {
namespace {

struct ReplayOptions {
    std::string source;
    std::string target;
    std::string filter;
    std::string record;
    bool allowRemote = false;
    bool h2 = false;
    bool http1 = false;
    bool verify = false;
    std::string caFile;
    bool curl = false;
    bool quiet = false;
    int timeoutMs = 10000;
};

int run(const ReplayOptions& o) {
    std::string error;
    auto filter = capture::Filter::parse(o.filter, error);
    if (!filter) {
        std::cerr << "portico: --filter: " << error << "\n";
        return kExitUsage;
    }
    // The target is checked before anything is read or sent: a typo or a remote host without
    // --allow-remote is a usage error, not N identical failures.
    if (!o.target.empty() && !o.curl) {
        if (std::string why = capture::checkReplayTarget(o.target, o.allowRemote); !why.empty()) {
            std::cerr << "portico replay: --target " << o.target << ": " << why << "\n";
            return kExitUsage;
        }
    }
    auto all = capture::loadSessionFile(o.source, error);
    if (!error.empty()) {
        std::cerr << "portico replay: " << error << "\n";
        return kExitFailure;
    }
    // Each exchange is named by its number in the file: the record id of a session file, the
    // entry's position (from 1) in a HAR file, which has no ids.
    std::vector<std::pair<std::uint64_t, capture::Exchange>> chosen;
    for (std::size_t i = 0; i < all.size(); ++i)
        if (filter->matches(all[i])) chosen.emplace_back(all[i].id ? all[i].id : i + 1, std::move(all[i]));
    if (chosen.empty()) {
        std::cerr << "portico replay: " << nothingMatches(o.source, o.filter, all.size()) << "\n";
        return kExitFailure;
    }
    if (o.curl) {
        for (const auto& [number, e] : chosen)
            std::cout << capture::toCurl(e, o.target) << "\n";
        return kExitOk;
    }
    std::unique_ptr<capture::Store> store;
    if (!o.record.empty()) {
        store = capture::Store::open(o.record, error);
        if (!store) {
            std::cerr << "portico: " << error << "\n";
            return kExitFailure;
        }
    }
    capture::ReplayOptions ro;
    ro.baseUrl = o.target;
    ro.allowRemote = o.allowRemote;
    ro.timeout = std::chrono::milliseconds(o.timeoutMs);
    ro.protocol = o.h2      ? capture::ReplayProtocol::H2
                  : o.http1 ? capture::ReplayProtocol::Http1
                            : capture::ReplayProtocol::Auto;
    ro.verifyTls = o.verify || !o.caFile.empty();
    ro.caFile = o.caFile;
    std::size_t same = 0, changed = 0, failed = 0;
    std::vector<capture::Exchange> replayed;
    for (const auto& [number, e] : chosen) {
        auto r = capture::replay(e, ro);
        std::cout << "#" << number << " " << e.method << " " << e.target << " ";
        if (!r.ok()) {
            ++failed;
            std::cout << "failed: " << r.error << "\n";
            continue;
        }
        const double ms = static_cast<double>(r.exchange.durationNs()) / 1e6;
        std::cout << e.status << " -> " << r.exchange.status << " (" << ms << " ms)";
        if (r.differences.empty()) {
            ++same;
            std::cout << " same\n";
        } else {
            ++changed;
            std::cout << " " << r.differences.size() << " difference(s)\n";
            if (!o.quiet)
                for (const auto& d : r.differences)
                    std::cout << "    " << d.what << ": " << d.before << " -> " << d.after << "\n";
        }
        replayed.push_back(std::move(r.exchange));
    }
    if (store && (!store->append(replayed) || !store->commit())) {
        std::cerr << "portico: " << o.record << ": " << store->error() << "\n";
        return kExitFailure;
    }
    std::cout << chosen.size() << " replayed: " << same << " same, " << changed << " changed, " << failed
              << " failed\n";
    return failed ? kExitFailure : kExitOk;
}

} // namespace

Command addReplayCommand(CLI::App& app) {
    auto o = std::make_shared<ReplayOptions>();
    auto* cmd =
        app.add_subcommand("replay", "Resend recorded requests (FILE.db or IN.har) and compare the answers");
    cmd->add_option("source", o->source, "Session file (serve --record) or HAR file")
        ->required()
        ->check(existingFile());
    cmd->add_option("--target", o->target, "Base URL to send to (default: each request's original host)");
    cmd->add_option("--filter", o->filter,
                    "Only matching exchanges (e.g. 'status:>=400 method:POST path:/api')");
    cmd->add_option("--record", o->record, "Append the new exchanges to this session file");
    cmd->add_option("--timeout", o->timeoutMs, "Per request, milliseconds (default 10000)")
        ->check(wholeNumber(1, 600000));
    cmd->add_flag("--allow-remote", o->allowRemote, "Allow targets that are not loopback addresses");
    auto* h2 = cmd->add_flag("--h2", o->h2,
                             "HTTP/2: ALPN h2 over https, h2c with prior knowledge over http (default: "
                             "https lets the server choose, http uses HTTP/1.1)");
    cmd->add_flag("--http1", o->http1, "HTTP/1.1 only (ALPN http/1.1 over https)")->excludes(h2);
    cmd->add_flag("--verify", o->verify,
                  "Verify the certificate of a loopback https target too (remote targets always are)");
    cmd->add_option("--cacert", o->caFile, "Also trust these CA certificates (PEM; implies --verify)")
        ->check(existingFile());
    cmd->add_flag("--curl", o->curl, "Print each request as a curl command instead of sending it");
    cmd->add_flag("-q,--quiet", o->quiet, "Do not list the differences");
    return Command{cmd, [o] { return run(*o); }};
}

} // namespace portico::app
