// Access log in Combined Log Format or JSON lines, formatted and written by a background thread.
#pragma once

#include <portico/config/config.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace portico::server {

/// The fields of one access-log line, copied out of the request when logging is on.
struct AccessRecord {
    std::chrono::system_clock::time_point time;
    std::string client;
    std::string method;
    std::string target;
    std::string host;
    std::string referer;
    std::string userAgent;
    int versionMajor = 1;
    int versionMinor = 1;
    int status = 0;
    std::uint64_t bytes = 0; ///< response body bytes
    std::int64_t durationNs = 0;
};

/// Formats `r` as one Combined Log Format line (no newline).
std::string formatCombined(const AccessRecord& r);
/// Formats `r` as one JSON object (no newline).
std::string formatJson(const AccessRecord& r);
/// Formats `r` as one short line for a terminal (no newline): local time, method, target, status,
/// duration, response body size — "14:02:07 GET /app.js 200 0.41 ms 1.2 KiB". Control bytes and
/// non-ASCII in the target are shown as \xHH, so a request cannot write escape sequences to the
/// terminal.
std::string formatDev(const AccessRecord& r);

class AccessLogger {
public:
    /// Opens `path` for appending ("-" = stdout). `error` is set and ok() false if it cannot.
    AccessLogger(config::AccessLog::Format format, const std::string& path, std::string& error);
    ~AccessLogger(); ///< flushes everything queued
    bool ok() const { return file_ != nullptr; }
    /// Queues a record; never blocks on I/O (a short mutex hold only).
    void push(AccessRecord&& r);

private:
    void run();
    config::AccessLog::Format format_;
    std::FILE* file_ = nullptr;
    bool ownsFile_ = false;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<AccessRecord> queue_;
    bool stop_ = false;
    std::thread thread_;
};

} // namespace portico::server
