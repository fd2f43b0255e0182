#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulnetd refuses bad configuration files and command lines: non-zero exit, one line on stderr naming
# the file, the line and the reason, no control socket left behind. Needs no addresses.
set -euo pipefail
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init
T=$UL_TMP
n=0

# expect_bad STATUS REGEX < YAML: ulnetd -c on the YAML exits with STATUS and one line matching REGEX.
expect_bad()
{
	local want=$1 re=$2 dir
	n=$((n + 1))
	dir=$T/c$n
	mkdir -p "$dir"
	cat >"$dir/node.yaml"
	ul_run "$dir/out" "$dir/err" timeout 10 "$ULNETD" -c "$dir/node.yaml" --control "$dir/ctl.sock"
	(( UL_STATUS == want )) || ul_fail "case $n (/$re/): status $UL_STATUS, want $want; stderr: $(cat "$dir/err")"
	ul_one_line "$dir/err" "$re"
	[[ ! -e $dir/ctl.sock ]] || ul_fail "case $n left a control socket"
	ul_step "ok: $(cat "$dir/err")"
}

ul_step "malformed YAML"
expect_bad 1 "^ulnetd: $T/c1/node.yaml:3: YAML syntax error: " <<'EOF'
node:
    pid: 12345
      page_size: 4096
EOF
expect_bad 1 '/node\.yaml:3: YAML syntax error: .*flow sequence started at line 2\)$' <<'EOF'
net:
    - [net type: tcp
EOF

ul_step "unknown keys"
expect_bad 1 "/node\\.yaml:8: unknown key 'peer_credit' in tunables \\(known: peer_timeout, peer_credits, peer_buffer_credits, credits, peer_queue_msgs, peer_queue_bytes\\)$" <<'EOF'
node:
    pid: 12345
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          tunables:
              peer_credit: 8
EOF
ul_step "lnd tunables checked against the LND's table"
expect_bad 1 "/node\\.yaml:6: unknown key 'conns_per_peers' in lnd tunables \\(known: accept_port, accept, .*nonblk_zcack\\)$" <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          lnd tunables:
              conns_per_peers: 2
EOF
expect_bad 1 "/node\\.yaml:6: 'conns_per_peer' out of range \\[1, 16\\]: 17$" <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          lnd tunables:
              conns_per_peer: 17
EOF
expect_bad 1 "/node\\.yaml:6: accept 'any': expected one of none, all, secure$" <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          lnd tunables:
              accept: any
EOF
expect_bad 1 "/node\\.yaml:6: nagle 'maybe': expected 0 or 1 \\(true/false, yes/no, on/off\\)$" <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          lnd tunables:
              nagle: maybe
EOF
expect_bad 1 "/node\\.yaml:3: unknown key 'routes' at top level$" <<'EOF'
net:
    - net type: lo
routes: []
EOF
expect_bad 1 "/node\\.yaml:2: unknown key 'page-size' in node$" <<'EOF'
node:
    page-size: 4096
EOF
expect_bad 1 "/node\\.yaml:5: unknown key 'interface' in local NI\\(s\\)$" <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcp
          interface: lo
EOF

ul_step "bad values"
expect_bad 1 "/node\\.yaml:3: bad page_size 3000: " <<'EOF'
node:
    pid: 12345
    page_size: 3000
EOF
expect_bad 1 "/node\\.yaml:2: bad page_size 4194304: " <<'EOF'
node:
    page_size: 4194304
EOF
expect_bad 1 "/node\\.yaml:2: expected an integer for 'pid', got 'lustre'$" <<'EOF'
node:
    pid: lustre
EOF
expect_bad 1 "/node\\.yaml:4: bad nid '127\\.0\\.0\\.2@tcpx': " <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 127.0.0.2@tcpx
EOF
expect_bad 1 "/node\\.yaml:4: bad nid '300\\.0\\.0\\.2@tcp': " <<'EOF'
net:
    - net type: tcp
      local NI(s):
        - nid: 300.0.0.2@tcp
EOF
expect_bad 1 "/node\\.yaml:2: missing 'net type' in net entry$" <<'EOF'
net:
    - local NI(s):
        - nid: 127.0.0.2@tcp
EOF

ul_step "an NI the core refuses: the line of the NI and the core's reason"
# The core logs its own line with the detail first; ulnetd's line (file:line, NI, errno text) is last.
mkdir -p "$T/ni"
cat >"$T/ni/node.yaml" <<'EOF'
net:
    - net type: o2ib
      local NI(s):
        - nid: 10.0.0.1@o2ib
EOF
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/ni/node.yaml" --control "$T/ni/ctl.sock"
(( UL_STATUS == 1 )) || ul_fail "refused NI: status $UL_STATUS; $(cat "$T/e")"
tail -n 1 "$T/e" | grep -Eq "^ulnetd: $T/ni/node\.yaml:4: cannot add NI 10\.0\.0\.1@o2ib: " ||
	ul_fail "refused NI: $(cat "$T/e")"
(( $(wc -l <"$T/e") <= 2 )) || ul_fail "refused NI: too many lines: $(cat "$T/e")"
[[ ! -e $T/ni/ctl.sock ]] || ul_fail "refused NI left a control socket"
ul_step "ok: $(tail -n 1 "$T/e")"

ul_step "missing control socket, missing file, bad command line"
mkdir -p "$T/nc"
printf 'net:\n    - net type: lo\n' >"$T/nc/node.yaml"
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/nc/node.yaml"
(( UL_STATUS == 1 )) || ul_fail "no control socket: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetd: $T/nc/node\\.yaml: no control socket"
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/nope.yaml" --control "$T/x.sock"
(( UL_STATUS == 1 )) || ul_fail "missing file: status $UL_STATUS"
ul_one_line "$T/e" "^ulnetd: $T/nope\\.yaml: cannot open: No such file or directory$"
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/nc/node.yaml" --control "$T/$(printf 'x%.0s' {1..120}).sock"
(( UL_STATUS == 1 )) || ul_fail "long socket path: status $UL_STATUS"
ul_one_line "$T/e" 'control socket path too long'
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" --control "$T/x.sock"
(( UL_STATUS == 2 )) || ul_fail "no -c: status $UL_STATUS"
grep -q '^ulnetd: no configuration file' "$T/e" || ul_fail "no -c: $(cat "$T/e")"
ul_run "$T/o" "$T/e" timeout 10 "$ULNETD" -c "$T/nc/node.yaml" --bogus
(( UL_STATUS == 2 )) || ul_fail "bad option: status $UL_STATUS"
"$ULNETD" --help >"$UL_TMP/help.txt" || ul_fail "--help: status $?" # a file: grep -q in a pipe may SIGPIPE it
grep -q '^usage: ulnetd' "$UL_TMP/help.txt" || ul_fail "--help"

ul_step "the same file with a good control socket runs"
ul_start_node good <"$T/nc/node.yaml"
ul_stop_node good
(( UL_STATUS == 0 )) || ul_fail "good node exit status $UL_STATUS"

ul_step "PASS"
