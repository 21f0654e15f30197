#!/usr/bin/env python3
"""The processes of an e2e case: every process whose environment holds the
case's HOME (ralph, the agent, whatever the agent started), one line each:

    pid ppid pgid sid state command line

    procs.py WORK     # WORK: the case's folder (out/<tool>/<scenario>)

Zombies are left out (they run nothing). Standard library only; Linux /proc.
"""

import os
import sys


def stat_fields(pid):
    with open("/proc/%s/stat" % pid) as f:
        data = f.read()
    # comm may hold spaces and parentheses: the fields start after the last ')'.
    rest = data[data.rindex(")") + 2:].split()
    return {"state": rest[0], "ppid": rest[1], "pgid": rest[2], "sid": rest[3]}


def main():
    marker = ("HOME=%s/home" % os.path.abspath(sys.argv[1])).encode()
    me = str(os.getpid())
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        if pid == me:
            continue
        try:
            with open("/proc/%s/environ" % pid, "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            st = stat_fields(pid)
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                args = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            # One line each, short: a shell's command line can be a whole script.
            args = " ".join(args.split())
            if len(args) > 160:
                args = args[:157] + "..."
        except (OSError, ValueError):
            continue
        if st["state"] in ("Z", "X"):
            continue
        print(pid, st["ppid"], st["pgid"], st["sid"], st["state"], args)


if __name__ == "__main__":
    main()
