// cxx_delete: the cost of C++ delete + new of a 32-byte struct, the shape g++ gives every
// `delete` of a complete type. Built twice (bench/meson.build): with g++'s default, sized
// deallocation (operator delete(void*, size_t)), and with -fno-sized-deallocation (plain
// operator delete(void*)), so one allocator's two figures compare sized and plain free.
// A ring of live objects is replaced in order, as a container of nodes churns.
// Usage: cxx_delete [ITERATIONS]   Prints: RESULT name=cxx_delete ns_per_op=... cycles_per_op=...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <x86intrin.h>

namespace {

struct node {
    node *next;
    std::uint64_t key, value, pad;
};
static_assert(sizeof(node) == 32, "a 32-byte struct");

constexpr unsigned kRing = 64;

}  // namespace

int main(int argc, char **argv)
{
    unsigned long iters = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 50000000UL;
    node *ring[kRing];
    for (unsigned i = 0; i < kRing; i++)
        ring[i] = new node{nullptr, i, i, 0};
    std::uint64_t sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::uint64_t c0 = __rdtsc();
    for (unsigned long i = 0; i < iters; i++) {
        node *&slot = ring[i % kRing];
        sum += slot->key;
        delete slot;
        slot = new node{nullptr, i, i, 0};
    }
    std::uint64_t c1 = __rdtsc();
    auto t1 = std::chrono::steady_clock::now();
    for (unsigned i = 0; i < kRing; i++)
        delete ring[i];
    double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    std::printf("RESULT name=cxx_delete ns_per_op=%.3f cycles_per_op=%.2f iters=%lu sum=%llu\n",
                ns / (double)iters, (double)(c1 - c0) / (double)iters, iters,
                (unsigned long long)sum);
    return 0;
}
