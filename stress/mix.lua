-- wrk script for `make stress`: requests drawn from the corpus's mix.tsv
-- (stress/gen-corpus.pl) by category weight, then uniformly within the
-- category; every response's HTTP status and X-Simhash-Status counted.
--
--   wrk -s stress/mix.lua URL -- MIX_TSV [SEED [CATEGORIES]]
--
-- CATEGORIES (comma-separated) keeps only those categories of the mix.
--
-- done() prints machine-readable lines for the driver (stress/run.pl):
--   mix: status CODE COUNT
--   mix: simhash STATUS COUNT        ("-" = no X-Simhash-Status header)
--   mix: errors connect N read N write N status N timeout N
--   mix: requests N duration_us N bytes N

local threads = {}
local counter = 0

function setup(thread)
   counter = counter + 1
   thread:set("id", counter)
   table.insert(threads, thread)
end

local cats, total

local function load_mix(path, only)
   local f = assert(io.open(path, "r"), "cannot open " .. path)
   local byname, list = {}, {}
   for line in f:lines() do
      local name, weight, gz = line:match("^#(%S+)\t(%d+)\t(%d)")
      if name and only and not only[name] then
         name = nil
      elseif name then
         local c = { name = name, weight = tonumber(weight), urls = {},
                     headers = {} }
         if gz == "1" then c.headers["Accept-Encoding"] = "gzip" end
         byname[name] = c
         table.insert(list, c)
      else
         local cat, path = line:match("^(%S+)\t(%S+)$")
         if cat and byname[cat] then table.insert(byname[cat].urls, path) end
      end
   end
   f:close()
   local cum = 0
   for _, c in ipairs(list) do
      cum = cum + c.weight
      c.cum = cum
   end
   return list, cum
end

function init(args)
   local only
   if args[3] then
      only = {}
      for c in args[3]:gmatch("[^,]+") do only[c] = true end
   end
   cats, total = load_mix(args[1] or "mix.tsv", only)
   math.randomseed((tonumber(args[2]) or 1) * 7919 + (id or 0) * 104729)
   statuses = {}
   simhash = {}
end

function request()
   local r = math.random() * total
   local c = cats[#cats]
   for _, cat in ipairs(cats) do
      if r < cat.cum then
         c = cat
         break
      end
   end
   local path = c.urls[math.random(#c.urls)]
   return wrk.format("GET", path, c.headers)
end

function response(status, headers, body)
   statuses[status] = (statuses[status] or 0) + 1
   local s = headers["X-Simhash-Status"] or "-"
   simhash[s] = (simhash[s] or 0) + 1
end

local function add(into, from)
   for k, v in pairs(from) do into[k] = (into[k] or 0) + v end
end

function done(summary, latency, requests)
   local st, sh = {}, {}
   for _, t in ipairs(threads) do
      add(st, t:get("statuses"))
      add(sh, t:get("simhash"))
   end
   for k, v in pairs(st) do io.write(string.format("mix: status %s %d\n", k, v)) end
   for k, v in pairs(sh) do io.write(string.format("mix: simhash %s %d\n", k, v)) end
   local e = summary.errors
   io.write(string.format("mix: errors connect %d read %d write %d status %d timeout %d\n",
                          e.connect, e.read, e.write, e.status, e.timeout))
   io.write(string.format("mix: requests %d duration_us %d bytes %d\n",
                          summary.requests, summary.duration, summary.bytes))
end
