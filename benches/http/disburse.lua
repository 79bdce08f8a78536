-- wrk script of benches/http/run.sh: POST /v1/disbursements with a unique
-- idempotency key per request, status codes counted per thread.
--
--   PAYGATE_API_KEY=pk_... BENCH_NONCE=run1 \
--     wrk -t2 -c64 -d20s --latency -s benches/http/disburse.lua http://127.0.0.1:8080
--
-- Keys are "<nonce>-<thread>-<counter>": unique within a run (thread and
-- counter) and across runs on one data dir (nonce). done() prints one
-- human summary and one "RESULT key=value ..." line that run.sh parses.
-- With BENCH_IDS_DIR set, each thread also writes the id of every 201 it
-- saw to BENCH_IDS_DIR/ids-<nonce>-<thread>.txt, for the durability check.

local api_key = os.getenv("PAYGATE_API_KEY") or ""
local nonce = os.getenv("BENCH_NONCE") or tostring(os.time())
local amount_minor = tonumber(os.getenv("BENCH_AMOUNT_MINOR") or "1000000")
local ids_dir = os.getenv("BENCH_IDS_DIR")

local threads = {}
local next_thread_id = 0

function setup(thread)
   thread:set("thread_id", next_thread_id)
   next_thread_id = next_thread_id + 1
   table.insert(threads, thread)
end

-- Per thread (each wrk thread has its own Lua state).
counter = 0
counts = {}
per_second = {} -- answers by wall-clock second
local ids_file = nil

function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/disbursements"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["X-API-Key"] = api_key
   if ids_dir and ids_dir ~= "" then
      ids_file = assert(io.open(string.format("%s/ids-%s-%d.txt", ids_dir, nonce, thread_id), "w"))
      -- Line buffered: wrk may end a thread without closing its files.
      ids_file:setvbuf("line")
   end
end

function request()
   counter = counter + 1
   local body = string.format(
      '{"channel":"BANK","bank_short_code":"BCA","account_number":"1234567890",'
         .. '"account_name":"Budi Santoso","amount_minor":%d,"idempotency_key":"%s-%d-%d"}',
      amount_minor, nonce, thread_id, counter)
   return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
   counts[status] = (counts[status] or 0) + 1
   local second = os.time()
   per_second[second] = (per_second[second] or 0) + 1
   if ids_file and status == 201 then
      ids_file:write(body:match('"id":"([^"]+)"') or "missing-id", "\n")
   end
end

function done(summary, latency, requests)
   local total, timeline = {}, {}
   for _, thread in ipairs(threads) do
      for status, n in pairs(thread:get("counts")) do
         total[status] = (total[status] or 0) + n
      end
      for second, n in pairs(thread:get("per_second")) do
         timeline[second] = (timeline[second] or 0) + n
      end
   end
   local first, last = math.huge, -math.huge
   for second in pairs(timeline) do
      first, last = math.min(first, second), math.max(last, second)
   end
   local answers_per_second = {}
   for second = first, last do
      table.insert(answers_per_second, tostring(timeline[second] or 0))
   end
   local answered, created, others = 0, 0, {}
   for status, n in pairs(total) do
      answered = answered + n
      if status == 201 then
         created = created + n
      else
         table.insert(others, string.format("%d:%d", status, n))
      end
   end
   table.sort(others)
   local errors = summary.errors
   local socket_errors = errors.connect + errors.read + errors.write + errors.timeout
   local seconds = summary.duration / 1e6
   io.write(string.format("answers: %d, 201: %d, other statuses: %s, socket errors: %d\n",
      answered, created, #others > 0 and table.concat(others, ",") or "none", socket_errors))
   -- The first and last seconds are partial.
   io.write("answers per second: ", table.concat(answers_per_second, " "), "\n")
   io.write(string.format(
      "RESULT requests=%d answered=%d created=%d non_created=%d socket_errors=%d seconds=%.3f rps=%.1f"
         .. " p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f other=%s\n",
      summary.requests, answered, created, answered - created, socket_errors, seconds,
      summary.requests / seconds,
      latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
      latency.max / 1000, #others > 0 and table.concat(others, ",") or "none"))
end
