# mruby/build_config.rb: the mruby builds `make mruby` makes, chosen by
# KHL_MRUBY_VARIANT (set by mruby/build.sh):
#   stock      Debian's build_config/default.rb (default gembox, tests, bintests)
#   khl        the same on the patched tree, with khashlite's headers and
#              build/libkhashlite.a (the seed and libc allocator the inlined
#              table code refers to)
#   khl-asan   khl under clang with ASan+UBSan, as mruby's build_config/clang-asan.rb
#   stock-asan stock the same way, so that both builds are checked alike
# KHL_ROOT is the khashlite checkout.
MRuby::Lockfile.disable   # would write a .lock beside this file

variant = ENV['KHL_MRUBY_VARIANT'] || 'stock'
root = ENV['KHL_ROOT'] || File.expand_path('..', __dir__)
libdir = ENV['KHL_LIBDIR'] || "#{root}/build"

MRuby::Build.new do |conf|
  if variant.end_with?('-asan')
    conf.toolchain :clang
    conf.enable_sanitizer 'address,undefined'
    conf.enable_debug
  else
    conf.toolchain
    # Every function on a cache line, in both builds: the builds then differ
    # in their code, not in where mrb_vm_exec lands.  Moved 16 bytes (to 16
    # mod 64), stock's own mrb_vm_exec ran bm_so_lists 13% slower; the khl
    # build's linked there by chance (docs/mruby.md).
    conf.cc.flags << '-falign-functions=64'
  end
  conf.gembox 'default'

  if variant.start_with?('khl')
    conf.cc.include_paths << root
    conf.linker.library_paths << libdir
    conf.linker.libraries << 'khashlite'
  end

  conf.enable_bintest
  conf.enable_test
end
