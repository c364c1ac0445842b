// One WebSocket connection (RFC 6455) after the HTTP/1.1 handshake: framing over transport.h, so
// ws:// and wss:// share one code path; echo, room and live-reload endpoints.
#pragma once

#include "io/io_buffer.h"
#include "io/session.h"
#include "ws/hub.h"
#include "ws/upgrade.h"

#include <portico/ws/websocket.h>

#include <memory>
#include <string>

typedef struct ssl_st SSL;

namespace portico::ws {

class Inflater;

class WsSession final : public io::Session, public std::enable_shared_from_this<WsSession> {
public:
    using Socket = io::Socket;

    /// Takes over `socket` and `ssl` (freed here; null on cleartext) from an HTTP/1.1 connection.
    WsSession(io::SessionHost& worker, Socket socket, SSL* ssl, std::unique_ptr<Accepted> accepted);
    ~WsSession() override;

    /// Sends `handshake` (the serialised 101), joins the room, processes `received` (bytes the client
    /// sent after its upgrade request), then reads.
    void start(std::string_view handshake, std::string_view received);

    void checkDeadline(Clock::time_point now) override;
    void onDrain() override;
    void abort() override;

    /// Queues a frame built for many recipients (room message, live-reload event). Worker thread
    /// only; never closes synchronously. False if this session no longer takes messages.
    bool deliver(const SharedFrame& f);

private:
    enum class State : std::uint8_t { Open, Closing, Closed };

    void waitRead();
    void onReadable(const boost::system::error_code& ec);
    void onRead(const boost::system::error_code& ec, std::size_t n);
    void afterInput();
    void process();
    bool frame(std::uint8_t b0, char* payload, std::size_t len);
    bool control(std::uint8_t op, std::string_view payload);
    bool data(std::uint8_t op, bool fin, bool rsv1, std::string_view payload);
    void onMessage(Opcode op, std::string_view payload, bool compressed);
    void send(Opcode op, std::string_view payload, bool mayCompress);
    void sendClose(std::uint16_t code, std::string_view reason);
    void fail(std::uint16_t code, std::string_view reason);
    void flush();
    void scheduleFlush();
    void lingerOrClose();
    void leaveRoom();
    void flushCounters();
    /// Adds a message to the capture record (when capture is on).
    void captureMessage(bool fromClient, Opcode op, std::string_view payload, std::uint64_t size,
                        bool compressed = false) {
        if (cap_)
            capture::wsMessage(*cap_, fromClient, static_cast<std::uint8_t>(op), payload, size, compressed);
    }
    void captureRoomEvent(std::string_view what);
    void captureClosed(bool clean);
    void emitMessage(WsMessageEvent::Direction dir, Opcode op, std::string_view payload, std::uint64_t size,
                     bool compressed, std::uint16_t closeCode = 0);

    io::SessionHost& worker_;
    Socket socket_;
    SSL* ssl_;
    std::unique_ptr<Accepted> accepted_;
    capture::WsCapturePtr cap_; // the session's capture record; null when capture is off
    const config::WebSocketAction& action_;
    std::shared_ptr<Hub> hub_;
    std::shared_ptr<Room> room_;
    Room::Slot* slot_ = nullptr;
    io::IoBuffer in_;        // pooled; held only while bytes wait in it
    std::string out_;        // queued frames; keeps its capacity (room members get many small writes)
    std::size_t outPos_ = 0; // bytes of out_ already written
    std::unique_ptr<Inflater> inflater_;
    std::string msg_;  // fragmented or inflated message being assembled
    std::string zbuf_; // compressed output scratch
    Utf8Validator utf8_;
    std::uint64_t id_ = 0;
    std::uint64_t wireBytes_ = 0; // payload bytes of the message in progress, as received
    std::uint64_t countIn_ = 0;   // data messages not yet added to the hub's counters
    std::uint64_t countOut_ = 0;
    Clock::time_point lastInput_;
    Clock::time_point writeSince_; // when the current blocked write began
    Clock::time_point lingerUntil_;
    std::uint16_t closeCode_ = 0;
    State state_ = State::Open;
    Opcode msgOp_ = Opcode::Text;
    bool inMessage_ = false;
    bool msgCompressed_ = false;
    bool reading_ = false;
    bool writing_ = false;
    bool flushPosted_ = false;
    bool pingSent_ = false;
    bool shutdownSent_ = false;
    bool paused_ = false; // not reading: too much output queued
};

/// Hands an upgraded HTTP/1.1 connection over to a new WebSocket session (see Connection).
void startSession(io::SessionHost& worker, io::Socket socket, SSL* ssl, std::unique_ptr<Accepted> accepted,
                  std::string_view handshake, std::string_view received);

} // namespace portico::ws
