#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real Prometheus server scrapes a node during selftest brw runs (docs/metrics.md): n1
# (127.218.0.1) serves /metrics on 127.218.0.1:9669, Prometheus (Debian's prometheus package) listens
# on 127.218.0.3:9090 only, keeps its data in the temp dir and scrapes n1 every second. While it does,
# n2 (127.218.0.2) writes to n1 (n1 serves the bulk GETs: its GET round-trip histogram moves) and n1
# reads from n2 (n1 is the client: its selftest families move). Then, through Prometheus' HTTP API
# only: the target is up and was scraped in OpenMetrics (Prometheus' default choice, so its parser
# accepted our OpenMetrics text), the GET histogram's last sample equals what the endpoint says now,
# its buckets give a quantile, a counter's increase() is positive, a selftest run was seen active and
# the client RPC counter equals the console's own count. Skipped (77) when prometheus is not installed.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
source "${SRC:-$(dirname "$0")/../..}/tests/integration/sst_common.sh"
ul_require_root "its tcp nodes listen on port 988"
if ! command -v prometheus >/dev/null; then
	echo "SKIP: prometheus not installed (Debian package prometheus; scripts/setup.sh installs it)"
	exit 77
fi
ul_init
[[ -x $SST ]] || ul_fail "no ulnet-selftest at $SST"
sst_require_tcp 218
T=218
N1=$(ul_addr $T 1)@tcp
N2=$(ul_addr $T 2)@tcp
TARGET=$(ul_addr $T 1):9669
PROM=http://$(ul_addr $T 3):9090
PD=$UL_TMP/prometheus

ul_start_node n1 <<YAML
metrics:
    listen: $TARGET
net:
    - net type: tcp
      local NI(s):
        - nid: $N1
          interfaces: {0: lo}
YAML
sst_node n2 $T 2 65536

# Prometheus: killed on every exit path (the EXIT trap runs UL_ATEXIT; a SIGKILLed test takes it
# along through the parent-death signal)
prom_stop()
{
	local i
	[[ -n ${PROM_PID:-} ]] || return 0
	kill -TERM "$PROM_PID" 2>/dev/null
	for i in $(seq 100); do
		kill -0 "$PROM_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$PROM_PID" 2>/dev/null
	wait "$PROM_PID" 2>/dev/null
	PROM_PID=
}
UL_ATEXIT+=("prom_stop")
pfail() { ul_fail "$* (prometheus log: $(tail -c 1500 "$PD/log" 2>/dev/null))"; }

mkdir -p "$PD/data"
cat >"$PD/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ulnet
    static_configs:
      - targets: ['$TARGET']
YAML
promtool check config "$PD/prometheus.yml" >"$PD/check.log" 2>&1 || ul_fail "promtool check config: $(cat "$PD/check.log")"
setpriv --pdeathsig KILL prometheus --config.file="$PD/prometheus.yml" --storage.tsdb.path="$PD/data" \
	--web.listen-address="$(ul_addr $T 3):9090" --log.level=warn >"$PD/log" 2>&1 &
PROM_PID=$!

# api PATH [EXPR]: GET PROM/PATH (with query=EXPR when given); prints the JSON answer's "data"
api()
{
	"$UL_PYTHON" - "$PROM" "$1" "${2:-}" <<'PY'
import json, sys, urllib.parse, urllib.request
base, path, expr = sys.argv[1:4]
url = base + path + ("?" + urllib.parse.urlencode({"query": expr}) if expr else "")
try:
    with urllib.request.urlopen(url, timeout=5) as r:
        body = r.read()
except Exception as e:
    print("error: %s" % e, file=sys.stderr)
    sys.exit(1)
if path.startswith("/-/"):
    sys.exit(0)
j = json.loads(body)
if j.get("status") != "success":
    print("error: %s" % body[:300], file=sys.stderr)
    sys.exit(1)
print(json.dumps(j["data"]))
PY
}

# pq EXPR: the value of an instant query's one series (nothing when it has none; two fail)
pq()
{
	api /api/v1/query "$1" | "$UL_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
r = d["result"]
if d["resultType"] == "scalar":
    print(r[1])
elif len(r) > 1:
    sys.exit("more than one series: %s" % r)
elif r:
    print(r[0]["value"][1])'
}

# wait_for WHAT SECS CMD...: poll CMD until it succeeds, at most SECS seconds
wait_for()
{
	local what=$1 secs=$2 deadline
	shift 2
	deadline=$(( $(ul__now_ms) + secs * 1000 ))
	until "$@"; do
		kill -0 "$PROM_PID" 2>/dev/null || pfail "prometheus exited while waiting for $what"
		(( $(ul__now_ms) < deadline )) || pfail "$what: not within ${secs}s"
		sleep 0.1
	done
}

ul_step "prometheus ready, first scrape of $TARGET"
wait_for "prometheus ready" 60 api /-/ready
up_is_1() { [[ $(pq "up{job=\"ulnet\",instance=\"$TARGET\"}" 2>/dev/null) == 1 ]]; }
wait_for "first successful scrape (up == 1)" 30 up_is_1

ul_step "brw for 4 s: n2 writes to n1 (n1 serves GETs), n1 reads from n2 (n1 is the client)"
timeout 60 "$SST" --node "$(ul_sock n2)" --json brw write --from "$N2" --to "$N1" --size 64K --concurrency 4 \
	--duration 4 --check full >"$UL_TMP/w.json" 2>"$UL_TMP/w.json.err" &
wpid=$!
sst_run "$UL_TMP/r.json" n1 --json brw read --from "$N1" --to "$N2" --size 16K --concurrency 2 --duration 4 --check full
[[ $UL_STATUS == 0 ]] || ul_fail "brw read: $(cat "$UL_TMP/r.json" "$UL_TMP/r.json.err")"
wait "$wpid" || ul_fail "brw write: $(cat "$UL_TMP/w.json" "$UL_TMP/w.json.err")"
ul_json "$UL_TMP/w.json" "j['ok'] and j['rpcs'] > 0"
ul_json "$UL_TMP/r.json" "j['ok'] and j['rpcs'] > 0"
rpcs=$("$UL_PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["rpcs"])' "$UL_TMP/r.json")

# what the endpoint says now, traffic over: Prometheus' latest sample must come to the same
"$UL_PYTHON" - "http://$TARGET/metrics" "$UL_TMP/now.txt" <<'PY' || ul_fail "GET /metrics"
import sys, urllib.request
open(sys.argv[2], "wb").write(urllib.request.urlopen(sys.argv[1], timeout=10).read())
PY
lbl="net=\"tcp\",nid=\"$N1\""
gets=$(awk -v s="ulnet_get_rtt_seconds_count{$lbl}" 'index($0, s " ") == 1 { print $2 }' "$UL_TMP/now.txt")
(( gets > 0 )) || ul_fail "n1 served no GET: $(grep get_rtt_seconds_count "$UL_TMP/now.txt")"
sel="job=\"ulnet\",net=\"tcp\",nid=\"$N1\""
caught_up() { [[ $(pq "ulnet_get_rtt_seconds_count{$sel}" 2>/dev/null) == "$gets" ]]; }
wait_for "Prometheus' ulnet_get_rtt_seconds_count == $gets (the endpoint's)" 20 caught_up

ul_step "read back through /api/v1/query"
inf=$(pq "ulnet_get_rtt_seconds_bucket{$sel,le=\"+Inf\"}")
[[ $inf == "$gets" ]] || pfail "+Inf bucket $inf, count $gets"
inc=$(pq "increase(ulnet_get_rtt_seconds_count{$sel}[5m])")
"$UL_PYTHON" -c 'import sys; sys.exit(not float(sys.argv[1]) > 0)' "$inc" || pfail "increase(get count) = '$inc'"
p99=$(pq "histogram_quantile(0.99, sum by (le) (ulnet_get_rtt_seconds_bucket{$sel}))")
"$UL_PYTHON" -c 'import sys; v = float(sys.argv[1]); sys.exit(not 0 < v < 8.4)' "$p99" || pfail "p99 from the buckets: '$p99'"
sent=$(pq "increase(ulnet_sent_messages_total{$sel}[5m])")
"$UL_PYTHON" -c 'import sys; sys.exit(not float(sys.argv[1]) > 0)' "$sent" || pfail "increase(sent) = '$sent'"
ul_step "GET round trips $gets (p99 from the buckets ${p99}s), sent messages increase $sent"

active=$(pq 'max_over_time(ulnet_selftest_runs_active{job="ulnet"}[5m])')
[[ $active == 1 || $active == 2 ]] || pfail "selftest runs active never seen: '$active'"
ok=$(pq 'ulnet_selftest_rpcs_total{job="ulnet",result="ok"}')
[[ $ok == "$rpcs" ]] || pfail "ulnet_selftest_rpcs_total{result=ok} = '$ok', the console counted $rpcs"
last=$(pq 'ulnet_selftest_last_run_rpcs{job="ulnet",result="ok"}')
[[ $last == "$rpcs" ]] || pfail "ulnet_selftest_last_run_rpcs{result=ok} = '$last', want $rpcs"
ul_step "selftest: runs active up to $active, client RPCs ok $ok"

# OpenMetrics: Prometheus asks for it first; the endpoint counts what it served
om=$(pq 'ulnet_metrics_responses_total{job="ulnet",format="openmetrics"}')
"$UL_PYTHON" -c 'import sys; sys.exit(not float(sys.argv[1]) >= 3)' "${om:-0}" || pfail "OpenMetrics responses: '$om'"
api /api/v1/targets >"$PD/targets.json" || pfail "/api/v1/targets"
ul_json "$PD/targets.json" "[(t['health'], t['lastError']) for t in j['activeTargets']] == [('up', '')]"
dur=$(pq "scrape_duration_seconds{job=\"ulnet\"}")
samples=$(pq "scrape_samples_scraped{job=\"ulnet\"}")
ul_step "scrapes in OpenMetrics: $om; last scrape ${dur}s, $samples samples"
ul_step "ok"
