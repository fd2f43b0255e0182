#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Run a program under the seccomp part of ulnetd@.service, as systemd would install it, for the
package lane (tests/pkg/run.sh) on machines whose PID 1 is not systemd:

  SystemCallFilter=@system-service, SystemCallErrorNumber=EPERM: any other call fails with EPERM
  SystemCallArchitectures=native: calls of another ABI kill the process (libseccomp's default)
  RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK: socket() of any other family fails
      with EAFNOSUPPORT
  MemoryDenyWriteExecute=yes: mmap(PROT_WRITE|PROT_EXEC), mprotect/pkey_mprotect(PROT_EXEC) fail
  RestrictNamespaces=yes: unshare() and setns() fail

usage: sandbox.py PROGRAM ARGS...  The calls of @system-service are systemd's own list (`systemd-analyze
syscall-filter`, its groups expanded). Needs no_new_privs or CAP_SYS_ADMIN (setpriv --no-new-privs
before it). Debian python3-seccomp."""
import errno
import os
import socket
import sys

import subprocess

import seccomp


def group(name, seen):
    """The calls of systemd's syscall group @name, its nested groups expanded."""
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True,
                         check=True).stdout.splitlines()[1:]
    calls = set()
    for w in (line.strip() for line in out):
        if not w or w.startswith("#"):
            continue
        if w.startswith("@"):
            if w not in seen:
                seen.add(w)
                calls |= group(w, seen)
        else:
            calls.add(w)
    return calls


names = group("@system-service", set())
f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
allowed = 0
for n in sorted(set(names)):
    try:
        seccomp.resolve_syscall(seccomp.Arch.NATIVE, n)
    except (ValueError, RuntimeError, OSError):
        continue  # not a call of this architecture (arm_fadvise64_64 on x86_64)
    if n in ("socket", "mmap", "mprotect", "pkey_mprotect", "unshare", "setns"):
        continue  # restricted below
    try:
        f.add_rule(seccomp.ALLOW, n)
    except (ValueError, RuntimeError, OSError):
        continue  # a name libseccomp knows but cannot filter on this architecture
    allowed += 1
for fam in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):
    f.add_rule(seccomp.ALLOW, "socket", seccomp.Arg(0, seccomp.EQ, fam))
# any other family (the default action would say EPERM; systemd says EAFNOSUPPORT)
for fam in range(0, 46):
    if fam not in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK):
        f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.EQ, fam))
PROT_WRITE, PROT_EXEC = 0x2, 0x4
f.add_rule(seccomp.ALLOW, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, PROT_WRITE | PROT_EXEC, 0))
f.add_rule(seccomp.ALLOW, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, PROT_WRITE | PROT_EXEC, PROT_WRITE))
f.add_rule(seccomp.ALLOW, "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, PROT_WRITE | PROT_EXEC, PROT_EXEC))
for n in ("mprotect", "pkey_mprotect"):
    f.add_rule(seccomp.ALLOW, n, seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, 0))
# unshare and setns: not allowed (the default action, EPERM)
print(f"sandbox: {allowed} calls of @system-service allowed, socket() for AF_UNIX AF_INET AF_INET6 "
      f"AF_NETLINK, no W+X memory, no namespaces", file=sys.stderr)
f.load()
os.execv(sys.argv[1], sys.argv[1:])
