// cxx_new: checks every C++17 operator new/delete form on top of the (preloaded) malloc: plain,
// array, nothrow, sized delete, aligned new/delete with std::align_val_t 16..4096 (plain, array,
// nothrow, sized+aligned delete). Checks alignment, that objects are usable and distinct, that an
// impossible size throws std::bad_alloc (and calls the new_handler first) while nothrow returns
// nullptr, runs a std::vector / std::string / std::map / std::unordered_map workload with
// verified results, and (under slubmalloc) checks that a sized delete larger than its block is
// reported, in every sized form. Built with -O0 -fno-allocation-dce so no allocation is elided.
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

static long failures = 0;

static void check(bool ok, const char *what, long a = 0, long b = 0)
{
    if (ok)
        return;
    if (++failures <= 50)
        std::fprintf(stderr, "FAIL: %s (%ld, %ld)\n", what, a, b);
}

static bool aligned_to(const void *p, std::size_t a)
{
    return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}

// Opaque sink so the optimiser cannot reason about the pointers.
static void *volatile sink;

struct Obj {
    long id;
    char buf[40];
    Obj() : id(7) { std::memset(buf, 'o', sizeof buf); }
};

struct alignas(64) Wide {
    unsigned char b[192];
};

struct alignas(4096) PageObj {
    unsigned char b[4096];
};

static void test_plain()
{
    static const std::size_t sizes[] = { 0, 1, 8, 15, 16, 100, 1000, 4096, 65536, 100000, 1 << 20, 8 << 20 };
    for (std::size_t n : sizes) {
        void *p = ::operator new(n);
        sink = p;
        check(p != nullptr, "operator new returned null", long(n));
        check(aligned_to(p, 16), "operator new(n) not 16-byte aligned", long(n));
        std::memset(p, 0xab, n);
        void *q = ::operator new[](n);
        sink = q;
        check(q != nullptr && q != p, "operator new[] bad pointer", long(n));
        check(aligned_to(q, 16), "operator new[](n) not 16-byte aligned", long(n));
        std::memset(q, 0xcd, n);
        if (n)
            check(static_cast<unsigned char *>(p)[n - 1] == 0xab, "operator new block clobbered", long(n));
        ::operator delete(p);
        ::operator delete[](q);

        p = ::operator new(n, std::nothrow);
        check(p != nullptr, "nothrow new returned null", long(n));
        std::memset(p, 1, n);
        ::operator delete(p, std::nothrow);
        q = ::operator new[](n, std::nothrow);
        check(q != nullptr, "nothrow new[] returned null", long(n));
        std::memset(q, 2, n);
        ::operator delete[](q, std::nothrow);

        // sized delete
        p = ::operator new(n);
        std::memset(p, 3, n);
        ::operator delete(p, n);
        q = ::operator new[](n);
        std::memset(q, 4, n);
        ::operator delete[](q, n);
    }
    // new-expressions on class types, scalar and array
    std::vector<Obj *> v;
    for (int i = 0; i < 1000; i++) {
        Obj *o = new Obj;
        o->id = i;
        v.push_back(o);
    }
    Obj *arr = new Obj[333];
    for (int i = 0; i < 333; i++)
        arr[i].id = -i;
    for (int i = 0; i < 1000; i++) {
        check(v[i]->id == i && v[i]->buf[39] == 'o', "Obj contents", i);
        delete v[i];
    }
    for (int i = 0; i < 333; i++)
        check(arr[i].id == -i, "Obj[] contents", i);
    delete[] arr;
}

static void test_aligned()
{
    static const std::size_t sizes[] = { 1, 16, 17, 100, 4095, 4096, 5000, 65536, 300000 };
    for (std::size_t a = 16; a <= 4096; a <<= 1) {
        std::align_val_t al{ a };
        for (std::size_t n : sizes) {
            void *ps[4];
            ps[0] = ::operator new(n, al);
            ps[1] = ::operator new[](n, al);
            ps[2] = ::operator new(n, al, std::nothrow);
            ps[3] = ::operator new[](n, al, std::nothrow);
            for (int k = 0; k < 4; k++) {
                sink = ps[k];
                check(ps[k] != nullptr, "aligned new returned null", long(a), long(n));
                check(aligned_to(ps[k], a), "aligned new misaligned", long(a), long(n));
                if (ps[k])
                    std::memset(ps[k], 0x10 + k, n);
                for (int j = 0; j < k; j++)
                    check(ps[j] != ps[k], "aligned new returned the same block twice", long(a), long(n));
            }
            for (int k = 0; k < 4; k++)
                check(static_cast<unsigned char *>(ps[k])[n - 1] == 0x10 + k, "aligned block clobbered",
                      long(a), long(n));
            ::operator delete(ps[0], al);
            ::operator delete[](ps[1], al);
            ::operator delete(ps[2], al, std::nothrow);
            ::operator delete[](ps[3], al, std::nothrow);

            // sized + aligned delete
            void *p = ::operator new(n, al);
            std::memset(p, 5, n);
            ::operator delete(p, n, al);
            p = ::operator new[](n, al);
            std::memset(p, 6, n);
            ::operator delete[](p, n, al);
        }
    }
    // over-aligned types through new-expressions
    std::vector<Wide *> w;
    for (int i = 0; i < 500; i++) {
        Wide *x = new Wide;
        check(aligned_to(x, 64), "new Wide misaligned", i);
        std::memset(x->b, i & 0xff, sizeof x->b);
        w.push_back(x);
    }
    for (int i = 0; i < 500; i++) {
        check(w[i]->b[191] == (i & 0xff), "Wide contents", i);
        delete w[i];
    }
    PageObj *pa = new PageObj[5];
    check(aligned_to(pa, 4096), "new PageObj[] misaligned");
    std::memset(pa, 9, sizeof(PageObj) * 5);
    delete[] pa;
    auto up = std::make_unique<PageObj>();
    check(aligned_to(up.get(), 4096), "make_unique<PageObj> misaligned");
}

static int handler_calls = 0;
static void counting_handler()
{
    handler_calls++;
    std::set_new_handler(nullptr); // next failure throws
}

static void test_failure()
{
    volatile std::size_t huge = SIZE_MAX;
    volatile std::size_t big = std::size_t(1) << 62;
    bool threw = false;
    try {
        void *p = ::operator new(huge);
        sink = p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    check(threw, "operator new(SIZE_MAX) did not throw std::bad_alloc");
    threw = false;
    try {
        void *p = ::operator new[](big);
        sink = p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    check(threw, "operator new[](2^62) did not throw std::bad_alloc");
    threw = false;
    try {
        void *p = ::operator new(big, std::align_val_t{ 64 });
        sink = p;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    check(threw, "aligned operator new(2^62) did not throw std::bad_alloc");
    threw = false;
    try {
        std::vector<char> v;
        v.reserve(std::size_t(1) << 62);
    } catch (const std::bad_alloc &) {
        threw = true;
    } catch (const std::length_error &) {
        threw = true;
    }
    check(threw, "vector::reserve(2^62) did not throw");

    void *p = ::operator new(huge, std::nothrow);
    check(p == nullptr, "nothrow new(SIZE_MAX) did not return nullptr");
    p = ::operator new[](big, std::nothrow);
    check(p == nullptr, "nothrow new[](2^62) did not return nullptr");
    p = ::operator new(big, std::align_val_t{ 256 }, std::nothrow);
    check(p == nullptr, "aligned nothrow new(2^62) did not return nullptr");
    p = ::operator new[](big, std::align_val_t{ 4096 }, std::nothrow);
    check(p == nullptr, "aligned nothrow new[](2^62) did not return nullptr");

    // the new_handler must be consulted before bad_alloc is thrown
    handler_calls = 0;
    std::set_new_handler(counting_handler);
    threw = false;
    try {
        void *q = ::operator new(big);
        sink = q;
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    std::set_new_handler(nullptr);
    check(threw, "operator new(2^62) with new_handler did not throw");
    check(handler_calls == 1, "new_handler call count", handler_calls, 1);

    // memory still works after failures
    void *q = ::operator new(1000);
    std::memset(q, 1, 1000);
    ::operator delete(q);
}

static void test_containers()
{
    // vector growth: push_back sequence and checksum
    std::vector<std::uint64_t> v;
    std::uint64_t sum = 0, expect = 0;
    for (std::uint64_t i = 0; i < 2000000; i++) {
        v.push_back(i * 3);
        expect += i * 3;
    }
    for (std::uint64_t x : v)
        sum += x;
    check(sum == expect, "vector sum");
    v.clear();
    v.shrink_to_fit();

    // strings: build, concatenate, compare
    std::vector<std::string> strs;
    for (int i = 0; i < 100000; i++)
        strs.push_back("item-" + std::to_string(i) + std::string(std::size_t(i % 97), 'x'));
    std::size_t total = 0;
    for (int i = 0; i < 100000; i++) {
        const std::string &s = strs[i];
        check(s.compare(0, 5, "item-") == 0 && s.size() == 5 + std::to_string(i).size() + std::size_t(i % 97),
              "string contents", i);
        total += s.size();
    }
    std::string big;
    for (int i = 0; i < 100000; i += 7)
        big += strs[i];
    check(big.size() > 100000, "big string size", long(big.size()));

    // map and unordered_map: insert, lookup, erase half
    std::map<std::string, int> m;
    std::unordered_map<int, std::string> um;
    for (int i = 0; i < 100000; i++) {
        m[strs[i]] = i;
        um.emplace(i, strs[i]);
    }
    for (int i = 0; i < 100000; i += 2) {
        m.erase(strs[i]);
        um.erase(i);
    }
    check(m.size() == 50000 && um.size() == 50000, "container sizes", long(m.size()), long(um.size()));
    long bad = 0;
    for (int i = 1; i < 100000; i += 2) {
        auto it = m.find(strs[i]);
        if (it == m.end() || it->second != i || um.at(i) != strs[i])
            bad++;
    }
    check(bad == 0, "map lookups failed", bad);
    check(total > 0, "total");

    // shared_ptr / unique_ptr churn
    std::vector<std::shared_ptr<Obj>> sp;
    for (int i = 0; i < 50000; i++) {
        sp.push_back(std::make_shared<Obj>());
        sp.back()->id = i;
    }
    for (int i = 0; i < 50000; i++)
        check(sp[i]->id == i, "shared_ptr contents", i);
}

// A sized delete with a size larger than the block is reported and aborts (slubmalloc only:
// glibc does not check; run.sh sets SLUBMALLOC_EXPECT=1). Each form runs in a child whose
// stderr goes to a file the parent reads.
static void wrong_size_case(const char *name, void (*bad)())
{
    char path[] = "/tmp/cxx_new.XXXXXX";
    int fd = mkstemp(path);
    check(fd >= 0, "mkstemp");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        bad();
        _exit(0); // not caught
    }
    int st = 0;
    waitpid(pid, &st, 0);
    char msg[512] = {0};
    ssize_t n = pread(fd, msg, sizeof msg - 1, 0);
    close(fd);
    unlink(path);
    bool caught = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && n > 0 &&
                  std::strstr(msg, "slubmalloc: sized free of 0x") != nullptr;
    if (!caught)
        std::fprintf(stderr, "FAIL: %s: not reported (status 0x%x, stderr \"%s\")\n", name, st, msg);
    check(caught, "wrong-size sized delete not reported");
}

static void test_wrong_size()
{
    const char *e = std::getenv("SLUBMALLOC_EXPECT");
    if (!e || std::strcmp(e, "1") != 0)
        return;
    wrong_size_case("delete(p, n)", [] { ::operator delete(::operator new(32), 4096); });
    wrong_size_case("delete[](p, n)", [] { ::operator delete[](::operator new[](100), 1000); });
    wrong_size_case("delete(p, n, align)", [] {
        std::align_val_t al{ 64 };
        ::operator delete(::operator new(64, al), 65536, al);
    });
    wrong_size_case("delete[](p, n, align)", [] {
        std::align_val_t al{ 4096 };
        ::operator delete[](::operator new[](8192, al), 100000, al);
    });
    wrong_size_case("delete(large, n)", [] { ::operator delete(::operator new(1 << 20), 4 << 20); });
    // and the right sizes, every sized form, go through
    for (std::size_t n : { 1, 16, 17, 100, 4096, 70000, 200000 }) {
        ::operator delete(::operator new(n), n);
        ::operator delete[](::operator new[](n), n);
        std::align_val_t al{ 256 };
        ::operator delete(::operator new(n, al), n, al);
        ::operator delete[](::operator new[](n, al), n, al);
    }
}

int main()
{
    test_plain();
    test_aligned();
    test_failure();
    test_containers();
    test_wrong_size();
    if (failures) {
        std::fprintf(stderr, "cxx_new: %ld check(s) FAILED\n", failures);
        return 1;
    }
    std::printf("cxx_new: all checks passed\n");
    return 0;
}
