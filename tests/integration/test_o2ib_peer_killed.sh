#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A peer killed mid-transfer over o2ib (shm provider): sc_peer_killed of
# tests/integration/scenarios.sh, which the VM lane runs unchanged between its x86_64 and ppc64le
# nodes on verbs (there the VM is killed). n1 (4 KiB pages) writes 1 MiB RPCs to n2 (64 KiB pages)
# on 127.185.0.{1,2}@o2ib; n2 is SIGKILLed once data flows: n1's peer show must say n2 is down within
# the o2ib timeout (5 s) + 5 s and stay down, the brw must fail with classified errors only; n2 is
# started again: n1 pings it (peer show: up) and writes 1 MiB to it again.
set -u
source "${SRC:-$(dirname "$0")/../..}/tests/integration/lib.sh"
ul_init

ul_o2ib_pair 185 5

ul_scenarios o2ib n1="$(ul_addr 185 1)@o2ib" n2="$(ul_addr 185 2)@o2ib"
sc_ping n1 n2
sc_peer_killed n1 n2 5 5
ul_step "PASS"
