#!/usr/bin/env python3
"""ab.py: one program under several setups, alternating rounds, medians and ratios.

Usage: bench/ab.py [--rounds N] [--key KEY] --setup NAME=ENV ... -- PROGRAM ARGS...
Each setup is a name and space-separated VAR=VALUE pairs that are added to the environment
(LD_PRELOAD=... for another allocator or build; '-' for none). Rounds alternate the setups, so
the machine's noise falls on all of them alike. The figure of a run is the RESULT line's KEY
(ns_per_op, ms, ops_per_s, ...), or the wall time in ms when KEY is 'wall' or missing, or the
process's CPU time in ms (user + system, all its threads) when KEY is 'cpu': on a shared machine
it leaves out the time the program waited for a CPU.
Prints each setup's median and its ratio to the first setup's (above 1: slower than the first,
for times; for rates the ratio is first/setup, so above 1 is slower too)."""
import os
import re
import resource
import statistics
import subprocess
import sys
import time


def run_once(env_add, cmd, key):
    env = dict(os.environ)
    env.update(env_add)
    t0 = time.perf_counter()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL,
                         text=True, check=False).stdout
    wall = (time.perf_counter() - t0) * 1000.0
    if key == 'cpu':
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) * 1000.0
    if key != 'wall':
        m = re.search(r'\b' + re.escape(key) + r'=([0-9.]+)', out)
        if m:
            return float(m.group(1))
    return wall


def main():
    args = sys.argv[1:]
    rounds, key, setups = 9, 'wall', []
    while args and args[0] != '--':
        a = args.pop(0)
        if a == '--rounds':
            rounds = int(args.pop(0))
        elif a == '--key':
            key = args.pop(0)
        elif a == '--setup':
            name, _, spec = args.pop(0).partition('=')
            env = dict(kv.split('=', 1) for kv in spec.split() if '=' in kv)
            setups.append((name, env))
        else:
            sys.exit(__doc__)
    cmd = args[1:]
    if not cmd or not setups:
        sys.exit(__doc__)
    figs = {name: [] for name, _ in setups}
    for r in range(rounds):
        order = setups if r % 2 == 0 else setups[::-1]
        for name, env in order:
            figs[name].append(run_once(env, cmd, key))
    rate = key.endswith("_per_s") or key in ("rps", "ops")
    base = statistics.median(figs[setups[0][0]])
    print(f"# {' '.join(cmd)}: {key}, medians of {rounds} alternating rounds")
    for name, _ in setups:
        med = statistics.median(figs[name])
        ratio = base / med if rate else med / base
        spread = (max(figs[name]) - min(figs[name])) / med * 100
        print(f"{name:>14}  {med:12.3f}  ratio {ratio:.3f}  (spread {spread:.0f}%)")


if __name__ == '__main__':
    main()
