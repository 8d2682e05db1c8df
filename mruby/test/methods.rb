# methods.rb: method-table behaviour that mruby/test.sh compares between
# stock, khl and khl on khl_pool (the output must be identical).  Covers what
# the method table does: growth to hundreds of methods, redefinition that
# changes a C method into a Ruby one (the key's flags change), alias,
# remove_method, undef_method, include and prepend (where include classes
# read their module's table, and a prepend origin holds its class's), and
# dup/clone of classes (which copy it).

def show(label, list)
  puts "#{label}: #{list.map(&:to_s).sort.join(' ')}"
end

# Growth: 300 methods on one class, then each one called.
big = Class.new
300.times { |i| big.define_method(:"g#{i}") { i * 2 } }
o = big.new
sum = 0
300.times { |i| sum += o.__send__(:"g#{i}") }
puts "big: #{big.instance_methods(false).size} methods, sum #{sum}"

# A C method redefined in Ruby, then aliased and removed.
class Widget
  def hash; 42; end
  alias_method :old_hash, :hash
  def to_s; "widget"; end
  def noarg; :n; end
  def witharg(a, b = 1); a + b; end
end
w = Widget.new
puts "widget: #{w.hash} #{w.old_hash} #{w} #{w.noarg} #{w.witharg(2)}"
class Widget
  remove_method :hash
end
puts "after remove: #{w.hash == w.old_hash} #{Widget.instance_methods(false).include?(:hash)}"
class Widget
  undef_method :to_s
end
begin
  w.to_s
  puts "undef: still callable"
rescue NoMethodError
  puts "undef: NoMethodError"
end
show "widget methods", Widget.instance_methods(false)

# Modules: a method added to a module after include is seen by the class,
# through the include class that shares the module's table.
module Greeter
  def greet; "hello from #{name}"; end
end
class Person
  include Greeter
  def name; "person"; end
end
p1 = Person.new
module Greeter
  50.times { |i| define_method(:"late#{i}") { i } }
  def wave; "wave"; end
end
puts "module: #{p1.greet} #{p1.wave} #{p1.late49}"
puts "ancestors: #{Person.ancestors.take(3).inspect}"

# Prepend: the class's methods move to its origin.
module Loud
  def speak; super.upcase; end
end
class Dog
  def speak; "woof"; end
  prepend Loud
end
class Dog
  def sit; "sits"; end
  20.times { |i| define_method(:"trick#{i}") { "trick#{i}" } }
end
d = Dog.new
puts "prepend: #{d.speak} #{d.sit} #{d.trick19}"
show "dog methods", Dog.instance_methods(false)

# A module prepended to after a class included it: its methods move to its
# origin, where the class's include class still finds them.
module Late
  def late_m; "late"; end
end
class Holder; include Late; end
module Shout; def late_m; super + "!"; end; end
module Late
  prepend Shout
  def later; "later"; end
end
h = Holder.new
puts "prepended after include: #{h.late_m} #{h.later} #{h.kind_of?(Late)} #{h.kind_of?(Shout)}"

# dup and clone of classes copy the table; the copies are independent.
c2 = Widget.dup
c2.define_method(:extra) { :extra }
c3 = Greeter.clone
puts "dup: #{c2.new.witharg(5)} #{c2.new.extra} #{Widget.method_defined?(:extra)}"
puts "clone: #{c3.instance_methods(false).size} #{c3.instance_method(:late7).name}"
show "dup methods", c2.instance_methods(false)
# A prepended class: stock mruby 3.1 leaks a method table here (on stock's
# allocator: khl_pool is checked on khl only), the khl build does not
# (mruby/README.md).
c4 = Dog.clone
puts "clone prepended: #{c4.new.speak} #{c4.new.sit} #{c4.new.trick3}"

# Singleton methods and respond_to? on many objects.
objs = (0...40).map do |i|
  x = Object.new
  x.define_singleton_method(:id_of) { i }
  x
end
puts "singletons: #{objs.map(&:id_of).inject(0) { |s, v| s + v }} #{objs.all? { |x| x.respond_to?(:id_of) }}"
