# ivars.rb: exercises everything that lives in mruby's iv tables (instance,
# class and global variables, constants), including the paths khl changes:
# growth, removal down to empty, dup/clone, modules seen through include and
# prepend (include classes read their module's table), and GC marking of
# values held only by a table.  Prints results; mruby/test.sh compares the
# output of stock, khl, and khl on khl_pool.  Variable order is a hash order
# in mruby 3.1 (it differs between stock and khl), so lists are sorted.

def show(label, v)
  puts "#{label}: #{v.inspect}"
end

class Point
  attr_accessor :x, :y
  def initialize(x, y); @x = x; @y = y; end
end

p1 = Point.new(1, 2)
show "ivars", p1.instance_variables.sort
show "get", [p1.x, p1.y, p1.instance_variable_get(:@z)]
p1.instance_variable_set(:@z, 3)
show "defined", [p1.instance_variable_defined?(:@z), p1.instance_variable_defined?(:@w)]

# Growth well past one group, then removal down to empty and back.
o = Object.new
200.times { |i| o.instance_variable_set(:"@v#{i}", i * 7) }
show "grown", [o.instance_variables.size, (0...200).all? { |i| o.instance_variable_get(:"@v#{i}") == i * 7 }]
removed = (0...200).select { |i| i % 3 == 0 }.map { |i| o.remove_instance_variable(:"@v#{i}") }
show "removed", [removed.size, removed.inject(0) { |s, v| s + v }, o.instance_variables.size]
show "after remove", (0...200).all? { |i| o.instance_variable_defined?(:"@v#{i}") == (i % 3 != 0) }
(0...200).each { |i| o.remove_instance_variable(:"@v#{i}") if i % 3 != 0 }
show "emptied", o.instance_variables
begin
  o.remove_instance_variable(:@v1)
rescue NameError => e
  show "remove missing", e.class
end
o.instance_variable_set(:@again, :yes)
show "refilled", o.instance_variables

# dup and clone copy the table; the copies are independent.
a = Point.new([1], "s")
b = a.dup
c = a.clone
b.x = :changed
c.instance_variable_set(:@extra, 1)
show "copies", [a.x, b.x, c.x, a.instance_variables.sort, c.instance_variables.sort]
show "frozen clone", begin; a.freeze.clone.instance_variable_set(:@q, 1); rescue => e; e.class; end

# Values held only by a table survive GC.
holders = (0...300).map { |i| h = Object.new; h.instance_variable_set(:@s, "str#{i}" * 3); h }
GC.start
show "gc kept", holders.map { |h| h.instance_variable_get(:@s).size }.inject(0) { |t, v| t + v }

# Class variables and constants through include and prepend.
module Mixin
  CONST_M = :m
  @@mv = 1
  def mv; @@mv; end
  def self.bump; @@mv += 1; end
end
class Host
  include Mixin
  CONST_H = :h
  def self.mixin_const; CONST_M; end
end
module Front
  CONST_F = :f
  def greet; "front " + super; end
end
class Greeter
  def greet; "greeter"; end
  CONST_G = :g
  prepend Front
  @@gv = :before
  def self.gv; @@gv; end
end
# Grow the module's table after the include class exists: the include
# class must see the new block.
40.times { |i| Mixin.const_set(:"LATE#{i}", i) }
Mixin.bump
show "mixin", [Host.new.mv, Host::CONST_M, Host.mixin_const, Host::LATE39, Host.const_defined?(:LATE20)]
show "class vars", [Host.class_variables.sort, Mixin.class_variables.sort]
20.times { |i| Greeter.const_set(:"G#{i}", i) }
Greeter.class_variable_set(:@@gv, :after)
show "prepend", [Greeter.new.greet, Greeter::CONST_G, Greeter::G19, Greeter::CONST_F, Greeter.gv]
show "constants", Greeter.constants.sort.first(5)
Greeter.send(:remove_const, :G3)
show "remove const", [Greeter.const_defined?(:G3), Greeter.const_defined?(:G4)]

# Globals.
100.times { |i| eval("$khl_g#{i} = #{i}") }
show "globals", [$khl_g0, $khl_g99, global_variables.count { |g| g.to_s.start_with?("$khl_g") }]

# Exceptions and classes carry ivars too.
class MyErr < StandardError
  def initialize(msg); super; @info = msg.size; end
  attr_reader :info
end
begin
  raise MyErr, "boom!"
rescue MyErr => e
  show "exception", [e.message, e.info]
end
class Ex; end
Ex.instance_variable_set(:@cls_ivar, 5)
show "class ivar", Ex.instance_variable_get(:@cls_ivar)

# #inspect walks the object's table and calls #inspect on its values, which
# may change that table: here the walk's callback removes the object's only
# variable, which frees khl's block (the walk read it after it was freed).
class Victim; end
class Meddler
  def inspect
    $victim.remove_instance_variable(:@list)
    "meddler"
  end
end
$victim = Victim.new
$victim.instance_variable_set(:@list, [Meddler.new])
show "inspect that removes the last ivar", $victim.inspect.split(" ", 2)[1]
show "after it", $victim.instance_variables
show "done", true
