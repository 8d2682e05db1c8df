/* peer_absl.cpp: the absl peer of workload `large` (prog_large.c):
 * absl::flat_hash_map from Debian's libabsl-dev, behind extern "C" functions
 * that each run a whole loop (signatures match large_ops_t in prog_large.c).
 *
 * Keys: uint32_t, uint64_t, and std::string_view of length 16 pointing into
 * prog_large.c's string array (absl's idiomatic non-owning string key; it
 * hashes and compares the 16 bytes).  Hash and equality are absl's defaults
 * (absl::Hash, std::equal_to).  Max load 7/8, no reserve.
 *
 * Memory is counted exactly: the map's allocator is std::allocator wrapped
 * to add and subtract the bytes of each (rare: once per growth) allocation.
 * Out of memory (std::bad_alloc) makes insert return -1. */
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>

#include <absl/container/flat_hash_map.h>

namespace {

std::size_t live_bytes;   // bytes the one live absl map holds

template <class T>
struct CountingAlloc {
    using value_type = T;
    CountingAlloc() noexcept = default;
    template <class U>
    CountingAlloc(const CountingAlloc<U> &) noexcept {}
    T *allocate(std::size_t n)
    {
        T *p = std::allocator<T>().allocate(n);
        live_bytes += n * sizeof(T);
        return p;
    }
    void deallocate(T *p, std::size_t n) noexcept
    {
        live_bytes -= n * sizeof(T);
        std::allocator<T>().deallocate(p, n);
    }
    template <class U>
    bool operator==(const CountingAlloc<U> &) const noexcept { return true; }
    template <class U>
    bool operator!=(const CountingAlloc<U> &) const noexcept { return false; }
};

template <class K>
using Map = absl::flat_hash_map<K, uint32_t, absl::Hash<K>, std::equal_to<K>,
                                CountingAlloc<std::pair<const K, uint32_t>>>;

// The key a caller's array element stands for.
inline uint32_t key_of(const uint32_t *k, std::size_t i) { return k[i]; }
inline uint64_t key_of(const uint64_t *k, std::size_t i) { return k[i]; }
inline std::string_view key_of(const char *const *k, std::size_t i)
{
    return std::string_view(k[i], 16);
}

template <class K, class A>
void *create()
{
    return new (std::nothrow) Map<K>();
}

template <class K, class A>
int insert(void *t, const void *keys, std::size_t n)
{
    Map<K> &m = *static_cast<Map<K> *>(t);
    const A *k = static_cast<const A *>(keys);
    try {
        for (std::size_t i = 0; i < n; ++i)
            m[key_of(k, i)] = static_cast<uint32_t>(i);
    } catch (const std::bad_alloc &) {
        return -1;
    }
    return 0;
}

template <class K, class A>
std::size_t get(void *t, const void *keys, std::size_t n, uint64_t *sum)
{
    const Map<K> &m = *static_cast<const Map<K> *>(t);
    const A *k = static_cast<const A *>(keys);
    std::size_t found = 0;
    uint64_t s = 0;
    for (std::size_t i = 0; i < n; ++i) {
        auto it = m.find(key_of(k, i));
        if (it != m.end()) {
            found++;
            s += it->second;
        }
    }
    *sum = s;
    return found;
}

template <class K>
uint64_t iterate(void *t)
{
    const Map<K> &m = *static_cast<const Map<K> *>(t);
    uint64_t s = 0;
    for (const auto &kv : m)
        s += kv.second;
    return s;
}

template <class K, class A>
std::size_t erase(void *t, const void *keys, std::size_t n)
{
    Map<K> &m = *static_cast<Map<K> *>(t);
    const A *k = static_cast<const A *>(keys);
    std::size_t erased = 0;
    for (std::size_t i = 0; i < n; ++i)
        erased += m.erase(key_of(k, i));
    return erased;
}

template <class K>
void stats(void *t, std::size_t *bytes, std::size_t *size, std::size_t *buckets)
{
    const Map<K> &m = *static_cast<const Map<K> *>(t);
    *bytes = live_bytes;
    *size = m.size();
    *buckets = m.capacity();
}

template <class K>
void destroy(void *t)
{
    delete static_cast<Map<K> *>(t);
}

}  // namespace

#define LARGE_ABSL_IMPL(P, K, A)                                                      \
    extern "C" void *P##_create(const void *) { return create<K, A>(); }              \
    extern "C" int P##_insert(void *t, const void *keys, std::size_t n)               \
    {                                                                                 \
        return insert<K, A>(t, keys, n);                                              \
    }                                                                                 \
    extern "C" std::size_t P##_get(void *t, const void *keys, std::size_t n, uint64_t *sum) \
    {                                                                                 \
        return get<K, A>(t, keys, n, sum);                                            \
    }                                                                                 \
    extern "C" uint64_t P##_iterate(void *t) { return iterate<K>(t); }                \
    extern "C" std::size_t P##_erase(void *t, const void *keys, std::size_t n)        \
    {                                                                                 \
        return erase<K, A>(t, keys, n);                                               \
    }                                                                                 \
    extern "C" void P##_stats(void *t, std::size_t *bytes, std::size_t *size,         \
                              std::size_t *buckets)                                   \
    {                                                                                 \
        stats<K>(t, bytes, size, buckets);                                            \
    }                                                                                 \
    extern "C" void P##_destroy(void *t) { destroy<K>(t); }

LARGE_ABSL_IMPL(large_absl_u32, uint32_t, uint32_t)
LARGE_ABSL_IMPL(large_absl_u64, uint64_t, uint64_t)
LARGE_ABSL_IMPL(large_absl_str, std::string_view, const char *)
