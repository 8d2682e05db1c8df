/* boost_pool.cpp: the Boost.Pool contenders of program seeds' seed_latency
 * workload (the Japanese Boost.Pool latency post, 001 in docs/posts.md), behind a small
 * extern "C" API so the C program can time them like any other allocator.
 *
 * boost::pool<> is used exactly as the post does: pool<>(size), p.malloc(),
 * blocks never freed one by one (the pool's destructor returns everything).
 * boost::object_pool<T> needs a type per size, so the four sizes of the post
 * (int, 10, 50 and 100 bytes) are instantiated and reached through a small
 * virtual interface.  No exception crosses into C: pools are created with
 * nothrow new, and Boost.Pool reports exhaustion with a null pointer. */
#include <boost/pool/object_pool.hpp>
#include <boost/pool/pool.hpp>

#include <cstddef>
#include <new>

namespace {

template <std::size_t Size> struct Data {
    char data[Size];
};

/* One object_pool of any of the four types, so C can hold it as one handle. */
struct ObjectPoolBase {
    virtual ~ObjectPoolBase() = default;
    virtual void *construct() = 0;
};

template <class T> struct ObjectPool final : ObjectPoolBase {
    boost::object_pool<T> pool;
    void *construct() override { return pool.construct(); }
};

ObjectPoolBase *make_object_pool(std::size_t size)
{
    /* The post's sizes only: the type decides the chunk size at compile time. */
    switch (size) {
    case 4: return new (std::nothrow) ObjectPool<int>();
    case 10: return new (std::nothrow) ObjectPool<Data<10>>();
    case 50: return new (std::nothrow) ObjectPool<Data<50>>();
    case 100: return new (std::nothrow) ObjectPool<Data<100>>();
    default: return nullptr;
    }
}

} // namespace

extern "C" {

struct seeds_bpool {
    boost::pool<> pool;
    explicit seeds_bpool(std::size_t size) : pool(size) {}
};

struct seeds_bobj {
    ObjectPoolBase *impl;
};

/* boost::pool<>(size) with its default growth (32 chunks, doubling). */
seeds_bpool *seeds_bpool_new(std::size_t size) noexcept
{
    if (size == 0)
        return nullptr;
    return new (std::nothrow) seeds_bpool(size);
}

void *seeds_bpool_malloc(seeds_bpool *p) noexcept
{
    return p->pool.malloc();
}

void seeds_bpool_delete(seeds_bpool *p) noexcept
{
    delete p;
}

/* boost::object_pool<T> for size 4 (int), 10, 50 or 100; NULL otherwise. */
seeds_bobj *seeds_bobj_new(std::size_t size) noexcept
{
    ObjectPoolBase *impl = make_object_pool(size);
    if (!impl)
        return nullptr;
    seeds_bobj *o = new (std::nothrow) seeds_bobj{impl};
    if (!o)
        delete impl;
    return o;
}

void *seeds_bobj_construct(seeds_bobj *o) noexcept
{
    return o->impl->construct();
}

void seeds_bobj_delete(seeds_bobj *o) noexcept
{
    if (o)
        delete o->impl;
    delete o;
}

} // extern "C"
