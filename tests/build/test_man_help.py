#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man pages (docs/man/*.scd) and the tools agree: every option and command a tool's --help
names is in its page, and every option and command the page's SYNOPSIS, OPTIONS and COMMANDS
sections name is in --help; every key the configuration reader and the NI/LND tunable tables know is
in ulnet.yaml(5). Each mismatch is one line naming the tool, the option or command, and the file to
update, so a tool that gains an option (or loses one) fails here until its page says so.

usage: test_man_help.py BUILD SRC"""
import re
import subprocess
import sys

BUILD, SRC = sys.argv[1], sys.argv[2]
TOOLS = {
    "ulnetd": BUILD + "/tools/ulnetd/ulnetd",
    "ulnetctl": BUILD + "/tools/ulnetctl/ulnetctl",
    "ulnet-selftest": BUILD + "/tools/ulnet-selftest/ulnet-selftest",
}
OPT = re.compile(r"(?<![\w$-])(--?[A-Za-z][\w-]*)")
problems = []


def scd_text(s):
    """scdoc source as the reader sees it: no bold stars, no underline underscores, no escapes."""
    s = s.replace("\\", "").replace("*", "")
    s = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", "", s)
    return re.sub(r"[ \t]+|\+\+\n", " ", s)


def sections(src, names):
    """The text of the page's top-level sections named in @names."""
    out, keep = [], False
    for line in src.splitlines():
        if line.startswith("# "):
            keep = line[2:].strip() in names
        elif keep:
            out.append(line)
    return "\n".join(out)


def has_word(text, w):
    return re.search(r"(?<![\w-])" + re.escape(w) + r"(?![\w-])", text) is not None


def help_commands(tool, text):
    cmds = set()
    if tool == "ulnetctl":
        in_cmds = False
        for line in text.splitlines():
            if line.strip() == "commands:":
                in_cmds = True
                continue
            if not in_cmds or not re.match(r"^  [a-z]", line):
                continue
            words = []
            for w in line.split():
                if not re.fullmatch(r"[a-z][a-z0-9_]*", w):
                    break
                words.append(w)
            cmds.add(" ".join(words))
    elif tool == "ulnet-selftest":
        for line in text.splitlines():
            if "ulnet-selftest" not in line and not re.match(r"^\s+\[", line):
                continue
            line = line.split("ulnet-selftest", 1)[-1]
            while re.search(r"\[[^\[\]]*\]", line):
                line = re.sub(r"\[[^\[\]]*\]", "", line)
            line = re.sub(r"\(.*?\)", "", line)
            for seg in line.split(" | "):
                m = re.match(r"\s*([a-z][a-z_]*)\b", seg)
                if m:
                    cmds.add(m.group(1))
    return cmds


def man_commands(src):
    """Definition-list terms of COMMANDS: the bold spans of lines starting with '*' that are not
    options."""
    cmds = set()
    for line in sections(src, {"COMMANDS"}).splitlines():
        if not line.startswith("*"):
            continue
        for span in re.findall(r"\*([^*]+)\*", line):
            span = span.replace("\\", "")
            if re.fullmatch(r"[a-z][a-z0-9_ ]*[a-z0-9_]", span):
                cmds.add(span)
    return cmds


for tool, exe in TOOLS.items():
    page = f"docs/man/{tool}.8.scd"
    src = open(f"{SRC}/{page}").read()
    text = scd_text(src)
    r = subprocess.run([exe, "--help"], capture_output=True, text=True)
    if r.returncode != 0:
        problems.append(f"{tool}: --help exited with {r.returncode}: {r.stderr.strip()}")
        continue
    help_text = r.stdout
    # "usable as ulnetd -c input": another tool's option, not this one's
    others = "|".join(re.escape(t) for t in TOOLS if t != tool)
    help_opts = set(OPT.findall(re.sub(r"(?<![\w-])(?:" + others + r")\s+--?[\w-]+", "", help_text)))
    for o in sorted(help_opts):
        if not has_word(text, o):
            problems.append(f"{tool}: option {o} is in --help but not in {page}")
    for k in sorted(set(re.findall(r"\b([a-z]+)=[A-Z]", help_text))):
        if not re.search(r"\b" + k + "=", text):
            problems.append(f"{tool}: test key {k}= is in --help but not in {page}")
    man_opts = set(OPT.findall(scd_text(sections(src, {"SYNOPSIS", "OPTIONS", "COMMANDS"}))))
    # -h/--help is accepted by every tool, whether its usage text lists it or not
    for o in sorted(man_opts - help_opts - {"-h", "--help"}):
        problems.append(f"{tool}: option {o} is in {page} (SYNOPSIS, OPTIONS or COMMANDS) but not in --help")
    hc = help_commands(tool, help_text)
    mc = man_commands(src)
    for c in sorted(hc - mc):
        problems.append(f"{tool}: command '{c}' is in --help but not in {page} (a '*{c}* ...' line in COMMANDS)")
    if tool != "ulnetd":
        for c in sorted(mc - hc):
            problems.append(f"{tool}: command '{c}' is in {page} (COMMANDS) but not in --help")
        if not hc:
            problems.append(f"{tool}: found no commands in --help (did its layout change? update {sys.argv[0]})")

# ulnet.yaml(5): every key the reader and the tunable tables know
page = "docs/man/ulnet.yaml.5.scd"
text = scd_text(open(f"{SRC}/{page}").read())
keys = set()
cf = open(f"{SRC}/src/config/config_file.c").read()
keys |= set(re.findall(r'strcmp\(ks2?, "([^"]+)"\)', cf))
m = re.search(r"global_keys\[\] = \{(.*?)\};", cf, re.S)
keys |= set(re.findall(r'"([^"]+)"', m.group(1))) if m else set()
for f, pats in {
    "src/core/tunable.c": [r'\{ "([a-z_]+)", ULNET_TUNABLE'],
    "src/lnd/tcp/tcp_lnd.c": [r'\b[IB]\(([a-z_]+),', r'\{ "([a-z_]+)", ULNET_TUNABLE'],
    "src/lnd/o2ib/o2ib_lnd.c": [r'\bT\(([a-z_]+),', r'\{ "([a-z_]+)", ULNET_TUNABLE', r'DEV\("([a-z_]+)"\)',
                                r'I\("device\.([a-z_]+)"'],
}.items():
    s = "\n".join(line for line in open(f"{SRC}/{f}").read().splitlines() if not line.startswith("#define"))
    found = set()
    for p in pats:
        found |= set(re.findall(p, s))
    if not found:
        problems.append(f"ulnet.yaml: no tunables found in {f} (did its table change? update {sys.argv[0]})")
    keys |= found
for k in sorted(keys):
    if not has_word(text, k):
        problems.append(f"ulnet.yaml: key '{k}' (src/config, the tunable tables) is not in {page}")

for p in problems:
    print("FAIL: " + p)
print(f"{len(problems)} mismatch(es) between --help, the config keys and docs/man")
sys.exit(1 if problems else 0)
