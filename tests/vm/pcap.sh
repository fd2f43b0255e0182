# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The VM lane's look at the wire: qemu's filter-dump of the x86 VM's netdev, decoded by tshark on
# the host (its LNet dissector, testbed-notes §1). Sourced by tests/vm/run.
#
# vm_pcap_check PCAP IPA IPB CASES: one "vm lane: pcap ..." line per assertion; sets PCAP_PASSED and
# PCAP_FAILED.
#   tcp cases : LNet messages over socklnd (tcp port 988) decode with both guests' NIDs.
#   o2ib cases: RoCEv2 (udp 4791) frames carry o2iblnd messages: CONNREQ with 56 bytes (kib_msg
#               header + connparams), IMMEDIATE, PUT_REQ, PUT_ACK, PUT_DONE.

vm_pcap_case()
{
	local status=$1
	shift
	echo "vm lane: pcap $status $*"
	if [[ $status == ok ]]; then
		PCAP_PASSED=$((PCAP_PASSED + 1))
	else
		PCAP_FAILED=$((PCAP_FAILED + 1))
	fi
}

vm_pcap_check()
{
	local pcap=$1 ipa=$2 ipb=$3 cases=$4 frames fields n t name
	PCAP_PASSED=0 PCAP_FAILED=0
	if ! command -v tshark >/dev/null; then
		vm_pcap_case FAIL "no tshark on the host (scripts/setup.sh installs it)"
		return
	fi
	if [[ ! -s $pcap ]]; then
		vm_pcap_case FAIL "qemu wrote no packet dump at $pcap"
		return
	fi
	# one tshark pass (the dump holds hundreds of MB): per frame the UDP ports, the IP addresses, the
	# LNet header's type, NID addresses and LND types, the o2iblnd message's type and size
	local all
	all=$(tshark -r "$pcap" -T fields -E occurrence=a -E aggregator=' ' -e udp.srcport -e udp.dstport \
		-e ip.src -e ip.dst -e lnet.msg_type -e lnet.nid.addr -e lnet.nid.type -e lnet.ib.type \
		-e lnet.ib.nob -e frame.time_relative 2>/dev/null)
	frames=$(wc -l <<<"$all")
	# not a case: the longest silence on the link (a starved VM shows here, e.g. a guest's qemu
	# getting no CPU on a loaded host: nothing on the wire, then the same transfer resumes)
	# (from the first LNet message on: the boots before it are quiet by nature)
	awk -F'\t' '!on && ($5 != "" || $8 != "") {on = 1; p = $10} on && $10 - p > g {g = $10 - p; at = p} on {p = $10}
		END {printf "vm lane: pcap: longest silence on the link after the first LNet message %.1f s, from %.1f s into the dump\n", g, at}' <<<"$all"
	if [[ ,$cases, == *,tcp,* ]]; then
		# one line per decoded LNet message: type, the addresses of its dest and src NIDs, their LND
		# types (2: socklnd); tcp port 988 is lnet's in tshark
		fields=$(awk -F'\t' -v a="$ipa" -v b="$ipb" '$5 != "" && (($3 == a && $4 == b) || ($3 == b && $4 == a)) {print $5 "\t" $6 "\t" $7}' <<<"$all")
		local -A per=()
		local ab ba
		for t in 0:ACK 1:PUT 2:GET 3:REPLY; do
			per[${t#*:}]=$(awk -F'\t' -v t="${t%%:*}" '$1 == t' <<<"$fields" | wc -l)
		done
		ab=$(awk -F'\t' -v n="$ipb $ipa" '$2 == n && $3 == "2 2"' <<<"$fields" | wc -l)
		ba=$(awk -F'\t' -v n="$ipa $ipb" '$2 == n && $3 == "2 2"' <<<"$fields" | wc -l)
		if ((per[PUT] > 0 && per[GET] > 0 && per[REPLY] > 0 && ab > 0 && ba > 0)); then
			vm_pcap_case ok "tcp: $frames frames; LNet over socklnd decoded: PUT ${per[PUT]} GET ${per[GET]} REPLY ${per[REPLY]} ACK ${per[ACK]}; $ab from $ipa@tcp to $ipb@tcp, $ba back"
		else
			vm_pcap_case FAIL "tcp: $frames frames, but tshark decoded PUT ${per[PUT]} GET ${per[GET]} REPLY ${per[REPLY]} ACK ${per[ACK]}; $ab from $ipa@tcp to $ipb@tcp, $ba back"
		fi
	fi
	if [[ ,$cases, == *,o2ib,* ]]; then
		# o2iblnd message types (kib_msg ibm_type) and what each must show
		fields=$(awk -F'\t' '($1 == 4791 || $2 == 4791) && $8 != "" {print $8 "\t" $9}' <<<"$all")
		n=$(awk -F'\t' '$1 == 4791 || $2 == 4791' <<<"$all" | wc -l)
		if ((n == 0)); then
			vm_pcap_case FAIL "o2ib: no RoCEv2 (udp 4791) frame on the link"
		else
			vm_pcap_case ok "o2ib: $n RoCEv2 frames"
		fi
		# CONNREQ travels in the CM REQ's private data: 56 bytes (48 header + 8 connparams)
		n=$(awk -F'\t' '$1 == "0xc0" && $2 == 56' <<<"$fields" | wc -l)
		if ((n > 0)); then
			vm_pcap_case ok "o2ib: CONNREQ with 56 bytes of private data x$n"
		else
			vm_pcap_case FAIL "o2ib: no CONNREQ with 56 bytes of private data decoded"
		fi
		for t in 0xd1:IMMEDIATE 0xd2:PUT_REQ 0xd4:PUT_ACK 0xd5:PUT_DONE; do
			name=${t#*:}
			n=$(awk -F'\t' -v t="${t%%:*}" '{k = split($1, a, " "); for (i = 1; i <= k; i++) if (a[i] == t) n++} END {print n + 0}' <<<"$fields")
			if ((n > 0)); then
				vm_pcap_case ok "o2ib: $name x$n"
			else
				vm_pcap_case FAIL "o2ib: no $name decoded"
			fi
		done
	fi
}
