-- wrk script of benches/http/run.sh: POST /v1/disbursements with a unique
-- idempotency key per request, status codes counted per thread.
--
--   PAYGATE_API_KEY=pk_... BENCH_NONCE=run1 \
--     wrk -t2 -c64 -d20s --latency -s benches/http/disburse.lua http://127.0.0.1:8080
--
-- Keys are "<nonce>-<thread>-<counter>": unique within a run (thread and
-- counter) and across runs on one data dir (nonce). Counting, the ids file
-- (BENCH_IDS_DIR: the id of every 201) and done()'s RESULT line are in
-- common.lua.

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local amount_minor = tonumber(os.getenv("BENCH_AMOUNT_MINOR") or "1000000")

function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/disbursements"
   wrk.headers["Content-Type"] = "application/json"
   wrk.headers["X-API-Key"] = api_key
   open_ids_file()
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
   count(status, status == 201 and body:match('"id":"([^"]+)"') or nil)
end
