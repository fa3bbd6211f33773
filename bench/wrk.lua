-- The request of one bench scenario for wrk (bench/wrk.ts runs it):
--   wrk -s bench/wrk.lua <url> -- <method> <authorization or ""> <body or ""> <run token> [mandate ids...]
-- In the body, __KEY__ becomes a key no other request of any run uses (run token, thread, counter), so
-- every POST /payments is a new payment, and __MANDATE__ the next of the mandate ids, round robin. A
-- body without either is formatted once and sent as is (wrk's static request, the cheapest).
-- done() prints one JSON line, so bench/wrk.ts reads numbers in fixed units instead of wrk's text.

local body, token, mandates = nil, nil, {}
local counter = 0

function setup(thread)
  -- Runs in the main Lua state, once a thread: the thread's `id` global tells its keys apart.
  setup_count = (setup_count or 0) + 1
  thread:set("id", setup_count)
end

function init(args)
  wrk.method = args[1]
  wrk.headers["content-type"] = "application/json"
  if args[2] ~= "" then wrk.headers["authorization"] = args[2] end
  if args[3] ~= "" then wrk.body = args[3] end
  token = args[4]
  for i = 5, #args do mandates[#mandates + 1] = args[i] end
  if wrk.body and (wrk.body:find("__KEY__", 1, true) or wrk.body:find("__MANDATE__", 1, true)) then
    body = wrk.body
  else
    -- No per-request part: wrk then formats the request once (a nil `request` global).
    request = nil
  end
end

function request()
  counter = counter + 1
  local b = body:gsub("__KEY__", token .. "-" .. id .. "-" .. counter)
  if #mandates > 0 then b = b:gsub("__MANDATE__", mandates[counter % #mandates + 1]) end
  return wrk.format(nil, nil, nil, b)
end

function done(summary, latency)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}\n',
    summary.requests, summary.duration, math.floor(latency:percentile(50)), math.floor(latency:percentile(99)),
    e.connect, e.read, e.write, e.status, e.timeout))
end
