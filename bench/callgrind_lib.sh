# SPDX-License-Identifier: MIT
# Sourced by bench/tcp_callgrind.sh and bench/o2ib_callgrind.sh, after tests/integration/lib.sh's
# ul_init: cg_wrapper writes $UL_TMP/ulnetd-cg, which runs the real ulnetd ($REAL, the ULNETD ul_init
# chose) under valgrind --tool=callgrind into $CG (callgrind_control -d adds .N dumps beside it).
cg_wrapper()
{
	command -v callgrind_control >/dev/null || ul_fail "valgrind not installed"
	CG=$UL_TMP/callgrind.out
	REAL=$ULNETD
	cat >"$UL_TMP/ulnetd-cg" <<EOS
#!/bin/sh
exec valgrind --tool=callgrind --callgrind-out-file=$CG --dump-instr=no "$REAL" "\$@"
EOS
	chmod +x "$UL_TMP/ulnetd-cg"
}
