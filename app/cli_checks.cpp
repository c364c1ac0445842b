#include "cli_checks.h"

#include <portico/config/network.h>
#include <portico/http/ascii.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace portico::app {
namespace {

std::string plain(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    std::string s = buf;
    while (!s.empty() && s.back() == '0')
        s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

std::string expected(std::uint64_t lo, std::uint64_t hi) {
    return hi == UINT64_MAX ? "expected " + std::to_string(lo) + " or more"
                            : "expected " + std::to_string(lo) + " to " + std::to_string(hi);
}

std::string names(CLI::App* app) {
    std::string out;
    for (auto* sub : app->get_subcommands({})) {
        if (!out.empty()) out += ", ";
        out += sub->get_name();
    }
    return out;
}

std::string path(CLI::App* app) {
    std::string out;
    for (CLI::App* a = app; a; a = a->get_parent())
        out = a->get_name() + (out.empty() ? "" : " " + out);
    return out;
}

// PORTICO_CHECK_ARGS (docs/cli.md): the docs' commands are checked for their syntax, not for the
// files on the machine that runs the check.
bool parseOnly() {
    const char* check = std::getenv("PORTICO_CHECK_ARGS");
    return check && *check;
}

// "portico help cert" for the cert command, "portico help" for the top level.
std::string helpFor(CLI::App* app) {
    std::string topic;
    for (CLI::App* a = app; a && a->get_parent(); a = a->get_parent())
        topic = a->get_name() + (topic.empty() ? "" : " " + topic);
    return "portico help" + (topic.empty() ? "" : " " + topic);
}

} // namespace

CLI::Validator wholeNumber(std::uint64_t lo, std::uint64_t hi) {
    const std::string range =
        hi == UINT64_MAX ? std::to_string(lo) + "+" : std::to_string(lo) + ".." + std::to_string(hi);
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            std::uint64_t v = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (text.empty() || end != text.data() + text.size() ||
                (ec != std::errc{} && ec != std::errc::result_out_of_range))
                return "'" + text + "' is not a whole number (" + expected(lo, hi) + ")";
            if (ec == std::errc::result_out_of_range || v < lo || v > hi)
                return text + " is out of range (" + expected(lo, hi) + ")";
            return {};
        },
        range);
}

CLI::Validator number(double lo, double hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            double v = 0;
            auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            const std::string want = "expected " + plain(lo) + " to " + plain(hi);
            if (text.empty() || end != text.data() + text.size() || ec != std::errc{})
                return "'" + text + "' is not a number (" + want + ")";
            if (!(v >= lo && v <= hi)) return text + " is out of range (" + want + ")";
            return {};
        },
        plain(lo) + ".." + plain(hi));
}

CLI::Validator existingFile() {
    return CLI::Validator(
        [](std::string& p) -> std::string {
            if (parseOnly()) return {};
            std::error_code ec;
            auto st = std::filesystem::status(p, ec);
            if (!std::filesystem::exists(st)) return p + ": no such file";
            if (std::filesystem::is_directory(st)) return p + ": is a folder, not a file";
            return {};
        },
        "FILE");
}

CLI::Validator clientNetwork() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            std::string error;
            return config::parseNetwork(text, error) ? std::string() : error;
        },
        "CIDR");
}

std::pair<std::string, std::string> splitHostMapping(const std::string& text) {
    const std::size_t eq = text.find('=');
    std::string name = http::lower(text.substr(0, eq));
    if (!name.empty() && name.back() == '.') name.pop_back();
    std::string address = eq == std::string::npos ? std::string() : text.substr(eq + 1);
    if (address.size() > 2 && address.front() == '[' && address.back() == ']')
        address = address.substr(1, address.size() - 2);
    return {name, address};
}

CLI::Validator hostMapping() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            if (text.find('=') == std::string::npos)
                return "'" + text + "': expected NAME=ADDR (e.g. api.example.test=127.0.0.1" +
                       (text.find(':') != std::string::npos ? "; curl's NAME:PORT:ADDR form is not taken"
                                                            : "") +
                       ")";
            const auto [name, address] = splitHostMapping(text);
            if (std::string why = config::hostOverrideNameProblem(name); !why.empty()) return why;
            if (!config::isIpLiteral(address))
                return "'" + address +
                       "' is not an IPv4 or IPv6 address (NAME=ADDR maps a name to an address)";
            return {};
        },
        "NAME=ADDR");
}

CLI::Validator existingFolder() {
    return CLI::Validator(
        [](std::string& p) -> std::string {
            if (parseOnly()) return {};
            std::error_code ec;
            auto st = std::filesystem::status(p, ec);
            if (!std::filesystem::exists(st)) return p + ": no such folder";
            if (!std::filesystem::is_directory(st)) return p + ": is a file, not a folder";
            return {};
        },
        "FOLDER");
}

std::string subcommandProblem(CLI::App& app, int argc, char** argv) {
    CLI::App* cur = &app;
    int i = 1;
    for (; i < argc; ++i) {
        const std::string word = argv[i];
        if (word.empty() || word.front() == '-') return {}; // options (and --help) are CLI11's
        if (cur->get_subcommands({}).empty()) return {};    // positional arguments from here on
        CLI::App* next = nullptr;
        for (auto* sub : cur->get_subcommands({}))
            if (sub->check_name(word)) next = sub;
        if (!next) {
            // A command that takes positionals after optional subcommands is not ours to judge.
            if (cur != &app &&
                !cur->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty())
                return {};
            return path(cur) + ": unknown subcommand '" + word + "'; one of: " + names(cur) + "\nRun '" +
                   helpFor(cur) + "' for usage.";
        }
        cur = next;
    }
    if (cur != &app && cur->get_require_subcommand_min() > 0)
        return path(cur) + ": missing subcommand; one of: " + names(cur) + "\nRun '" + helpFor(cur) +
               "' for usage.";
    return {};
}

CLI::App* helpTopic(CLI::App& app, const std::vector<std::string>& words, std::string& error) {
    CLI::App* cur = &app;
    for (const auto& word : words) {
        CLI::App* next = nullptr;
        for (auto* sub : cur->get_subcommands({}))
            if (sub->check_name(word)) next = sub;
        if (!next) {
            error = "portico help: unknown subcommand '" + word + "'" +
                    (cur == &app ? "" : " of " + path(cur)) + "; one of: " + names(cur);
            return nullptr;
        }
        cur = next;
    }
    return cur;
}

std::string nothingMatches(const std::string& file, const std::string& filter, std::size_t recorded) {
    if (recorded == 0) return file + " holds no exchanges";
    return "no exchange in " + file + " matches --filter '" + filter + "' (" + std::to_string(recorded) +
           " recorded)";
}

std::string failureMessage(const CLI::App* app, const CLI::Error& e) {
    // The deepest subcommand that was parsed is the one whose help explains the error.
    const CLI::App* cur = app;
    for (;;) {
        auto parsed = cur->get_subcommands();
        if (parsed.empty()) break;
        cur = parsed.front();
    }
    std::string topic;
    for (const CLI::App* a = cur; a && a->get_parent(); a = a->get_parent())
        topic = a->get_name() + (topic.empty() ? "" : " " + topic);
    std::string where = "portico" + (topic.empty() ? "" : " " + topic);
    std::string what = e.what();
    // CLI11's "The following argument(s) was/were not expected: X" in the words of the other errors.
    if (what.starts_with("The following argument")) {
        if (auto colon = what.find(": "); colon != std::string::npos)
            what = "unexpected argument(s): " + what.substr(colon + 2);
    }
    return where + ": " + what + "\nRun 'portico help" + (topic.empty() ? "" : " " + topic) +
           "' for usage.\n";
}

} // namespace portico::app
