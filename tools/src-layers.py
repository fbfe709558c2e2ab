#!/usr/bin/env python3
"""src-layers.py [BUILD] -- the order of src/'s parts, checked.

A part is sh_NAME.c with sh_NAME.h (sh_NAME_internal.h and
sh_volatility_data.c are the private files of their part).  It depends on
another when one of its files includes the other's header, or its object
(BUILD/src/sh_NAME.o, default build) calls or reads a symbol the other's
defines (nm).  src/README.md names the parts from the bottom up; this
script fails, naming the arrow, when a part depends on one named after it,
when two parts depend on each other, or when a part is missing from the
list.
"""
import collections
import glob
import os
import re
import subprocess
import sys

PRIVATE = {'sh_config_internal': 'sh_config',
           'sh_store_internal': 'sh_store',
           'sh_volatility_data': 'sh_volatility'}


def part(name):
    return PRIVATE.get(name, name)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else 'build'
    deps = collections.defaultdict(set)
    for path in glob.glob('src/*.[ch]'):
        me = part(os.path.basename(path)[:-2])
        deps[me]
        for h in re.findall(r'#include "(sh_\w+)\.h"', open(path).read()):
            if os.path.exists('src/%s.h' % h) and part(h) != me:
                deps[me].add(part(h))
    defined, used = {}, collections.defaultdict(set)
    for obj in glob.glob(os.path.join(build, 'src', '*.o')):
        if not os.path.exists('src/' + os.path.basename(obj)[:-2] + '.c'):
            continue            # left by a file renamed since
        me = part(os.path.basename(obj)[:-2])
        out = subprocess.run(['nm', obj], capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'TDRBi':
                defined[f[2]] = me
            elif len(f) == 2 and f[0] == 'U':
                used[me].add(f[1])
    if not defined:
        sys.exit('src-layers: no objects in %s/src (run make)' % build)
    for me, syms in used.items():
        for s in syms:
            if s in defined and defined[s] != me:
                deps[me].add(defined[s])

    order = {}
    for name in re.findall(r'`(sh_\w+)`', open('src/README.md').read()):
        order.setdefault(name, len(order))
    bad = ['%s: not in src/README.md' % p for p in sorted(deps)
           if p not in order]
    for a in sorted(deps):
        for b in sorted(deps[a]):
            if a in deps[b] and a < b:
                bad.append('%s <-> %s: each depends on the other' % (a, b))
            if a in order and b in order and order[b] > order[a]:
                bad.append('%s -> %s: named after it' % (a, b))
    for line in bad:
        print('src-layers: ' + line, file=sys.stderr)
    if bad:
        sys.exit(1)
    print('src-layers: %d parts, every one above what it uses' % len(deps))


main()
