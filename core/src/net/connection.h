// One HTTP/1.1 connection: reads, parses pipelined requests, dispatches, writes (RFC 9112).
#pragma once

#include "net/io_buffer.h"

#include <portico/http/message.h>
#include <portico/http1/parser.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace portico::net {

class Worker;

class Connection : public std::enable_shared_from_this<Connection> {
public:
    using Clock = std::chrono::steady_clock;

    Connection(Worker& worker, boost::asio::ip::tcp::socket socket, std::uint16_t localPort);
    ~Connection();

    void start();
    /// Called by the worker's ticker: enforce the deadline of the current phase.
    void checkDeadline(Clock::time_point now);
    /// Called when the worker starts draining: idle connections close now, busy ones after the exchange.
    void onDrain();
    /// Closes at once (drain timeout passed).
    void abort();

    Connection* prev = nullptr;  // worker's intrusive list
    Connection* next = nullptr;

private:
    enum class Phase : std::uint8_t { Idle, Head, Body, Write, Delay, Closing };
    enum class Flush : std::uint8_t { Done, Blocked, Failed };

    void waitRead();
    void waitWrite();
    void onReadable(const boost::system::error_code& ec);
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void drive();
    void parseAndHandle();
    void handle(std::string_view body, std::span<const http::Header> trailers);
    void serialize(const http::Request& req, http::Response& res);
    void queueError(int status);
    Flush flushNow();
    void lingeringClose();
    void releaseBuffers();
    void resetBodyState();
    void setPhase(Phase p, std::chrono::nanoseconds timeout);

    Worker& worker_;
    boost::asio::ip::tcp::socket socket_;
    IoBuffer in_;
    IoBuffer out_;
    std::shared_ptr<const http::FileHandle> file_;
    std::uint64_t fileOffset_ = 0;
    std::uint64_t fileLeft_ = 0;
    std::unique_ptr<http1::ChunkedDecoder> chunked_;  // only while a chunked body is arriving
    std::unique_ptr<std::string> chunkBody_;
    std::size_t chunkPos_ = 0;  // raw bytes after the head already fed to the decoder
    std::unique_ptr<boost::asio::steady_timer> delayTimer_;  // only for routes with latency
    std::chrono::nanoseconds delay_{0};
    Clock::time_point deadline_ = Clock::time_point::max();
    Clock::time_point requestStart_;
    Clock::time_point idleSince_;
    std::uint16_t localPort_;
    Phase phase_ = Phase::Idle;
    bool closeAfterWrite_ = false;
    bool sentContinue_ = false;
    bool moreBuffered_ = false;  // a complete request may still be waiting in in_
    bool closed_ = false;
    bool parking_ = false;  // the buffered read was cancelled to give the buffer back
};

}  // namespace portico::net
