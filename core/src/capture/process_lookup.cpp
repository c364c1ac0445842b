// The client process of a TCP connection, from /proc (process_lookup.h).
#include "capture/process_lookup.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string_view>

namespace portico::capture {

namespace {

// An address as /proc/net/tcp{,6} prints it: each 32-bit word of the address as the host reads it
// from memory ("%08X"), then ":" and the port ("%04X").
std::string procNetText(const std::string& raw, bool& v6) {
    char out[64] = {};
    if (raw.size() >= sizeof(sockaddr_in) &&
        reinterpret_cast<const sockaddr*>(raw.data())->sa_family == AF_INET) {
        sockaddr_in a{};
        std::memcpy(&a, raw.data(), sizeof a);
        std::uint32_t word = 0;
        std::memcpy(&word, &a.sin_addr, 4);
        std::snprintf(out, sizeof out, "%08X:%04X", word, unsigned(ntohs(a.sin_port)));
        v6 = false;
        return out;
    }
    if (raw.size() >= sizeof(sockaddr_in6) &&
        reinterpret_cast<const sockaddr*>(raw.data())->sa_family == AF_INET6) {
        sockaddr_in6 a{};
        std::memcpy(&a, raw.data(), sizeof a);
        std::uint32_t w[4];
        std::memcpy(w, &a.sin6_addr, 16);
        std::snprintf(out, sizeof out, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3],
                      unsigned(ntohs(a.sin6_port)));
        v6 = true;
        return out;
    }
    return {};
}

// The inode of the socket whose local address is `local` and remote address `remote` ("" texts
// as procNetText makes them), 0 when not found.
unsigned long socketInode(const std::string& local, const std::string& remote, bool v6) {
    std::ifstream in(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    std::string line;
    std::getline(in, line); // the heading
    while (std::getline(in, line)) {
        // "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"
        char l[64], r[64];
        unsigned long inode = 0;
        unsigned sl = 0, st = 0, uid = 0, timeout = 0;
        char queues[40], timer[40], retr[16];
        if (std::sscanf(line.c_str(), " %u: %63s %63s %X %39s %39s %15s %u %u %lu", &sl, l, r, &st, queues,
                        timer, retr, &uid, &timeout, &inode) != 10)
            continue;
        if (local == l && remote == r) return inode;
    }
    return 0;
}

bool holdsSocket(int pid, const std::string& link) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return false;
    bool found = false;
    char target[64];
    while (dirent* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        const std::string path = dir + "/" + e->d_name;
        const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        if (link == std::string_view(target, static_cast<std::size_t>(n))) {
            found = true;
            break;
        }
    }
    ::closedir(d);
    return found;
}

std::string describe(int pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    std::getline(in, comm);
    return std::to_string(pid) + (comm.empty() ? std::string() : " " + comm);
}

} // namespace

std::string processOfTcpClient(const std::string& clientAddress, const std::string& serverAddress,
                               std::vector<int>& hintPids) {
    bool v6 = false, v6b = false;
    const std::string local = procNetText(clientAddress, v6);
    const std::string remote = procNetText(serverAddress, v6b);
    if (local.empty() || remote.empty() || v6 != v6b) return {};
    const unsigned long inode = socketInode(local, remote, v6);
    if (!inode) return {};
    const std::string link = "socket:[" + std::to_string(inode) + "]";
    for (std::size_t i = 0; i < hintPids.size(); ++i)
        if (holdsSocket(hintPids[i], link)) {
            const int pid = hintPids[i];
            std::rotate(hintPids.begin(), hintPids.begin() + static_cast<std::ptrdiff_t>(i),
                        hintPids.begin() + static_cast<std::ptrdiff_t>(i) + 1);
            return describe(pid);
        }
    DIR* proc = ::opendir("/proc");
    if (!proc) return {};
    std::vector<int> pids;
    while (dirent* e = ::readdir(proc))
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9') pids.push_back(std::atoi(e->d_name));
    ::closedir(proc);
    // Newest first: a client that just started (curl, a test's script) has the highest pid until
    // pids wrap, so it is usually the first looked at, while its socket surely still exists.
    std::sort(pids.begin(), pids.end(), std::greater<>());
    const int self = static_cast<int>(::getpid());
    int found = 0;
    for (const int pid : pids) {
        if (pid == self) continue; // our own sockets are the server side
        if (std::find(hintPids.begin(), hintPids.end(), pid) != hintPids.end()) continue;
        if (holdsSocket(pid, link)) {
            found = pid;
            break;
        }
    }
    if (!found) {
        // A client inside this process (a test, the GUI's replay) holds it among our own fds.
        if (holdsSocket(self, link)) found = self;
        if (!found) return {};
    }
    hintPids.insert(hintPids.begin(), found);
    if (hintPids.size() > 8) hintPids.pop_back();
    return describe(found);
}

ProcessLookup::ProcessLookup() {
    thread_ = std::thread([this] { run(); });
    pthread_setname_np(thread_.native_handle(), "portico-procs");
}

ProcessLookup::~ProcessLookup() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
}

void ProcessLookup::request(std::uint64_t connectionId, int fd) {
    sockaddr_storage peer{}, self{};
    socklen_t peerLen = sizeof peer, selfLen = sizeof self;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &selfLen) != 0)
        return;
    {
        std::lock_guard lock(mutex_);
        if (queue_.size() >= kMaxQueued) return;
        queue_.push_back({connectionId, std::string(reinterpret_cast<const char*>(&peer), peerLen),
                          std::string(reinterpret_cast<const char*>(&self), selfLen)});
        ++requested_;
    }
    cv_.notify_one();
}

std::uint64_t ProcessLookup::requested() const {
    std::lock_guard lock(mutex_);
    return requested_;
}

std::string ProcessLookup::find(std::uint64_t connectionId, std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    auto waiting = [&] {
        return pending_ == connectionId || std::any_of(queue_.begin(), queue_.end(), [&](const Job& j) {
                   return j.connectionId == connectionId;
               });
    };
    doneCv_.wait_for(lock, wait, [&] { return !waiting(); });
    auto it = answers_.find(connectionId);
    return it == answers_.end() ? std::string() : it->second;
}

void ProcessLookup::run() {
    std::vector<int> hints;
    std::unique_lock lock(mutex_);
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        Job job = std::move(queue_.front());
        queue_.pop_front();
        pending_ = job.connectionId;
        lock.unlock();
        std::string answer = processOfTcpClient(job.client, job.server, hints);
        lock.lock();
        pending_ = 0;
        answers_[job.connectionId] = std::move(answer);
        answerOrder_.push_back(job.connectionId);
        while (answerOrder_.size() > kMaxAnswers) {
            answers_.erase(answerOrder_.front());
            answerOrder_.pop_front();
        }
        doneCv_.notify_all();
    }
}

} // namespace portico::capture
