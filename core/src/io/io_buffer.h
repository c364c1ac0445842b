// A growable byte buffer with a read cursor, pooled per worker so idle connections hold none.
#pragma once

#include <sys/mman.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <utility>
#include <vector>

namespace portico::io {

/// Bytes in [begin, end) are unread data; [end, capacity) is free space for the next read.
class IoBuffer {
public:
    IoBuffer() = default;
    explicit IoBuffer(std::size_t capacity) { reserve(capacity); }
    IoBuffer(IoBuffer&& o) noexcept { swap(o); }
    IoBuffer& operator=(IoBuffer&& o) noexcept {
        swap(o);
        return *this;
    }
    IoBuffer(const IoBuffer&) = delete;
    IoBuffer& operator=(const IoBuffer&) = delete;
    ~IoBuffer() { release(); }

    void swap(IoBuffer& o) noexcept {
        std::swap(data_, o.data_);
        std::swap(cap_, o.cap_);
        std::swap(begin_, o.begin_);
        std::swap(end_, o.end_);
    }

    char* data() { return data_; }
    std::string_view unread() const { return {data_ + begin_, end_ - begin_}; }
    std::size_t size() const { return end_ - begin_; }
    bool empty() const { return begin_ == end_; }
    std::size_t capacity() const { return cap_; }
    bool allocated() const { return data_ != nullptr; }

    /// Free space at the end after moving unread bytes to the front if that helps.
    char* writable(std::size_t& room) {
        if (begin_ > 0 && (cap_ - end_) < cap_ / 4) compact();
        room = cap_ - end_;
        return data_ + end_;
    }
    /// Where the next socket read goes: the free space at the end, grown to at least
    /// max(capacity, 16 KiB) when less than 1 KiB is left (a read that small costs a syscall for
    /// little). `room` gets the free bytes (≥ 1 KiB). Throws std::bad_alloc like reserve().
    char* readRoom(std::size_t& room) {
        char* p = writable(room);
        if (room < 1024) {
            ensureRoom(cap_ > 16 * 1024 ? cap_ : 16 * 1024);
            p = writable(room);
        }
        return p;
    }
    void commit(std::size_t n) { end_ += n; }
    void consume(std::size_t n) {
        begin_ += n;
        if (begin_ == end_) begin_ = end_ = 0;
    }
    void clear() { begin_ = end_ = 0; }
    void append(std::string_view s) {
        if (s.empty()) return; // memcpy from a null view is undefined even for 0 bytes (UBSan)
        ensureRoom(s.size());
        std::memcpy(data_ + end_, s.data(), s.size());
        end_ += s.size();
    }
    void append(const char* s, std::size_t n) { append(std::string_view(s, n)); }
    /// Appends `n` in decimal ASCII (at most 20 digits, no sign, no padding).
    void appendDecimal(std::uint64_t n) {
        char digits[20];
        const auto r = std::to_chars(digits, digits + sizeof digits, n);
        append(digits, static_cast<std::size_t>(r.ptr - digits));
    }
    /// Makes sure `n` more bytes fit after the unread data (compacting, then growing).
    void ensureRoom(std::size_t n) {
        if (cap_ - end_ >= n) return;
        if (begin_ > 0) compact();
        if (cap_ - end_ >= n) return;
        std::size_t want = cap_ ? cap_ : 4096;
        while (want - end_ < n)
            want *= 2;
        reserve(want);
    }
    void compact() {
        if (begin_ == 0) return;
        std::memmove(data_, data_ + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
    }
    // Pages come straight from mmap, not malloc: a buffer freed after a burst of connections goes
    // back to the kernel at once instead of staying in the heap, so RSS follows the active
    // connections, not the peak (BufferPool below keeps a few for reuse).
    void reserve(std::size_t cap) {
        if (cap <= cap_) return;
        cap = (cap + kPage - 1) & ~(kPage - 1);
        void* p = data_ ? ::mremap(data_, cap_, cap, MREMAP_MAYMOVE)
                        : ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        data_ = static_cast<char*>(p);
        cap_ = cap;
    }
    void release() {
        if (data_) ::munmap(data_, cap_);
        data_ = nullptr;
        cap_ = begin_ = end_ = 0;
    }

private:
    static constexpr std::size_t kPage = 4096;
    char* data_ = nullptr;
    std::size_t cap_ = 0;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

/// Free list of default-sized buffers owned by one worker (not thread-safe).
class BufferPool {
public:
    explicit BufferPool(std::size_t bufferSize, std::size_t maxKept = 16)
        : size_(bufferSize), maxKept_(maxKept) {}
    IoBuffer acquire() {
        if (free_.empty()) return IoBuffer(size_);
        IoBuffer b = std::move(free_.back());
        free_.pop_back();
        return b;
    }
    /// Takes `b` back if it has the default size and the pool is not full; frees it otherwise.
    void release(IoBuffer& b) {
        if (!b.allocated()) return;
        b.clear();
        if (b.capacity() == size_ && free_.size() < maxKept_) {
            free_.push_back(std::move(b));
        }
        b.release();
    }

private:
    std::size_t size_;
    std::size_t maxKept_;
    std::vector<IoBuffer> free_;
};

} // namespace portico::io
