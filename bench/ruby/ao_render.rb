# ao_render.rb: an ambient-occlusion renderer in the style of the classic
# ao-render benchmark (three spheres on a plane, every pixel's hit point
# shaded by casting random rays over its hemisphere), written for khashlite's
# interpreter benchmark.  Its allocation pattern is what made the mruby khash
# patch matter: a torrent of tiny short-lived objects (Vec with three Float
# instance variables, rays, intersection records).
#
# KHL_SCALE (handed over as $KHL_SCALE by khl-mruby) is the image side in
# pixels; default 48.  Prints the image size and a checksum of the pixels.

NSUBSAMPLES = 2
NAO_SAMPLES = 4

# Our own generator (Park-Miller): the same sequence on every run and
# allocator, and no dependency on the mruby-random gem.
class Lcg
  def initialize(seed)
    @s = seed
  end

  def next_float
    @s = (@s * 16807) % 2147483647
    @s / 2147483647.0
  end
end

class Vec
  attr_reader :x, :y, :z

  def initialize(x, y, z)
    @x = x
    @y = y
    @z = z
  end

  def add(b)
    Vec.new(@x + b.x, @y + b.y, @z + b.z)
  end

  def sub(b)
    Vec.new(@x - b.x, @y - b.y, @z - b.z)
  end

  def mul(s)
    Vec.new(@x * s, @y * s, @z * s)
  end

  def cross(b)
    Vec.new(@y * b.z - @z * b.y, @z * b.x - @x * b.z, @x * b.y - @y * b.x)
  end

  def dot(b)
    @x * b.x + @y * b.y + @z * b.z
  end

  def normalize
    len = Math.sqrt(dot(self))
    len > 1.0e-17 ? Vec.new(@x / len, @y / len, @z / len) : self
  end
end

class Ray
  attr_reader :org, :dir

  def initialize(org, dir)
    @org = org
    @dir = dir
  end
end

class Isect
  attr_accessor :t, :hit, :p, :n

  def initialize
    @t = 1.0e17
    @hit = false
    @p = nil
    @n = nil
  end
end

class Sphere
  def initialize(center, radius)
    @center = center
    @radius = radius
  end

  def intersect(ray, isect)
    rs = ray.org.sub(@center)
    b = rs.dot(ray.dir)
    c = rs.dot(rs) - @radius * @radius
    d = b * b - c
    return if d <= 0.0
    t = -b - Math.sqrt(d)
    return unless t > 0.0 && t < isect.t
    isect.t = t
    isect.hit = true
    isect.p = ray.org.add(ray.dir.mul(t))
    isect.n = isect.p.sub(@center).normalize
  end
end

class Plane
  def initialize(p, n)
    @p = p
    @n = n
  end

  def intersect(ray, isect)
    v = ray.dir.dot(@n)
    return if v.abs < 1.0e-17
    t = -(ray.org.dot(@n) + -@p.dot(@n)) / v
    return unless t > 0.0 && t < isect.t
    isect.t = t
    isect.hit = true
    isect.p = ray.org.add(ray.dir.mul(t))
    isect.n = @n
  end
end

class Scene
  def initialize
    @objects = [
      Sphere.new(Vec.new(-2.0, 0.0, -3.5), 0.5),
      Sphere.new(Vec.new(-0.5, 0.0, -3.0), 0.5),
      Sphere.new(Vec.new(1.0, 0.0, -2.2), 0.5),
      Plane.new(Vec.new(0.0, -0.5, 0.0), Vec.new(0.0, 1.0, 0.0)),
    ]
    @rng = Lcg.new(20131)
  end

  # An orthonormal basis around n, to turn hemisphere samples into rays.
  def basis(n)
    b2 = if n.x < 0.6 && n.x > -0.6
           Vec.new(1.0, 0.0, 0.0)
         elsif n.y < 0.6 && n.y > -0.6
           Vec.new(0.0, 1.0, 0.0)
         elsif n.z < 0.6 && n.z > -0.6
           Vec.new(0.0, 0.0, 1.0)
         else
           Vec.new(1.0, 0.0, 0.0)
         end
    b0 = b2.cross(n).normalize
    b1 = n.cross(b0).normalize
    [b0, b1]
  end

  def ambient_occlusion(isect)
    b0, b1 = basis(isect.n)
    n = isect.n
    org = isect.p.add(n.mul(1.0e-4))
    occluded = 0
    NAO_SAMPLES.times do
      NAO_SAMPLES.times do
        theta = Math.sqrt(@rng.next_float)
        phi = 2.0 * Math::PI * @rng.next_float
        x = Math.cos(phi) * theta
        y = Math.sin(phi) * theta
        z = Math.sqrt(1.0 - theta * theta)
        dir = b0.mul(x).add(b1.mul(y)).add(n.mul(z))
        ray = Ray.new(org, dir)
        occ = Isect.new
        @objects.each { |o| o.intersect(ray, occ) }
        occluded += 1 if occ.hit
      end
    end
    total = NAO_SAMPLES * NAO_SAMPLES
    (total - occluded).to_f / total
  end

  def render(w, h)
    pixels = []
    eye = Vec.new(0.0, 0.0, 0.0)
    h.times do |y|
      w.times do |x|
        sum = 0.0
        NSUBSAMPLES.times do |v|
          NSUBSAMPLES.times do |u|
            px = (x + u.to_f / NSUBSAMPLES - w / 2.0) / (w / 2.0)
            py = -(y + v.to_f / NSUBSAMPLES - h / 2.0) / (h / 2.0)
            ray = Ray.new(eye, Vec.new(px, py, -1.0).normalize)
            isect = Isect.new
            @objects.each { |o| o.intersect(ray, isect) }
            sum += ambient_occlusion(isect) if isect.hit
          end
        end
        shade = (sum / (NSUBSAMPLES * NSUBSAMPLES) * 255.5).to_i
        pixels << (shade > 255 ? 255 : (shade < 0 ? 0 : shade))
      end
    end
    pixels
  end
end

side = ($KHL_SCALE || 48).to_i
side = 1 if side < 1
pixels = Scene.new.render(side, side)
sum = 0
hash = 7
pixels.each do |v|
  sum += v
  hash = (hash * 31 + v) % 1000000007
end
puts "ao_render #{side}x#{side} pixels=#{pixels.size}"
puts "checksum sum=#{sum} hash=#{hash}"
