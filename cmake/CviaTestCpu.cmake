# SPDX-License-Identifier: BSD-3-Clause
# The suite's CPU budget (scripts/test.sh; DESIGN.md, "Testing on one
# machine"). Every test takes one slot of the resource "cpus"
# (RESOURCE_GROUPS cpus:1) except the few below, which spend their time
# waiting: on a timeout they exist to see expire, on a rate-limited link,
# on a sleeping peer. scripts/test.sh gives ctest as many cpus slots as
# the machine has cores (--resource-spec-file) and twice as many jobs, so
# the waiting tests run beside the CPU-bound ones instead of holding a
# core each while they wait. A plain `ctest -jN` without a resource spec
# ignores RESOURCE_GROUPS: there nothing changes.
#
# A test belongs here only when its CPU time (all its processes: a cgroup
# of its own, cpuacct.usage) is a small part of its run time (a fifth or
# less; forge 0.2-0.3), in every pass that runs it. Figures: CPU seconds
# measured 2026-11-26 on the 2-vCPU EPYC KVM guest, normal build / ASan
# build, against the test's time in the fresh run at fbbd74e (normal /
# ASan / TSan; load stated in BENCHMARKS.md, "The suite's time"):
#   func.hosts.{udp,eth}.silent{,-rx}.np2   0.16-0.27 CPU s of 4.7-5.2 s:
#       a 2 s CVIA_DGRAM_PEER_TIMEOUT expires on a stopped rank
#   func.hosts.{udp,eth}.stream-rate.np2,   0.7-1.0 CPU s of 2.2-6.9 s:
#   func.hosts.eth.stream-rate-ring64.np2   100 Mbit/s through tc tbf
#   func.hosts.*.idle-mixed.np4             0.13 CPU s of 0.7-1.0 s: ranks
#       that sleep until a peer's message (what the test is about)
#   func.idle.np4                           0.07 CPU s of 2.6 s: idle ranks
#   tools.net_pingpong                      0.30 CPU s of 2.6 s
#   fabric.dyn-hosts.forge                  1.0 / 1.8 / 2.2 (TSan) CPU s of
#       3.5 / 9.5 / 9.6 s: a forged name's HELLO gets no answer, and the
#       insert fails when CVIA_BOOT_TIMEOUT (3 x MULT s) runs out
set(CVIA_WAITING_TESTS
    func.hosts.udp.silent.np2 func.hosts.udp.silent-rx.np2
    func.hosts.eth.silent.np2 func.hosts.eth.silent-rx.np2
    func.hosts.udp.stream-rate.np2 func.hosts.eth.stream-rate.np2
    func.hosts.eth.stream-rate-ring64.np2
    func.hosts.tcp.idle-mixed.np4 func.hosts.udp.idle-mixed.np4 func.hosts.eth.idle-mixed.np4
    func.idle.np4 tools.net_pingpong fabric.dyn-hosts.forge)

# cvia_test_cpu(): at the end of each CMakeLists.txt that adds tests (a
# test's properties can be set only in its own directory before CMake 3.28)
function(cvia_test_cpu)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t ${tests})
    if(NOT t IN_LIST CVIA_WAITING_TESTS)
      set_property(TEST ${t} PROPERTY RESOURCE_GROUPS "cpus:1")
    endif()
  endforeach()
endfunction()
