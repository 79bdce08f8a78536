-- wrk script of benches/http/run.sh (BENCH_TARGET=orders): POST /v1/orders,
-- a QRIS order with a unique merchant_order_id and a unique Idempotency-Key
-- header per request, status codes counted per thread.
--
--   PAYGATE_API_KEY=pk_... BENCH_NONCE=run1 \
--     wrk -t2 -c64 -d20s --latency -s benches/http/orders.lua http://127.0.0.1:8080
--
-- Both are "<nonce>-<thread>-<counter>": unique within a run (thread and
-- counter) and across runs on one data dir (nonce). Counting, the ids file
-- (BENCH_IDS_DIR: the ref_code of every 201) and done()'s RESULT line are
-- in common.lua.

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local amount_minor = tonumber(os.getenv("BENCH_ORDER_AMOUNT_MINOR") or "2500000")
local headers = nil -- per thread; Idempotency-Key rewritten per request

function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/orders"
   headers = {
      ["Content-Type"] = "application/json",
      ["X-API-Key"] = api_key,
   }
   open_ids_file()
end

function request()
   counter = counter + 1
   local id = string.format("%s-%d-%d", nonce, thread_id, counter)
   headers["Idempotency-Key"] = id
   local body = string.format(
      '{"merchant_order_id":"%s","amount_minor":%d,"payment_method":"QRIS","customer_phone":"081234567890"}',
      id, amount_minor)
   -- wrk.format sets Host and Content-Length in the table it is given.
   return wrk.format(nil, nil, headers, body)
end

function response(status, headers, body)
   count(status, status == 201 and body:match('"ref_code":"([^"]+)"') or nil)
end
