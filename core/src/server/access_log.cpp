// Access-log formatting (CLF / JSON lines) and the writer thread.
#include "server/access_log.h"
#include <portico/http/json_text.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <pthread.h>

namespace portico::server {
namespace {

// Request fields come from the wire and need not be UTF-8.
void appendJsonString(std::string& out, std::string_view s) {
    http::appendJsonString(out, s, http::JsonBytes::Ascii);
}

// CLF quotes fields; escape quotes, backslashes and control bytes as nginx does (\xHH).
void appendClfQuoted(std::string& out, std::string_view s) {
    out += '"';
    if (s.empty()) out += '-';
    for (unsigned char c : s) {
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += '"';
}
} // namespace

std::string formatCombined(const AccessRecord& r) {
    std::time_t t = std::chrono::system_clock::to_time_t(r.time);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char when[64];
    std::strftime(when, sizeof when, "%d/%b/%Y:%H:%M:%S +0000", &tm);
    std::string out;
    out.reserve(256);
    out += r.client.empty() ? "-" : r.client;
    out += " - - [";
    out += when;
    out += "] ";
    std::string requestLine = r.method + " " + r.target + " HTTP/" + std::to_string(r.versionMajor) + "." +
                              std::to_string(r.versionMinor);
    appendClfQuoted(out, requestLine);
    out += ' ';
    out += std::to_string(r.status);
    out += ' ';
    out += std::to_string(r.bytes);
    out += ' ';
    appendClfQuoted(out, r.referer);
    out += ' ';
    appendClfQuoted(out, r.userAgent);
    return out;
}

std::string formatJson(const AccessRecord& r) {
    std::time_t t = std::chrono::system_clock::to_time_t(r.time);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(r.time.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char when[64];
    std::size_t n = std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(when + n, sizeof when - n, ".%03lldZ", static_cast<long long>(ms));
    std::string out = "{\"time\":\"";
    out += when;
    out += "\",\"client\":";
    appendJsonString(out, r.client);
    out += ",\"method\":";
    appendJsonString(out, r.method);
    out += ",\"target\":";
    appendJsonString(out, r.target);
    out += ",\"protocol\":\"HTTP/" + std::to_string(r.versionMajor) + "." + std::to_string(r.versionMinor) +
           "\"";
    out += ",\"host\":";
    appendJsonString(out, r.host);
    out += ",\"status\":" + std::to_string(r.status);
    out += ",\"bytes\":" + std::to_string(r.bytes);
    out += ",\"duration_ns\":" + std::to_string(r.durationNs);
    out += ",\"referer\":";
    appendJsonString(out, r.referer);
    out += ",\"user_agent\":";
    appendJsonString(out, r.userAgent);
    out += '}';
    return out;
}

std::string formatDev(const AccessRecord& r) {
    std::time_t t = std::chrono::system_clock::to_time_t(r.time);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::strftime(buf, sizeof buf, "%H:%M:%S ", &tm);
    std::string out = buf;
    auto appendVisible = [&out](std::string_view s) {
        for (unsigned char c : s) {
            if (c < 0x21 || c >= 0x7f || c == '\\') {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02X", c);
                out += hex;
            } else {
                out += static_cast<char>(c);
            }
        }
    };
    appendVisible(r.method.empty() ? std::string_view("-") : std::string_view(r.method));
    out += ' ';
    appendVisible(r.target.empty() ? std::string_view("-") : std::string_view(r.target));
    out += ' ';
    out += std::to_string(r.status);
    const double ms = static_cast<double>(r.durationNs) / 1e6;
    // Each unit up to where its rounding would print the next one's smallest value (9.996 ms is
    // "10 ms", not "10.00 ms"; 999.6 ms is "1.00 s").
    if (ms < 9.995)
        std::snprintf(buf, sizeof buf, " %.2f ms", ms);
    else if (ms < 999.5)
        std::snprintf(buf, sizeof buf, " %.0f ms", ms);
    else
        std::snprintf(buf, sizeof buf, " %.2f s", ms / 1000);
    out += buf;
    const double b = static_cast<double>(r.bytes);
    if (b < 1024)
        std::snprintf(buf, sizeof buf, " %.0f B", b);
    else if (b < 1024 * 1024)
        std::snprintf(buf, sizeof buf, " %.1f KiB", b / 1024);
    else if (b < 1024.0 * 1024 * 1024)
        std::snprintf(buf, sizeof buf, " %.1f MiB", b / (1024 * 1024));
    else
        std::snprintf(buf, sizeof buf, " %.2f GiB", b / (1024.0 * 1024 * 1024));
    out += buf;
    return out;
}

AccessLogger::AccessLogger(config::AccessLog::Format format, const std::string& path, std::string& error)
    : format_(format) {
    if (path.empty() || path == "-") {
        file_ = stdout;
    } else {
        file_ = std::fopen(path.c_str(), "ae");
        if (!file_) {
            error = path + ": " + std::strerror(errno);
            return;
        }
        ownsFile_ = true;
    }
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "portico-log");
}

AccessLogger::~AccessLogger() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
    if (ownsFile_ && file_) std::fclose(file_);
}

void AccessLogger::push(AccessRecord&& r) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(r));
    }
    cv_.notify_one();
}

void AccessLogger::run() {
    std::vector<AccessRecord> batch;
    std::string text;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            batch.swap(queue_);
            if (batch.empty() && stop_) return;
        }
        text.clear();
        for (const auto& r : batch) {
            switch (format_) {
            case config::AccessLog::Format::Json:
                text += formatJson(r);
                break;
            case config::AccessLog::Format::Dev:
                text += formatDev(r);
                break;
            default:
                text += formatCombined(r);
            }
            text += '\n';
        }
        std::fwrite(text.data(), 1, text.size(), file_);
        std::fflush(file_);
        batch.clear();
    }
}

} // namespace portico::server
