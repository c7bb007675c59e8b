#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
"""mpi_budget.py A B C MSGS: instructions per message (M) and per empty poll
(E) for each library, from three callgrind files of scripts/mpi-budget.sh:
A and B with N1 and N2 iterations (native peer), C with N2 (slowed peer).
MSGS: messages (or round trips) of B less those of A. Per library, self
cost = C0 + messages * M + polls * E, polls = calls of opal_progress."""
import collections
import re
import sys

GROUPS = [  # first match wins; the column the table prints
    ('osu_mpi', 'app'), ('libmpi.so', 'openmpi'), ('mca_pml_', 'openmpi'),
    ('mca_mtl_', 'openmpi'), ('mca_bml_', 'openmpi'), ('mca_btl_', 'openmpi'),
    ('libopen-pal', 'openmpi'), ('libopen-rte', 'openmpi'), ('ld-linux', 'openmpi'),
    ('libcorevia-fi', 'provider'), ('libcorevia', 'core'), ('libfabric', 'provider'),
    ('libc.so', 'libc'),
]
COLS = ['openmpi', 'provider', 'core', 'libc']


def group(obj):
    for key, g in GROUPS:
        if key in (obj or ''):
            return g
    return 'other'


def parse(path):
    """Self cost per object, and calls per called function name."""
    names = {'ob': {}, 'fn': {}}
    selfc, calls = collections.Counter(), collections.Counter()
    ob, cfn, skip = None, None, False

    def name(kind, s):
        m = re.match(r'\((\d+)\)(?: (.*))?', s)
        if not m:
            return s
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind].get(m.group(1), '?')

    with open(path, errors='replace') as f:
        for line in f:
            if not line.strip():
                continue
            c = line[0]
            if c.isdigit() or c in '+-*':
                if skip:       # the inclusive cost of the call just named
                    skip = False
                    continue
                parts = line.split()
                if len(parts) >= 2:
                    selfc[ob] += int(parts[1])
            elif line.startswith('ob='):
                ob = name('ob', line[3:].strip())
            elif line.startswith('fn='):
                name('fn', line[3:].strip())
            elif line.startswith('cob='):
                name('ob', line[4:].strip())
            elif line.startswith('cfn='):
                cfn = name('fn', line[4:].strip())
            elif line.startswith('calls='):
                calls[cfn] += int(line[6:].split()[0])
                skip = True
    return selfc, calls


def main():
    if len(sys.argv) != 5:
        sys.exit('usage: mpi_budget.py A B C MSGS')
    runs = []
    for p in sys.argv[1:4]:
        selfc, calls = parse(p)
        g = collections.Counter()
        for o, v in selfc.items():
            g[group(o)] += v
        runs.append((g, calls['opal_progress']))
    msgs = float(sys.argv[4])
    (ga, pa), (gb, pb), (gc, pc) = runs
    if pc == pb or msgs <= 0:
        sys.exit('mpi_budget.py: the slowed run made as many polls as the other; no E to separate')
    print('polls per message, native peer: %.2f' % ((pb - pa) / msgs))
    print('%-10s %9s %9s' % ('', 'M', 'E'))
    tm = te = 0.0
    for k in COLS + ['other']:
        e = (gc[k] - gb[k]) / (pc - pb)
        m = ((gb[k] - ga[k]) - (pb - pa) * e) / msgs
        if k in COLS or abs(m) >= 0.5:
            print('%-10s %9.1f %9.1f' % (k, m, e))
            tm, te = tm + m, te + e
    print('%-10s %9.1f %9.1f   (osu_mpi itself left out)' % ('total', tm, te))


if __name__ == '__main__':
    main()
