# method_misses.rb: method calls that miss mruby's method cache and walk the
# ancestors: modules included into a module and into a class, a prepended
# module with its origin, and BasicObject at the end.  Each round defines a
# method, which clears the whole cache, then calls methods found at each
# depth, asks for one that is nowhere, and checks kind_of? against the
# modules.  Prints a checksum.  $KHL_SCALE rounds (default 2000).
module A; def a; 1; end; end
module B; include A; def b; 2; end; end
module P; def c; super + 10; end; end
class Base; include B; def c; 3; end; end
class K < Base; prepend P; def d; 4; end; end
o = K.new
sum = 0
($KHL_SCALE || 2000).times do |i|
  K.define_method(:x) { i }
  sum += o.a + o.b + o.c + o.d + o.x
  sum += 1 if o.respond_to?(:nowhere)
  sum += 1 if o.kind_of?(A) && o.kind_of?(P) && !o.kind_of?(Comparable)
end
puts sum
