// replay() that its caller can cancel from another thread: what engine::resend (engine/jobs.h) runs.
#pragma once

#include <portico/capture/replay.h>

namespace portico::capture {

/// replay(original, options), ended early once `cancelFd` is readable (an eventfd or a pipe's read
/// end that the canceller writes to and nobody reads; -1 for none). The connect, the TLS handshake,
/// the send and the wait for the response each poll it next to the socket, so a cancel is seen at
/// once: the socket is closed and `error` is "cancelled" (also when it was readable before the
/// start: then nothing is resolved or sent). Name resolution (getaddrinfo, /etc/hosts for a dev
/// target) is not interrupted. A response read in full before the cancel was seen is returned as is.
ReplayResult replay(const Exchange& original, const ReplayOptions& options, int cancelFd);

} // namespace portico::capture
