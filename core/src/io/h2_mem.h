// A per-thread block cache for nghttp2's own allocations (its `nghttp2_mem` hook).
//
// Why: nghttp2 allocates and frees about five small blocks per HTTP/2 request (the stream, the
// outbound HEADERS and DATA items, the copy of the response's header list, a header buffer: 55,
// 152, 152, 224 and 310 bytes with nghttp2 1.52 for a short `respond` answer; the header list of a
// static file's answer, with ETag, Last-Modified and Accept-Ranges, is 612 bytes). With many streams in
// flight (h2load -c50 -m16: 800) glibc's per-thread cache (7 blocks per size) overflows and most of those
// calls take malloc's slower paths (`_int_malloc`, `_int_free`: about 3 % of the server's CPU in a profile of
// the h2tls benchmark). Here a freed block goes to a free list of its size class on the freeing
// thread and the next allocation of that class pops it: no lock, no search.
//
// Shape: every block carries a 16-byte header (its size class; a cached block's link) before
// the address nghttp2 sees, so alignment stays 16 as malloc's. Classes are multiples of 16 bytes
// up to kMaxCachedBytes; larger blocks, and blocks freed while their class's list already holds
// kCacheBytesPerClass bytes, go straight to malloc/free. A thread's lists hold at most
// kMaxCachedBytes / 16 × kCacheBytesPerClass bytes (4 MiB; in practice 64 KiB for each class nghttp2
// uses, about five of them) and are freed when the thread exits. A block may be freed on another thread
// than the one that allocated it (a session destroyed by ~Worker on the engine's thread): it
// joins that thread's lists. Sessions stay single-threaded (nghttp2's rule); the allocator is
// thread-safe by sharing nothing but a relaxed counter. Under ASan a cached block's payload is
// poisoned, so a use after free inside nghttp2 is still reported.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>

namespace portico::io::h2mem {

/// Largest block (bytes requested) served from the free lists; larger ones are plain malloc.
inline constexpr std::size_t kMaxCachedBytes = 1024;
/// Bytes of free blocks one size class keeps per thread before frees go back to malloc.
inline constexpr std::size_t kCacheBytesPerClass = 64 * 1024;

/// The allocator to pass to nghttp2_session_{server,client}_new3 (a static object; never null).
nghttp2_mem* allocator();

/// Blocks taken from malloc so far by every thread (a cache miss or a large block), for tests and
/// diagnostics. Monotonic.
std::uint64_t systemAllocations();

/// Bytes of free blocks this thread's lists hold now.
std::size_t cachedBytes();

// The nghttp2_mem functions, callable directly (tests). Semantics of malloc/free/calloc/realloc:
// allocate(0) returns a valid unique block; release(nullptr) does nothing; reallocate(nullptr, n)
// allocates; reallocate(p, 0) frees and returns nullptr; null is returned when malloc fails.
void* allocate(std::size_t bytes);
void release(void* p);
void* allocateZeroed(std::size_t count, std::size_t size);
void* reallocate(void* p, std::size_t bytes);

} // namespace portico::io::h2mem
