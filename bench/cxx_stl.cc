// cxx_stl: a program of STL containers, as C++ code uses them: rounds of a word index
// (std::map<std::string, std::vector<int>>), a hash table of records (std::unordered_map with
// std::string values, rehashing as it grows), std::string building and splitting, std::vector
// growth by push_back of structs, and std::list splices; each round erases part of what it
// built and keeps the rest until the next. Built by g++ with its defaults (sized delete on).
// Fixed work; compare.sh times the whole process. Prints a checksum of the results, identical
// under every allocator.
// Usage: cxx_stl [ROUNDS]   Prints: the checksum line, then RESULT name=cxx_stl rounds=...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::uint64_t state = 0x2545F4914F6CDD1DULL;
std::uint64_t next()
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

std::string word()
{
    static const char letters[] = "etaoinshrdlucmfwypvbgkjqxz";
    std::string w;
    unsigned len = 3 + unsigned(next() % 12);
    for (unsigned i = 0; i < len; i++)
        w += letters[next() % 26];
    return w;
}

struct record {
    std::uint64_t id;
    std::string name;
    std::vector<std::uint32_t> tags;
};

struct point {
    double x, y, z;
    std::uint32_t id;
};

}  // namespace

int main(int argc, char **argv)
{
    unsigned rounds = argc > 1 ? unsigned(std::strtoul(argv[1], nullptr, 10)) : 40;
    std::uint64_t sum = 0;
    std::map<std::string, std::vector<int>> index;
    std::unordered_map<std::uint64_t, record> table;
    std::list<std::string> queue;
    for (unsigned r = 0; r < rounds; r++) {
        // a word index: words -> the positions they occur at
        for (int pos = 0; pos < 20000; pos++)
            index[word()].push_back(pos);
        for (auto it = index.begin(); it != index.end();)
            it = (next() % 3 == 0) ? index.erase(it) : std::next(it);
        // a table of records, grown and thinned
        for (int i = 0; i < 20000; i++) {
            std::uint64_t id = next() % 60000;
            record &rec = table[id];
            rec.id = id;
            rec.name = word() + "-" + std::to_string(id);
            rec.tags.assign(next() % 8, std::uint32_t(id));
        }
        for (auto it = table.begin(); it != table.end();)
            it = (it->first % 4 == r % 4) ? table.erase(it) : std::next(it);
        // strings: a document built, then split on spaces
        std::string doc;
        for (int i = 0; i < 20000; i++) {
            doc += word();
            doc += ' ';
        }
        std::vector<std::string> parts;
        for (std::size_t at = 0, sp; (sp = doc.find(' ', at)) != std::string::npos; at = sp + 1)
            parts.emplace_back(doc, at, sp - at);
        std::sort(parts.begin(), parts.end());
        sum += parts.size() + parts.front().size() + parts.back().size();
        // vector growth of structs
        std::vector<point> pts;
        for (std::uint32_t i = 0; i < 100000; i++)
            pts.push_back(point{double(i), double(i) * 0.5, double(next() % 1000), i});
        for (const point &p : pts)
            sum += std::uint64_t(p.z) + p.id;
        // a list: push, splice, pop
        std::list<std::string> batch;
        for (int i = 0; i < 5000; i++)
            batch.push_back(word());
        queue.splice(queue.end(), batch);
        while (queue.size() > 8000)
            queue.pop_front();
        for (const auto &kv : index)
            sum += kv.first.size() * kv.second.size();
        for (const auto &kv : table)
            sum += kv.second.name.size() + kv.second.tags.size();
    }
    sum += queue.size() + index.size() + table.size();
    std::printf("cxx_stl: %u rounds, checksum %llu\n", rounds, (unsigned long long)sum);
    std::printf("RESULT name=cxx_stl rounds=%u\n", rounds);
    return 0;
}
