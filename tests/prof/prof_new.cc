// prof_new: C++ call sites of known live bytes, for the heap profiler's test (prof.sh).
// site_new holds 64 MiB in `new char[1024]` blocks, site_obj 16 MiB in objects of 100 bytes
// (new of a struct), site_tmp deletes all it makes. Built -O2 without frame pointers.
#include <cstring>
#include <vector>

struct rec {
    char bytes[100];
};

static char *blocks[65536];
static rec *recs[167772];

__attribute__((noinline)) void site_new()
{
    for (auto &p : blocks) {
        p = new char[1024];
        std::memset(p, 1, 64);
    }
}

__attribute__((noinline)) void site_obj()
{
    for (auto &p : recs) {
        p = new rec;
        std::memset(p->bytes, 2, 64);
    }
}

__attribute__((noinline)) void site_tmp()
{
    for (int i = 0; i < 65536; i++) {
        auto *p = new std::vector<char>(1000, 3);
        delete p;
    }
}

int main()
{
    site_new();
    site_obj();
    site_tmp();
    return 0;
}
