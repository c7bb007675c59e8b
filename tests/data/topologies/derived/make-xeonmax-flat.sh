#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# Makes Intel-SapphireRapids-2xXeonMax9460.flat-hwloc22.xml from hwloc's
# CPUID view of the same machine (../Intel-SapphireRapids-2xXeonMax9460.xml,
# hwloc's test data: real cores and caches, one NUMA node for the machine).
# It is what hwloc 2.2 (no memory attributes, no HBM subtype; both came
# later) records of that machine in quadrant + flat mode, as far as the
# memory goes. NOT a recording of a machine: the NUMA part is written here:
#   - per package, its DDR5 node (OS 0, 1: 256 GiB each) and its HBM node
#     (OS 2, 3: 64 GiB, the 9460's four HBM2e stacks), both with the
#     package's CPU set (hwloc attaches a CPU-less node where its ACPI
#     initiator is), memory children of the package;
#   - NUMA distances as Linux reports them in that mode (ACPI SLIT): 10 own
#     DDR, 13 own HBM, 21 the other socket's DDR, 23 its HBM;
#   - no subtype, no memory attribute, no MemoryTier info.
# Every other object is the source's, with nodesets rewritten.
#   make-xeonmax-flat.sh SOURCE.xml > OUT.xml
set -eu
src=${1:?usage: make-xeonmax-flat.sh Intel-SapphireRapids-2xXeonMax9460.xml}
GiB=1073741824
awk -v ddr=$((256 * GiB)) -v hbm=$((64 * GiB)) '
function node(os, set, mem, ns) {
    printf "      <object type=\"NUMANode\" os_index=\"%d\" cpuset=\"%s\" complete_cpuset=\"%s\" nodeset=\"%s\" complete_nodeset=\"%s\" local_memory=\"%s\"/>\n", os, set, set, ns, ns, mem
}
/<object type="NUMANode"/ && pkg < 0 { next }        # the machine-wide node
/<object type="Machine"/ { gsub(/nodeset="0x00000001"/, "nodeset=\"0x0000000f\"") }
/<object type="Package"/ {
    pkg++; set = $0; sub(/.* cpuset="/, "", set); sub(/".*/, "", set)
    ns = pkg == 0 ? "0x00000005" : "0x0000000a"; pending = 1
}
pkg >= 0 { gsub(/nodeset="0x00000001"/, "nodeset=\"" ns "\"") }
pending && !/<info / && !/<object type="Package"/ {
    node(pkg, set, ddr, sprintf("0x%08x", 1 * 2 ^ pkg))
    node(pkg + 2, set, hbm, sprintf("0x%08x", 1 * 2 ^ (pkg + 2)))
    pending = 0
}
/^<\/topology>/ {
    v = "10 21 13 23 21 10 23 13 13 23 10 23 23 13 23 10 "
    printf "  <distances2 type=\"NUMANode\" nbobjs=\"4\" kind=\"5\" indexing=\"os\">\n"
    printf "    <indexes length=\"8\">0 1 2 3 </indexes>\n"
    printf "    <u64values length=\"%d\">%s</u64values>\n", length(v), v
    printf "  </distances2>\n"
}
{ print }
' pkg=-1 "$src"
