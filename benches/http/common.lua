-- Shared by the wrk scripts of benches/http/run.sh (disburse.lua, orders.lua):
-- status codes and answers per second counted per thread, the ids of 201s
-- written to a file, and done()'s summary. A script loads it with
--
--   dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")
--
-- and then defines init() (calling open_ids_file()), request() and
-- response() (calling count(status, id)).
--
-- done() prints one human summary and one "RESULT key=value ..." line that
-- run.sh parses. With BENCH_IDS_DIR set, each thread writes the id of every
-- 201 it saw to BENCH_IDS_DIR/ids-<nonce>-<thread>.txt, for the durability
-- check.

api_key = os.getenv("PAYGATE_API_KEY") or ""
nonce = os.getenv("BENCH_NONCE") or tostring(os.time())
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

-- Opens this thread's ids file if BENCH_IDS_DIR is set; called from init().
function open_ids_file()
   if ids_dir and ids_dir ~= "" then
      ids_file = assert(io.open(string.format("%s/ids-%s-%d.txt", ids_dir, nonce, thread_id), "w"))
      -- Line buffered: wrk may end a thread without closing its files.
      ids_file:setvbuf("line")
   end
end

-- Counts one answer; id is what a 201 answered (nil: "missing-id").
function count(status, id)
   counts[status] = (counts[status] or 0) + 1
   local second = os.time()
   per_second[second] = (per_second[second] or 0) + 1
   if ids_file and status == 201 then
      ids_file:write(id or "missing-id", "\n")
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
