# raises.rb: a script that fails with an uncaught exception after building
# objects with instance variables; the host must report it (exit 1) and
# still return every byte to the pool.
class Holder
  def initialize(i); @i = i; @s = "x" * i; end
end
keep = (0...1000).map { |i| Holder.new(i) }
puts keep.size
raise ArgumentError, "raised on purpose"
