// Which process on this machine is the client of a TCP connection (a forward proxy's loopback
// clients: "which app sent this?"). Linux: the client socket's inode from /proc/net/tcp and
// /proc/net/tcp6 (the line whose local address is our peer and whose remote address is us), then
// the process holding "socket:[INODE]" among /proc/PID/fd. Other users' processes are not readable
// without privileges: their connections stay unknown.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace portico::capture {

/// "PID COMMAND" ("4242 curl") of the process whose TCP socket is connected from `clientAddress`
/// to `serverAddress` (raw sockaddr_in / sockaddr_in6 bytes of both ends), "" when none is found.
/// Blocking: reads /proc (about 1 ms with a few hundred processes); `hintPids` are looked at first.
std::string processOfTcpClient(const std::string& clientAddress, const std::string& serverAddress,
                               std::vector<int>& hintPids);

/// One thread ("portico-procs") answering lookups for connections, so that a worker only queues.
/// The worker asks at accept, while the client's socket surely exists; the collector reads the
/// answer when it takes the connection's records.
class ProcessLookup {
public:
    ProcessLookup();
    ~ProcessLookup();
    ProcessLookup(const ProcessLookup&) = delete;
    ProcessLookup& operator=(const ProcessLookup&) = delete;

    /// Worker thread: look up the client of connection `connectionId`, whose accepted socket is
    /// `fd` (its two addresses are read now: two syscalls). Never waits for the lookup; at most
    /// kMaxQueued wait, more are dropped (their connections stay unknown).
    void request(std::uint64_t connectionId, int fd);
    /// Collector thread: "PID COMMAND" for `connectionId`, "" when it was not asked or not found.
    /// Waits at most `wait` for a lookup that is queued or running.
    std::string find(std::uint64_t connectionId, std::chrono::milliseconds wait);
    /// Lookups asked so far (a cheap test whether find() can have anything).
    std::uint64_t requested() const;

    static constexpr std::size_t kMaxQueued = 256;
    static constexpr std::size_t kMaxAnswers = 4096; ///< oldest answers are forgotten beyond this

private:
    struct Job {
        std::uint64_t connectionId;
        std::string client, server; // raw sockaddr bytes
    };
    void run();

    mutable std::mutex mutex_;
    std::condition_variable cv_;     // a job was queued / stop
    std::condition_variable doneCv_; // an answer arrived
    std::deque<Job> queue_;
    std::unordered_map<std::uint64_t, std::string> answers_;
    std::deque<std::uint64_t> answerOrder_;
    std::uint64_t pending_ = 0; // connection id being looked up now (0: none)
    std::uint64_t requested_ = 0;
    bool stop_ = false;
    std::thread thread_;
};

} // namespace portico::capture
