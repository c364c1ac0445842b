// A one-slot allocator for Asio handlers of which at most one is pending at a time (a listener's
// accept, the worker's end-of-turn handler): Asio allocates their operation in the slot instead
// of its per-thread recycling cache or the heap.
//
// Why: Asio 1.74 caches one freed operation per thread and hands that block to the next operation
// of any kind. A listener's accept operation is large (216 bytes: the acceptor's polymorphic
// executor), and it used to be recycled as the read or wait operation an idle keep-alive
// connection keeps pending: every idle connection held 224 bytes of heap for it. Memory per idle
// connection is a benchmark target (docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

namespace portico::io {

/// Storage for one operation (bytes); an operation that does not fit goes to the heap.
struct HandlerSlot {
    alignas(std::max_align_t) unsigned char bytes[256];
};

template <class T> struct SlotAllocator {
    using value_type = T;
    HandlerSlot* slot;
    explicit SlotAllocator(HandlerSlot* s) : slot(s) {}
    template <class U> SlotAllocator(const SlotAllocator<U>& o) : slot(o.slot) {}
    T* allocate(std::size_t n) {
        static_assert(alignof(T) <= alignof(std::max_align_t));
        if (n * sizeof(T) <= sizeof slot->bytes) return reinterpret_cast<T*>(slot->bytes);
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) {
        if (reinterpret_cast<unsigned char*>(p) != slot->bytes) std::allocator<T>().deallocate(p, n);
    }
    template <class U> bool operator==(const SlotAllocator<U>& o) const { return slot == o.slot; }
    template <class U> bool operator!=(const SlotAllocator<U>& o) const { return slot != o.slot; }
};

/// `handler` with `slot` as its associated allocator. The caller guarantees that at most one
/// operation using `slot` is pending at any time.
template <class Handler> struct InSlot {
    Handler handler;
    HandlerSlot* slot;
    using allocator_type = SlotAllocator<void>;
    allocator_type get_allocator() const noexcept { return allocator_type(slot); }
    template <class... Args> void operator()(Args&&... args) { handler(std::forward<Args>(args)...); }
};
template <class Handler> InSlot<std::decay_t<Handler>> inSlot(HandlerSlot& slot, Handler&& h) {
    return {std::forward<Handler>(h), &slot};
}

} // namespace portico::io
