-- wrk script of benches/http/run.sh (BENCH_TARGET=orders or orders_paid): POST /v1/orders,
-- a QRIS order with a unique merchant_order_id and a unique Idempotency-Key
-- header per request, status codes counted per thread.
--
--   PAYGATE_API_KEY=pk_... BENCH_NONCE=run1 \
--     wrk -t2 -c64 -d20s --latency -s benches/http/orders.lua http://127.0.0.1:8080
--
-- With BENCH_ORDERS_PAY=1 every order answered 201 is then paid through
-- POST /v1/sandbox/orders/{ref_code}/pay (answered 200) by the thread's
-- next request, so the run is half creations, half payments.
--
-- Both are "<nonce>-<thread>-<counter>": unique within a run (thread and
-- counter) and across runs on one data dir (nonce). Counting, the ids file
-- (BENCH_IDS_DIR: the ref_code of every 201) and done()'s RESULT line are
-- in common.lua.

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local amount_minor = tonumber(os.getenv("BENCH_ORDER_AMOUNT_MINOR") or "2500000")
local headers = nil -- per thread; Idempotency-Key rewritten per request
local pay_headers = nil
local pay_mode = os.getenv("BENCH_ORDERS_PAY") == "1"
-- Per thread: ref codes created and not yet paid, first in first out.
local to_pay, first_to_pay, next_to_pay = {}, 1, 1

function init(args)
   wrk.method = "POST"
   wrk.path = "/v1/orders"
   headers = {
      ["Content-Type"] = "application/json",
      ["X-API-Key"] = api_key,
   }
   pay_headers = { ["X-API-Key"] = api_key }
   open_ids_file()
end

function request()
   if first_to_pay < next_to_pay then
      local ref_code = to_pay[first_to_pay]
      to_pay[first_to_pay] = nil
      first_to_pay = first_to_pay + 1
      return wrk.format("POST", "/v1/sandbox/orders/" .. ref_code .. "/pay", pay_headers, "")
   end
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
   local ref_code = status == 201 and body:match('"ref_code":"([^"]+)"') or nil
   count(status, ref_code)
   if pay_mode and ref_code then
      to_pay[next_to_pay] = ref_code
      next_to_pay = next_to_pay + 1
   end
end
