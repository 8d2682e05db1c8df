/* flat.cpp: the C++ peers of the table benchmarks (programs peers and
 * large): boost::unordered_flat_map (Debian libboost1.81-dev) and
 * absl::flat_hash_map (libabsl-dev), as adapter.h adapters.  Both have the
 * same interface, so one adapter template serves both.
 *
 * Each map comes twice: with its default hash and equality for the key
 * (boost::hash with boost's post-mixing for integers, absl::Hash), and, for
 * the peers workload, with the hash and equality every table gets there
 * (suite_hash.h).  With their own hash, string keys are std::string_view of
 * the 16 characters (their idiomatic non-owning key); in the peers workload
 * they are const char *, hashed up to the NUL and compared with strcmp, as
 * the suite's shims give them to every table, C and C++ alike.
 * A put is insert_or_assign: constructs the value once for a new key and
 * assigns it for a present one (the "replace" of the peers workload).
 *
 * Allocation goes through peers_malloc/peers_free (malloc and free, counted
 * in the untimed passes), so memory and allocation counts are measured the
 * same way as for the C tables; the bytes asked for are also kept (stats),
 * exact while one map is live, as in program large.  std::bad_alloc is the
 * OOM return -1. */
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string_view>
#include <utility>

#include <absl/container/flat_hash_map.h>
#include <boost/unordered/unordered_flat_map.hpp>

#include "adapter.h"
#include "suite_hash.h"

namespace {

std::size_t asked_bytes;   // bytes the live maps asked for and hold

template <class T>
struct PeersAlloc {
    using value_type = T;
    static_assert(alignof(T) <= alignof(std::max_align_t), "malloc alignment suffices");
    PeersAlloc() noexcept = default;
    template <class U>
    PeersAlloc(const PeersAlloc<U> &) noexcept {}
    T *allocate(std::size_t n)
    {
        void *p = n > SIZE_MAX / sizeof(T) ? nullptr : peers_malloc(n * sizeof(T));
        if (!p)
            throw std::bad_alloc();
        asked_bytes += n * sizeof(T);
        return static_cast<T *>(p);
    }
    void deallocate(T *p, std::size_t n) noexcept
    {
        asked_bytes -= n * sizeof(T);
        peers_free(p);
    }
    template <class U>
    bool operator==(const PeersAlloc<U> &) const noexcept { return true; }
    template <class U>
    bool operator!=(const PeersAlloc<U> &) const noexcept { return false; }
};

// A blueprint's raw key as a map's key type MK.
template <class MK, class RK>
inline MK key_as(RK k) { return k; }
template <>
inline std::string_view key_as<std::string_view, const char *>(const char *k)
{
    return std::string_view(k, 16);
}

template <class K, class V>
using Boost = boost::unordered_flat_map<K, V, boost::hash<K>, std::equal_to<K>,
                                        PeersAlloc<std::pair<const K, V>>>;
template <class K, class V>
using Absl = absl::flat_hash_map<K, V, absl::Hash<K>, std::equal_to<K>,
                                 PeersAlloc<std::pair<const K, V>>>;

// The peers workload's hash and equality.  boost is told the hash
// avalanches, as the suite tells it, so it adds no mixing of its own.
struct SuiteHash {
    using is_avalanching = void;
    std::size_t operator()(uint32_t k) const { return peers_fmix64(k); }
    std::size_t operator()(uint64_t k) const { return peers_fmix64(k); }
    std::size_t operator()(const char *k) const { return peers_fnv1a_str(k); }
};
struct SuiteEq {
    template <class K>
    bool operator()(K a, K b) const { return a == b; }
    bool operator()(const char *a, const char *b) const { return std::strcmp(a, b) == 0; }
};
template <class K, class V>
using BoostS = boost::unordered_flat_map<K, V, SuiteHash, SuiteEq,
                                         PeersAlloc<std::pair<const K, V>>>;
template <class K, class V>
using AbslS = absl::flat_hash_map<K, V, SuiteHash, SuiteEq,
                                  PeersAlloc<std::pair<const K, V>>>;

// The handle: raw storage, so the generated loops can keep it on the stack
// or in malloc'ed memory and construct it with init, as for the C tables.
template <class M>
struct Box {
    alignas(M) unsigned char buf[sizeof(M)];
    M &m() { return *std::launder(reinterpret_cast<M *>(buf)); }
    const M &m() const { return *std::launder(reinterpret_cast<const M *>(buf)); }
};

template <class M>
inline void flat_init(Box<M> *h) { new (h->buf) M(); }
template <class M>
inline void flat_free(Box<M> *h) { h->m().~M(); }

template <class M, class RK, void (*SET)(typename M::mapped_type *, size_t)>
inline int flat_put(Box<M> *h, RK k, size_t i)
{
    typename M::mapped_type v;
    SET(&v, i);
    try {
        return h->m().insert_or_assign(key_as<typename M::key_type>(k), v).second ? 1 : 0;
    } catch (const std::bad_alloc &) {
        return -1;
    }
}

template <class M, class RK>
inline const typename M::mapped_type *flat_get(const Box<M> *h, RK k)
{
    auto it = h->m().find(key_as<typename M::key_type>(k));
    return it == h->m().end() ? nullptr : &it->second;
}

template <class M, class RK>
inline int flat_erase(Box<M> *h, RK k) { return h->m().erase(key_as<typename M::key_type>(k)) ? 1 : 0; }

template <class M, uint64_t (*LOW)(const typename M::mapped_type *)>
inline uint64_t flat_sum(const Box<M> *h)
{
    uint64_t s = 0;
    for (const auto &kv : h->m())
        s += LOW(&kv.second);
    return s;
}

template <class M>
inline size_t flat_size(const Box<M> *h) { return h->m().size(); }

template <class M>
inline void flat_stats(const Box<M> *h, size_t *bytes, size_t *buckets)
{
    *bytes = asked_bytes;
    *buckets = h->m().bucket_count();
}

}  // namespace

/* One adapter: MAP is Boost or Absl, MK the map's key type. */
#define PEERS_FLAT(TAG, MAP, BP, MK)                                                  \
    namespace {                                                                       \
    typedef MAP<MK, peers_##BP##_V> TAG##_M;                                          \
    typedef Box<TAG##_M> TAG##_T;                                                     \
    inline void TAG##_init(TAG##_T *h) { flat_init(h); }                              \
    inline void TAG##_free(TAG##_T *h) { flat_free(h); }                              \
    inline int TAG##_put(TAG##_T *h, peers_##BP##_K k, size_t i)                      \
    {                                                                                 \
        return flat_put<TAG##_M, peers_##BP##_K, peers_set_##BP>(h, k, i);            \
    }                                                                                 \
    inline const peers_##BP##_V *TAG##_get(const TAG##_T *h, peers_##BP##_K k)        \
    {                                                                                 \
        return flat_get<TAG##_M>(h, k);                                               \
    }                                                                                 \
    inline int TAG##_erase(TAG##_T *h, peers_##BP##_K k) { return flat_erase<TAG##_M>(h, k); } \
    inline uint64_t TAG##_sum(const TAG##_T *h)                                       \
    {                                                                                 \
        return flat_sum<TAG##_M, peers_low_##BP>(h);                                  \
    }                                                                                 \
    inline size_t TAG##_size(const TAG##_T *h) { return flat_size(h); }               \
    inline void TAG##_stats(const TAG##_T *h, size_t *bytes, size_t *buckets)         \
    {                                                                                 \
        flat_stats(h, bytes, buckets);                                                \
    }                                                                                 \
    PEERS_GEN(TAG, BP)                                                                \
    }

PEERS_FLAT(boost_u32, Boost, u32, uint32_t)
PEERS_FLAT(boost_u64, Boost, u64, uint64_t)
PEERS_FLAT(boost_str, Boost, str, std::string_view)
PEERS_FLAT(absl_u32, Absl, u32, uint32_t)
PEERS_FLAT(absl_u64, Absl, u64, uint64_t)
PEERS_FLAT(absl_str, Absl, str, std::string_view)
PEERS_FLAT(boosts_u32, BoostS, u32, uint32_t)
PEERS_FLAT(boosts_u64, BoostS, u64, uint64_t)
PEERS_FLAT(boosts_str, BoostS, str, const char *)
PEERS_FLAT(absls_u32, AbslS, u32, uint32_t)
PEERS_FLAT(absls_u64, AbslS, u64, uint64_t)
PEERS_FLAT(absls_str, AbslS, str, const char *)
PEERS_FLAT(absl_v32_u64, Absl, u64_u32, uint64_t)
PEERS_FLAT(absl_v32_str, Absl, str_u32, std::string_view)

extern "C" const peers_ops_t peers_boost_ops[PEERS_N_BP] =
    PEERS_OPS3(boost_u32, boost_u64, boost_str);
extern "C" const peers_ops_t peers_absl_ops[PEERS_N_BP] =
    PEERS_OPS3(absl_u32, absl_u64, absl_str);
extern "C" const peers_ops_t peers_boost_suite_ops[PEERS_N_BP] =
    PEERS_OPS3(boosts_u32, boosts_u64, boosts_str);
extern "C" const peers_ops_t peers_absl_suite_ops[PEERS_N_BP] =
    PEERS_OPS3(absls_u32, absls_u64, absls_str);
extern "C" const peers_ops_t peers_absl_v32_ops[PEERS_N_BP] =
    PEERS_OPS3(absl_u32, absl_v32_u64, absl_v32_str);
