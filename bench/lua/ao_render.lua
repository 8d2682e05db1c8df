-- ao_render.lua: the ambient-occlusion renderer of bench/ruby/ao_render.rb
-- in Lua (three spheres on a plane, each hit point shaded by random rays over
-- its hemisphere).  Vectors, rays and intersection records are small tables
-- with a metatable, made and dropped by the million: Lua's counterpart of
-- mruby's tiny objects.
--
-- KHL_SCALE is the image side in pixels; default 72.  Prints the image size
-- and a checksum of the pixels.

local NSUBSAMPLES = 2
local NAO_SAMPLES = 4
local sqrt, sin, cos, pi = math.sqrt, math.sin, math.cos, math.pi

-- Our own generator (Park-Miller), the same sequence on every allocator.
local seed = 20131
local function next_float()
  seed = (seed * 16807) % 2147483647
  return seed / 2147483647.0
end

local Vec = {}
Vec.__index = Vec
local function vec(x, y, z) return setmetatable({x = x, y = y, z = z}, Vec) end
function Vec.add(a, b) return vec(a.x + b.x, a.y + b.y, a.z + b.z) end
function Vec.sub(a, b) return vec(a.x - b.x, a.y - b.y, a.z - b.z) end
function Vec.mul(a, s) return vec(a.x * s, a.y * s, a.z * s) end
function Vec.cross(a, b)
  return vec(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x)
end
function Vec.dot(a, b) return a.x * b.x + a.y * b.y + a.z * b.z end
function Vec.normalize(a)
  local len = sqrt(a:dot(a))
  if len > 1.0e-17 then return vec(a.x / len, a.y / len, a.z / len) end
  return a
end

local function new_isect() return {t = 1.0e17, hit = false, p = nil, n = nil} end

local function sphere(center, radius)
  return {
    intersect = function(ray, isect)
      local rs = ray.org:sub(center)
      local b = rs:dot(ray.dir)
      local c = rs:dot(rs) - radius * radius
      local d = b * b - c
      if d <= 0.0 then return end
      local t = -b - sqrt(d)
      if t > 0.0 and t < isect.t then
        isect.t = t
        isect.hit = true
        isect.p = ray.org:add(ray.dir:mul(t))
        isect.n = isect.p:sub(center):normalize()
      end
    end,
  }
end

local function plane(p, n)
  return {
    intersect = function(ray, isect)
      local v = ray.dir:dot(n)
      if math.abs(v) < 1.0e-17 then return end
      local t = -(ray.org:dot(n) - p:dot(n)) / v
      if t > 0.0 and t < isect.t then
        isect.t = t
        isect.hit = true
        isect.p = ray.org:add(ray.dir:mul(t))
        isect.n = n
      end
    end,
  }
end

local objects = {
  sphere(vec(-2.0, 0.0, -3.5), 0.5),
  sphere(vec(-0.5, 0.0, -3.0), 0.5),
  sphere(vec(1.0, 0.0, -2.2), 0.5),
  plane(vec(0.0, -0.5, 0.0), vec(0.0, 1.0, 0.0)),
}

local function trace(ray, isect)
  for i = 1, #objects do objects[i].intersect(ray, isect) end
end

-- An orthonormal basis around n, to turn hemisphere samples into rays.
local function basis(n)
  local b2
  if n.x < 0.6 and n.x > -0.6 then b2 = vec(1.0, 0.0, 0.0)
  elseif n.y < 0.6 and n.y > -0.6 then b2 = vec(0.0, 1.0, 0.0)
  elseif n.z < 0.6 and n.z > -0.6 then b2 = vec(0.0, 0.0, 1.0)
  else b2 = vec(1.0, 0.0, 0.0) end
  local b0 = b2:cross(n):normalize()
  return b0, n:cross(b0):normalize()
end

local function ambient_occlusion(isect)
  local n = isect.n
  local b0, b1 = basis(n)
  local org = isect.p:add(n:mul(1.0e-4))
  local occluded = 0
  for _ = 1, NAO_SAMPLES do
    for _ = 1, NAO_SAMPLES do
      local theta = sqrt(next_float())
      local phi = 2.0 * pi * next_float()
      local x, y = cos(phi) * theta, sin(phi) * theta
      local z = sqrt(1.0 - theta * theta)
      local dir = b0:mul(x):add(b1:mul(y)):add(n:mul(z))
      local occ = new_isect()
      trace({org = org, dir = dir}, occ)
      if occ.hit then occluded = occluded + 1 end
    end
  end
  local total = NAO_SAMPLES * NAO_SAMPLES
  return (total - occluded) / total
end

local side = tonumber(os.getenv("KHL_SCALE") or "72") // 1
if side < 1 then side = 1 end
local w, h = side, side
local pixels = {}
local eye = vec(0.0, 0.0, 0.0)
for y = 0, h - 1 do
  for x = 0, w - 1 do
    local sum = 0.0
    for v = 0, NSUBSAMPLES - 1 do
      for u = 0, NSUBSAMPLES - 1 do
        local px = (x + u / NSUBSAMPLES - w / 2.0) / (w / 2.0)
        local py = -(y + v / NSUBSAMPLES - h / 2.0) / (h / 2.0)
        local isect = new_isect()
        trace({org = eye, dir = vec(px, py, -1.0):normalize()}, isect)
        if isect.hit then sum = sum + ambient_occlusion(isect) end
      end
    end
    local shade = math.floor(sum / (NSUBSAMPLES * NSUBSAMPLES) * 255.5)
    if shade > 255 then shade = 255 elseif shade < 0 then shade = 0 end
    pixels[#pixels + 1] = shade
  end
end

local sum, hash = 0, 7
for i = 1, #pixels do
  sum = sum + pixels[i]
  hash = (hash * 31 + pixels[i]) % 1000000007
end
print(string.format("ao_render %dx%d pixels=%d", w, h, #pixels))
print(string.format("checksum sum=%d hash=%d", sum, hash))
