#!/bin/sh
# test_record.sh — `pfi record` against a local HTTP test server: scrapes
# are whole, timestamped and in order; SIGTERM leaves a complete file;
# failed scrapes are skipped, but never fail open: a malformed URL is a usage
# error, --max-failures failures in a row or no successful scrape exit 1, and
# only an empty file record created itself is removed; the recording ingests
# as prometheus telemetry. An agent deployed as docs/deploy.md says (TLS of a
# private CA, a read token) is scraped with --ca-file and --token-file, and
# without either the scrape fails naming why; the token goes over plain http
# only to loopback unless --allow-insecure-http or $PFI_ALLOW_INSECURE_HTTP=1,
# and is never written to the recording.
. "$(dirname "$0")/lib.sh"
: "${TOOLS:?}"
start_daemon fixture "$T/fixture.log" "$T/port" "$TOOLS/http_fixture" "$T/port"
port=$DPORT; [ -n "$port" ] || fail "fixture did not start"; ok
URL="http://127.0.0.1:$port/metrics"

expect_status 0 "$PFI" record --url "$URL" --interval 0.1 --count 5 -o "$T/a.prom"
[ "$(grep -c '^# pfi-scrape-time ' "$T/a.prom")" -eq 5 ] || fail "5 scrapes expected"; ok
[ "$(grep -c '^DCGM_FI_DEV_POWER_USAGE' "$T/a.prom")" -eq 10 ] || fail "2 GPUs x 5 scrapes"; ok
contains "$T/err" "5 scrapes written"
# timestamps increase, scrape numbers increase
awk '/^# pfi-scrape-time/ { if ($3 < last) exit 1; last=$3 }' "$T/a.prom" || fail "timestamps decrease"; ok
awk '/^DCGM_FI_DEV_POWER_USAGE\{gpu="0"/ { if ($2 <= last) exit 1; last=$2 }' "$T/a.prom" || fail "scrapes out of order"; ok
# the file a run creates is its user's alone (0600: scrapes name hosts and jobs)
[ "$(stat -c %a "$T/a.prom")" = 600 ] || fail "a.prom mode $(stat -c %a "$T/a.prom"), expected 600"; ok
# a redirect is a failed scrape, never followed nor recorded (issue 41: its page was written as metrics)
expect_error 1 "HTTP 302: redirected to http://127.0.0.1:$port/metrics, not followed" timeout 30 "$PFI" record \
  --url "http://127.0.0.1:$port/moved" --interval 0.05 --duration 0.2 -o "$T/moved.prom"
[ ! -e "$T/moved.prom" ] || fail "the redirect's page was recorded"; ok
# appending: a second run adds to the same file
expect_status 0 "$PFI" record --url "$URL" --interval 0.1 --count 2 -o "$T/a.prom"
[ "$(grep -c '^# pfi-scrape-time ' "$T/a.prom")" -eq 7 ] || fail "append"; ok

# SIGTERM in the middle: exit 0, every scrape in the file complete
start_daemon record "$T/rec.err" "" "$PFI" record --url "$URL" --interval 0.05 --duration 30 -o "$T/b.prom"
rec=$DPID
wait_for 20 "three scrapes" 'num "$(grep -c "^# pfi-scrape-time " "$T/b.prom" 2>/dev/null)" ">=" 3'
stop_daemon $rec TERM; rc=$STOP_RC
[ $rc -eq 0 ] || fail "record exited $rc after SIGTERM"; ok
contains "$T/rec.err" "stopped by signal"
n=$(grep -c '^# pfi-scrape-time ' "$T/b.prom"); [ "$n" -ge 3 ] || fail "only $n scrapes"; ok
[ "$(grep -c '^DCGM_FI' "$T/b.prom")" -eq $((n * 8)) ] || fail "a partial scrape after SIGTERM"; ok
tail -c 1 "$T/b.prom" | od -c | grep -q '\\n' || fail "file does not end with a newline"; ok

# duration ends the recording
expect_status 0 "$PFI" record --url "$URL" --interval 0.1 --duration 0.35 -o "$T/d.prom"
# at most 4 scrapes fit in 0.35 s at 0.1 s (5 allowed for rounding); at least
# 2 even when a loaded machine delays a scrape
n=$(grep -c '^# pfi-scrape-time ' "$T/d.prom"); [ "$n" -ge 2 ] && [ "$n" -le 5 ] || fail "duration gave $n scrapes"; ok

# failed scrapes are reported and skipped; --count counts successful scrapes;
# failures in a row below --max-failures do not give up
expect_status 0 timeout 30 "$PFI" record --url "http://127.0.0.1:$port/flaky" --interval 0.05 --count 3 --max-failures 2 -o "$T/f.prom"
[ "$(grep -c '^# pfi-scrape-time ' "$T/f.prom")" -eq 3 ] || fail "--count 3 with a failure before each"; ok
[ "$(grep -c 'warning: scrape .* failed' "$T/err")" -eq 3 ] || fail "3 failures reported"; ok
contains "$T/err" "3 scrapes written"

# every scrape failing until --duration ends: exit 1; the empty file this run created is removed
expect_error 1 "no successful scrape in" timeout 30 "$PFI" record --url "http://127.0.0.1:$port/status500" --interval 0.05 --duration 0.2 -o "$T/e.prom"
contains "$T/err" "which was removed"
[ ! -e "$T/e.prom" ] || fail "the empty file record created was left"; ok
# a user's existing file is never removed, empty or not, nor changed
: >"$T/empty.prom"
printf '# mine\n' >"$T/mine.prom"
expect_error 1 "no successful scrape in" timeout 30 "$PFI" record --url "http://127.0.0.1:$port/status500" --interval 0.05 --duration 0.2 -o "$T/empty.prom"
[ -f "$T/empty.prom" ] && [ ! -s "$T/empty.prom" ] || fail "the user's empty file was removed"; ok
lacks "$T/err" "removed"
expect_error 1 "no successful scrape in" timeout 30 "$PFI" record --url "http://127.0.0.1:$port/status500" --interval 0.05 --duration 0.2 -o "$T/mine.prom"
[ "$(cat "$T/mine.prom")" = "# mine" ] || fail "the user's file was changed"; ok

# --count 1 against a dead URL gives up after --max-failures failures in a row
# (each run bounded by timeout: the old behaviour looped forever)
expect_error 1 "gave up after 3 failed scrapes in a row (--max-failures 3)" \
  timeout 30 "$PFI" record --url "http://127.0.0.1:1/metrics" --count 1 --interval 0.05 --max-failures 3 -o "$T/dead.prom"
[ "$(grep -c 'warning: scrape .* failed' "$T/err")" -eq 2 ] || fail "2 warnings then the error"; ok
[ ! -e "$T/dead.prom" ] || fail "the empty file record created was left"; ok
expect_error 1 "gave up after 10 failed scrapes in a row (--max-failures 10)" \
  timeout 30 "$PFI" record --url "http://127.0.0.1:1/metrics" --count 1 --interval 0.01 -o "$T/dead.prom"
# the scrapes written before giving up stay
cp "$T/mine.prom" "$T/g.prom"
expect_status 0 timeout 30 "$PFI" record --url "$URL" --interval 0.05 --count 2 -o "$T/g.prom"
expect_error 1 "gave up after 2 failed" timeout 30 "$PFI" record --url "http://127.0.0.1:1/metrics" --interval 0.05 --max-failures 2 -o "$T/g.prom"
[ "$(grep -c '^# pfi-scrape-time ' "$T/g.prom")" -eq 2 ] && head -1 "$T/g.prom" | grep -q '^# mine$' || fail "earlier content lost"; ok

# the recording is prometheus telemetry a run directory can use
mkdir -p "$T/run"; cp "$T/b.prom" "$T/run/tel.prom"
t0=$(awk '/^# pfi-scrape-time/ {print int($3/1000); exit}' "$T/b.prom")
awk -v t0="$t0" 'BEGIN { for (i = -5; i < 40; i++) printf "{\"t_s\": %.2f, \"tokens_per_s\": %d}\n", t0 + i * 0.05, 1000 + i }' >"$T/run/steps.jsonl"
cat >"$T/run/run.json" <<JSON
{"group": "rec", "gpu_model": "H200", "gpus": 2, "cap_w": 700, "interval_s": 0.05,
 "telemetry": [{"path": "tel.prom", "format": "prometheus"}], "steplog": "steps.jsonl"}
JSON
expect_status 0 "$PFI" ingest --sustain 1 --fb-threshold-gib 1 "$T/run"
p=$(csv_field "$T/out" group rec power_w)
awk -v p="$p" 'BEGIN { exit !(p > 1000 && p < 1200) }' || fail "recorded power $p"; ok

expect_error 2 "--url is required" "$PFI" record -o "$T/x.prom"
expect_error 2 "-o FILE is required" "$PFI" record --url "$URL"
# a malformed URL is a usage error, and nothing is created
expect_error 2 "--url 'htp:/bad': must start with http:// or https://" timeout 30 "$PFI" record --url htp:/bad --count 1 -o "$T/u.prom"
expect_error 2 "must start with http:// or https://" timeout 30 "$PFI" record --url "localhost:$port/metrics" -o "$T/u.prom"
expect_error 2 "--url 'http://a b/'" timeout 30 "$PFI" record --url "http://a b/" -o "$T/u.prom"
[ ! -e "$T/u.prom" ] || fail "a usage error created the output file"; ok
expect_error 2 "--max-failures" "$PFI" record --url "$URL" --max-failures 0 -o "$T/u.prom"

# ---- an agent with TLS and a read token, as docs/deploy.md deploys it ----
: "${PFI_AGENT:?}"
command -v openssl >/dev/null || fail "openssl is needed (scripts/bootstrap.sh test)"
P=$T/pki; mkdir -p "$P"
ossl() { openssl "$@" >>"$P/openssl.log" 2>&1 || { cat "$P/openssl.log" >&2; fail "openssl $1 failed"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.pem" -days 2 -subj "/CN=pfi test CA"
ossl req -newkey rsa:2048 -nodes -keyout "$P/agent.key" -out "$P/agent.csr" -subj "/CN=127.0.0.1"
printf 'subjectAltName=IP:127.0.0.1\n' >"$P/san.ext"
ossl x509 -req -in "$P/agent.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -out "$P/agent.pem" -days 2 -extfile "$P/san.ext"
new_token "$T/atok" "$T/rtok"
start_daemon agent "$T/agent.log" "$T/a.port" "$PFI_AGENT" --backend "sim:gpus=2,load=0,state=$T/hw.json" \
  --listen 127.0.0.1:0 --port-file "$T/a.port" --token-file "$T/atok" --read-token-file "$T/rtok" \
  --tls-cert "$P/agent.pem" --tls-key "$P/agent.key" --state-file "$T/a.state" --interval 0.1 --log "$T/agent.log"
AURL=https://127.0.0.1:$DPORT/metrics
# without the CA: the certificate is not trusted (the system's CAs do not
# know this one). What is asserted is what stays the same on every machine
# and load (issue 39): exit 1, the URL named, nothing written. The TLS
# library's wording is not (curl's, GnuTLS's or OpenSSL's, and under load
# the per-scrape timeout, by default the 0.05 s interval, could end the
# handshake first: "err lacks 'certificate'"); --timeout 10 keeps the
# refusal the certificate's, and the next check shows the CA is what was
# missing: with --ca-file the same agent answers (401 without the token).
# Every scrape of the TLS agent has --timeout 10 for the same reason (a
# 0.05 s scrape timeout under stress-ng ended the 401 check too).
expect_error 1 "gave up after 2 failed" timeout 60 "$PFI" record --url "$AURL" --token-file "$T/rtok" --interval 0.05 --timeout 10 --max-failures 2 -o "$T/t.prom"
contains "$T/err" "$AURL: gave up after 2 failed scrapes in a row"
contains "$T/err" "0 scrapes written to $T/t.prom, which was removed"
[ ! -e "$T/t.prom" ] || fail "a failed recording left its empty file"; ok
# the CA but no token: the agent answers 401, and the error says so
expect_error 1 "gave up after 2 failed" timeout 60 "$PFI" record --url "$AURL" --ca-file "$P/ca.pem" --interval 0.05 --timeout 10 --max-failures 2 -o "$T/t.prom"
contains "$T/err" "401"
# both: whole scrapes of the agent's series, and no token in the file
expect_status 0 timeout 60 "$PFI" record --url "$AURL" --ca-file "$P/ca.pem" --token-file "$T/rtok" --interval 0.1 --timeout 10 --count 2 -o "$T/t.prom"
[ "$(grep -c '^# pfi-scrape-time ' "$T/t.prom")" -eq 2 ] || fail "2 scrapes of the TLS agent expected"; ok
[ "$(grep -c '^pfi_gpu_power_watts{gpu="' "$T/t.prom")" -eq 4 ] || fail "2 GPUs x 2 scrapes of pfi_gpu_power_watts"; ok
lacks "$T/t.prom" "$(cat "$T/rtok")"
contains "$T/err" "2 scrapes written"
# the control token works too (the agent's rule); a wrong one is refused
expect_status 0 timeout 60 "$PFI" record --url "$AURL" --ca-file "$P/ca.pem" --token-file "$T/atok" --interval 0.1 --timeout 10 --count 1 -o "$T/t2.prom"
new_token "$T/wrong"
expect_error 1 "401" timeout 60 "$PFI" record --url "$AURL" --ca-file "$P/ca.pem" --token-file "$T/wrong" --interval 0.05 --timeout 10 --max-failures 1 -o "$T/t3.prom"
# wrong use: --ca-file with http (2), a CA file that is not there, a token others can read (1); nothing created
expect_error 2 "--ca-file applies to an https:// --url" "$PFI" record --url "$URL" --ca-file "$P/ca.pem" -o "$T/u.prom"
expect_error 1 "--ca-file $P/none.pem: No such file or directory" "$PFI" record --url "$AURL" --ca-file "$P/none.pem" -o "$T/u.prom"
cp "$T/rtok" "$T/open.tok"; chmod 644 "$T/open.tok"
expect_error 1 "chmod 600" "$PFI" record --url "$AURL" --ca-file "$P/ca.pem" --token-file "$T/open.tok" -o "$T/u.prom"
[ ! -e "$T/u.prom" ] || fail "a refused recording created its file"; ok

# ---- the token over plain http only to loopback (pfi_url_secret_ok): 127.1
# reaches the fixture but is not written as loopback ----
ALT=http://127.1:$port/metrics
PFI_ALLOW_INSECURE_HTTP=0 expect_error 1 "--url $ALT: plain http to a non-loopback host would send the token in cleartext" \
  "$PFI" record --url "$ALT" --token-file "$T/rtok" --count 1 -o "$T/u.prom"
[ ! -e "$T/u.prom" ] || fail "a refused recording created its file"; ok
expect_status 0 timeout 30 "$PFI" record --url "$ALT" --token-file "$T/rtok" --allow-insecure-http --interval 0.05 --count 1 -o "$T/i1.prom"
PFI_ALLOW_INSECURE_HTTP=1 expect_status 0 timeout 30 "$PFI" record --url "$ALT" --token-file "$T/rtok" --interval 0.05 --count 1 -o "$T/i2.prom"
# loopback and no token need neither
expect_status 0 timeout 30 "$PFI" record --url "$URL" --token-file "$T/rtok" --interval 0.05 --count 1 -o "$T/i3.prom"
expect_status 0 timeout 30 "$PFI" record --url "$ALT" --interval 0.05 --count 1 -o "$T/i4.prom"
done_ok
