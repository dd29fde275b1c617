// cxx_large: large buffers as C++ code makes them. THREADS threads (1 by default) each keep a
// window of SLOTS live buffers of 5 to 25 MiB (random sizes), each made by
// std::make_unique<char[]>(n), which zero-fills it, and replace a random one STEPS times;
// then (mode "grow") a std::vector<char> and a realloc'd buffer each grow to 64 MiB in steps,
// ten times. The allocator decides what a step costs: a fresh mapping is zero-filled by page
// faults, a reused range by the memset, a range given back and mapped again by both.
// Fixed work; compare.sh times the whole process and records its peak RSS.
// Validation: every buffer's first and last byte carry its slot, checked before it goes.
// Usage: cxx_large [STEPS [SLOTS [THREADS]]]   Prints: RESULT name=cxx_large ms=... steps=...
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

std::uint64_t next(std::uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

struct buffer {
    std::unique_ptr<char[]> data;
    std::size_t size = 0;
};

unsigned long window(unsigned steps, unsigned slots, std::uint64_t seed)
{
    std::uint64_t rng = seed;
    std::vector<buffer> live(slots);
    unsigned long bad = 0;
    for (unsigned i = 0; i < steps + slots; i++) {
        unsigned k = i < slots ? i : unsigned(next(rng) % slots);
        buffer &b = live[k];
        if (b.data && (b.data[0] != char(k) || b.data[b.size - 1] != char(k)))
            bad++;
        b.size = (5u << 20) + std::size_t(next(rng) % (20u << 20));
        b.data.reset(); // the old one goes first, as a replaced buffer does
        b.data = std::make_unique<char[]>(b.size);
        b.data[0] = b.data[b.size - 1] = char(k);
    }
    return bad;
}

unsigned long grow()
{
    unsigned long bad = 0;
    for (int round = 0; round < 10; round++) {
        std::vector<char> v;
        for (std::size_t n = 0; n < (64u << 20); n += 256u << 10)
            v.resize(n + (256u << 10), char(round));
        bad += v[v.size() / 2] != char(round);
        char *p = nullptr;
        for (std::size_t n = 1u << 20; n <= (64u << 20); n += 1u << 20) {
            char *q = static_cast<char *>(std::realloc(p, n));
            if (!q) {
                std::free(p);
                return bad + 1;
            }
            p = q;
            std::memset(p + n - (1u << 20), round, 1u << 20);
        }
        bad += p[(32u << 20) + 1] != char(round);
        std::free(p);
    }
    return bad;
}

}  // namespace

int main(int argc, char **argv)
{
    unsigned steps = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 2000;
    unsigned slots = argc > 2 ? unsigned(std::strtoul(argv[2], nullptr, 10)) : 20;
    unsigned threads = argc > 3 ? unsigned(std::strtoul(argv[3], nullptr, 10)) : 1;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<unsigned long> bad(threads + 1);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; t++)
        ts.emplace_back([&, t] { bad[t] = window(steps / threads, slots, 0x1234567ULL + t); });
    for (auto &t : ts)
        t.join();
    bad[threads] = grow();
    auto t1 = std::chrono::steady_clock::now();
    unsigned long total = 0;
    for (unsigned long b : bad)
        total += b;
    if (total) {
        std::fprintf(stderr, "cxx_large: %lu corrupted buffers\n", total);
        return 3;
    }
    std::printf("RESULT name=cxx_large ms=%.1f steps=%u slots=%u threads=%u\n",
                std::chrono::duration<double, std::milli>(t1 - t0).count(), steps, slots, threads);
    return 0;
}
