# per_class.rb (run by khl-mrb-probe): what the method tables of a class or
# module with M methods cost the allocator, M = 0, 1, 20.  Makes N of them
# and defines M methods in each from one Proc made beforehand (define_method
# copies it into a GC heap slot: no small block), reading the probe's counts
# of small blocks (tables, not the GC heap pages the classes come from)
# before and after.  Module.new makes the module alone; Class.new makes a
# metaclass too, with its own method table (empty) and one instance
# variable (__attached__).
# Prints "per_class KIND M allocating_calls live_blocks live_bytes", per
# class or module.
N = 1024   # each define_method adds a reference to BODY's irep (at most 65535)
NAMES = (0...20).map { |i| :"m#{i}" }
BODY = proc { 1 }
Class.new.define_method(NAMES[0], BODY)   # method caches, symbols
GC.disable
keep = Array.new(N)
[Module, Class].each do |kind|
  [0, 1, 20].each do |m|
    names = NAMES[0, m]
    s0 = khl_alloc_stats
    i = 0
    while i < N
      c = kind.new
      names.each { |name| c.define_method(name, BODY) }
      keep[i] = c
      i += 1
    end
    s1 = khl_alloc_stats
    keep = Array.new(N)
    calls, frees, bytes = (3..5).map { |j| (s1[j] - s0[j]).to_f / N }
    puts "per_class #{kind} #{m} #{calls.round(2)} #{(calls - frees).round(2)} #{bytes.round(1)}"
  end
end
GC.enable
