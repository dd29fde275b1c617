// cxx_larson: a server simulation in the manner of Larson and Krishnan's benchmark, written as
// C++ programs write it: messages are objects of a class hierarchy (new of a derived class,
// delete through the base with a virtual destructor, so g++'s sized delete passes the dynamic
// size) carrying std::string payloads. The live messages are kept in 2*THREADS slot sets; a
// worker claims a free set, replaces messages in random slots (checks and deletes the old one,
// news another of a random type and payload), releases the set and claims another, so most
// messages are deleted by a different thread than the one that made them; after a number of
// batches a worker hands on to a new thread (thread churn). Fixed work: THREADS lineages of
// BATCHES batches each; compare.sh times the whole process.
// Validation: every message checks its slot and payload before it is deleted (exit 3).
// Usage: cxx_larson [THREADS [BATCHES [SLOTS]]]   Prints: RESULT name=cxx_larson ops=... ms=...
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr unsigned kBatch = 256;
constexpr unsigned kBatchesPerThread = 64;

std::uint64_t next(std::uint64_t &s)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

struct message {
    std::uint32_t slot;
    std::string payload;
    message(std::uint32_t sl, std::size_t len) : slot(sl), payload(len, char('a' + sl % 26)) {}
    virtual ~message() = default;
    virtual bool ok(std::uint32_t sl) const
    {
        return slot == sl && (payload.empty() || payload[payload.size() / 2] == char('a' + sl % 26));
    }
};

template <std::size_t N> struct sized_message : message {
    unsigned char body[N];
    sized_message(std::uint32_t sl, std::size_t len) : message(sl, len) { body[0] = body[N - 1] = 0x5a; }
    bool ok(std::uint32_t sl) const override
    {
        return message::ok(sl) && body[0] == 0x5a && body[N - 1] == 0x5a;
    }
};

message *make(std::uint64_t &rng, std::uint32_t slot)
{
    std::size_t len = next(rng) % 4 == 0 ? next(rng) % 600 : next(rng) % 24; // mostly short (SSO)
    switch (next(rng) % 6) {
    case 0: return new message(slot, len);
    case 1: return new sized_message<8>(slot, len);
    case 2: return new sized_message<40>(slot, len);
    case 3: return new sized_message<104>(slot, len);
    case 4: return new sized_message<232>(slot, len);
    default: return new sized_message<480>(slot, len);
    }
}

struct slot_set {
    std::atomic<int> busy{0};
    std::vector<message *> msgs;
};

std::vector<std::unique_ptr<slot_set>> sets;
std::atomic<unsigned long> bad{0}, ops{0};

slot_set &claim(unsigned start)
{
    for (unsigned i = start;; i++) {
        slot_set &s = *sets[i % sets.size()];
        int expect = 0;
        if (s.busy.load(std::memory_order_relaxed) == 0 &&
            s.busy.compare_exchange_strong(expect, 1, std::memory_order_acquire))
            return s;
        if (i % sets.size() == 0)
            std::this_thread::yield();
    }
}

// One lineage: a worker runs kBatchesPerThread batches, then a new thread takes over.
void lineage(unsigned home, unsigned batches, std::uint64_t seed)
{
    std::uint64_t rng = seed;
    while (batches) {
        unsigned mine = batches < kBatchesPerThread ? batches : kBatchesPerThread;
        std::thread t([&, mine] {
            unsigned long b = 0;
            for (unsigned k = 0; k < mine; k++) {
                slot_set &s = claim(home + k);
                for (unsigned i = 0; i < kBatch; i++) {
                    std::uint32_t slot = std::uint32_t(next(rng) % s.msgs.size());
                    if (!s.msgs[slot]->ok(slot))
                        b++;
                    delete s.msgs[slot];
                    s.msgs[slot] = make(rng, slot);
                }
                s.busy.store(0, std::memory_order_release);
            }
            bad += b;
            ops += (unsigned long)mine * kBatch;
        });
        t.join();
        batches -= mine;
    }
}

}  // namespace

int main(int argc, char **argv)
{
    unsigned threads = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 2;
    unsigned batches = argc > 2 ? unsigned(std::strtoul(argv[2], nullptr, 10)) : 3000;
    std::size_t slots = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 4000;
    std::uint64_t rng = 0x1a450b0e;
    for (unsigned i = 0; i < 2 * threads; i++) {
        sets.emplace_back(new slot_set);
        for (std::size_t j = 0; j < slots; j++)
            sets.back()->msgs.push_back(make(rng, std::uint32_t(j)));
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> lines;
    for (unsigned t = 0; t < threads; t++)
        lines.emplace_back(lineage, 2 * t, batches, 0x5eed0000ULL + t);
    for (auto &l : lines)
        l.join();
    auto t1 = std::chrono::steady_clock::now();
    for (auto &s : sets)
        for (std::size_t j = 0; j < s->msgs.size(); j++) {
            if (!s->msgs[j]->ok(std::uint32_t(j)))
                bad++;
            delete s->msgs[j];
        }
    if (bad) {
        std::fprintf(stderr, "cxx_larson: %lu corrupted messages\n", bad.load());
        return 3;
    }
    std::printf("RESULT name=cxx_larson ops=%lu ms=%.1f threads=%u\n", ops.load(),
                std::chrono::duration<double, std::milli>(t1 - t0).count(), threads);
    return 0;
}
