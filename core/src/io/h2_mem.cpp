// The per-thread block cache behind nghttp2's allocations (h2_mem.h).
#include "io/h2_mem.h"

#include <nghttp2/nghttp2.h>

#include <sanitizer/asan_interface.h> // ASAN_(UN)POISON_MEMORY_REGION: no-ops without ASan

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace portico::io::h2mem {
namespace {

constexpr std::size_t kHeader = 16; // keeps the payload 16-byte aligned, as malloc's
constexpr std::size_t kGranule = 16;
constexpr std::size_t kClasses = kMaxCachedBytes / kGranule; // class c (1..kClasses): c × 16 bytes

// In front of every block. `cls` 0: a large block of `bytes` bytes, straight from malloc. A
// cached block's link sits here too, not in its payload, so that under ASan the whole payload of a
// free block is poisoned: nghttp2 touching a block it freed is reported as with malloc's. Under
// ASan the header and the bytes past `requested` are poisoned too while the block is handed out,
// so an overflow either side of what nghttp2 asked for is reported as well (open()/seal()).
struct alignas(16) Header {
    std::uint32_t cls;
    std::uint32_t requested; // bytes asked for (≤ capacity), while handed out (see seal())
    union {
        std::size_t bytes; // payload capacity, while allocated
        Header* next;      // the next free block of its class, while cached
    };
};
static_assert(sizeof(Header) == kHeader);

// Trivially destructible, so it stays usable while other thread_local destructors run (a session
// freed from one of them); `closed` sends later frees straight to free().
struct Lists {
    Header* head[kClasses + 1];
    std::size_t bytes[kClasses + 1];
    bool registered;
    bool closed;
};
thread_local Lists t_lists{};

std::atomic<std::uint64_t> g_system{0};

void drain(Lists& l);

// Frees the thread's lists when the thread exits (armed by the thread's first cached block: the
// write constructs it on that thread, which registers this destructor).
struct Drainer {
    bool armed = false;
    ~Drainer() {
        if (armed) drain(t_lists);
        t_lists.closed = true;
    }
};
thread_local Drainer t_drainer;

char* payloadOf(Header* h) { return reinterpret_cast<char*>(h) + kHeader; }

// The header of a block nghttp2 holds, made readable (ASan) for our own code.
Header* open(void* p) {
    auto* h = reinterpret_cast<Header*>(static_cast<char*>(p) - kHeader);
    ASAN_UNPOISON_MEMORY_REGION(h, kHeader);
    return h;
}

// Hands a block out for `requested` bytes: under ASan only those bytes stay addressable.
void* seal(Header* h, std::size_t requested) {
    // A large block past 4 GiB keeps 0: reallocate() then counts all of it as used.
    h->requested = requested <= UINT32_MAX ? static_cast<std::uint32_t>(requested) : 0;
    char* p = payloadOf(h);
    ASAN_UNPOISON_MEMORY_REGION(p, requested);
    ASAN_POISON_MEMORY_REGION(p + requested, h->bytes - requested);
    ASAN_POISON_MEMORY_REGION(h, kHeader);
    return p;
}

// A new block of `capacity` bytes handed out for `requested`; null when malloc fails or the size
// cannot be represented with the header (as malloc's null for an impossible size).
void* fromSystem(std::uint32_t cls, std::size_t capacity, std::size_t requested) {
    if (capacity > static_cast<std::size_t>(PTRDIFF_MAX) - kHeader) return nullptr;
    g_system.fetch_add(1, std::memory_order_relaxed);
    auto* h = static_cast<Header*>(std::malloc(kHeader + capacity));
    if (!h) return nullptr;
    h->cls = cls;
    h->bytes = capacity;
    return seal(h, requested);
}

// Gives a block back to malloc (all of it addressable again first).
void toSystem(Header* h) {
    ASAN_UNPOISON_MEMORY_REGION(payloadOf(h), h->cls ? h->cls * kGranule : h->bytes);
    std::free(h);
}

void drain(Lists& l) {
    for (std::size_t c = 1; c <= kClasses; ++c) {
        while (Header* h = l.head[c]) {
            l.head[c] = h->next;
            toSystem(h);
        }
        l.bytes[c] = 0;
    }
}

void* mallocCb(std::size_t size, void*) { return allocate(size); }
void freeCb(void* p, void*) { release(p); }
void* callocCb(std::size_t n, std::size_t size, void*) { return allocateZeroed(n, size); }
void* reallocCb(void* p, std::size_t size, void*) { return reallocate(p, size); }

nghttp2_mem g_mem{nullptr, mallocCb, freeCb, callocCb, reallocCb};

} // namespace

nghttp2_mem* allocator() { return &g_mem; }

std::uint64_t systemAllocations() { return g_system.load(std::memory_order_relaxed); }

std::size_t cachedBytes() {
    std::size_t sum = 0;
    for (std::size_t c = 1; c <= kClasses; ++c)
        sum += t_lists.bytes[c];
    return sum;
}

void* allocate(std::size_t bytes) {
    if (bytes > kMaxCachedBytes) return fromSystem(0, bytes, bytes);
    const auto cls = static_cast<std::uint32_t>(bytes == 0 ? 1 : (bytes + kGranule - 1) / kGranule);
    Lists& l = t_lists;
    if (Header* h = l.head[cls]) {
        l.head[cls] = h->next;
        l.bytes[cls] -= cls * kGranule;
        h->bytes = cls * kGranule;
        return seal(h, bytes);
    }
    return fromSystem(cls, cls * kGranule, bytes);
}

void release(void* p) {
    if (!p) return;
    Header* h = open(p);
    Lists& l = t_lists;
    const std::uint32_t cls = h->cls;
    if (cls == 0 || l.closed || l.bytes[cls] + cls * kGranule > kCacheBytesPerClass) {
        toSystem(h);
        return;
    }
    if (!l.registered) {
        l.registered = true;
        t_drainer.armed = true;
    }
    h->next = l.head[cls];
    l.head[cls] = h;
    l.bytes[cls] += cls * kGranule;
    ASAN_POISON_MEMORY_REGION(p, cls * kGranule);
}

void* allocateZeroed(std::size_t count, std::size_t size) {
    if (size != 0 && count > static_cast<std::size_t>(-1) / size) return nullptr; // overflow
    const std::size_t bytes = count * size;
    void* p = allocate(bytes);
    if (p) std::memset(p, 0, bytes);
    return p;
}

void* reallocate(void* p, std::size_t bytes) {
    if (!p) return allocate(bytes);
    if (bytes == 0) {
        release(p);
        return nullptr;
    }
    Header* h = open(p);
    if (bytes <= h->bytes) return seal(h, bytes); // fits as is
    // What the old block holds: its requested bytes (a large block: all of it).
    std::size_t used = h->requested;
    if (h->cls == 0 && used == 0) used = h->bytes;
    ASAN_POISON_MEMORY_REGION(h, kHeader);
    void* q = allocate(bytes);
    if (!q) return nullptr; // p stays valid, as realloc's
    std::memcpy(q, p, used < bytes ? used : bytes);
    release(p);
    return q;
}

} // namespace portico::io::h2mem
