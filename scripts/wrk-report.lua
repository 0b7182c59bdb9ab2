-- wrk script: optional Accept header from WRK_ACCEPT, and one JSON line of
-- results at the end (requests/s, of them answered 2xx or 3xx, latency
-- percentiles in microseconds, errors), which scripts/bench-serve.sh and
-- scripts/bench-scale.sh collect.
local accept = os.getenv("WRK_ACCEPT")
if accept and accept ~= "" then
  wrk.headers["Accept"] = accept
end

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.status + summary.errors.timeout
  io.write(string.format(
    '{"requests":%d,"seconds":%.2f,"requests_per_sec":%.0f,"ok_per_sec":%.0f,"p50_us":%d,"p99_us":%d,"p999_us":%d,"max_us":%d,"errors":%d,"non_2xx":%d}\n',
    summary.requests, seconds, summary.requests / seconds,
    (summary.requests - summary.errors.status) / seconds,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max,
    errors, summary.errors.status))
end
