# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 corevia developers
#
# One rank of mpi4py's own test suite (test/runtests.py of the mpi4py
# sdist), run by tests/fabric/mpi4py.sh under mpirun:
#
#   python3 mpi4py_run.py TESTDIR LOGDIR EXCLUDES [runtests.py options...]
#
# TESTDIR: the sdist's test/ directory. LOGDIR: where this rank writes its
# verbose unittest log (rank-N.log: one line per test, the traceback of
# each failure). EXCLUDES: a file of "REGEX<TAB>REASON" lines; a test whose
# id (module.Class.method) REGEX matches (re.search) is not run but
# reported skipped with "excluded: REASON". The options after it are
# runtests.py's own (-i/-e modules, -k patterns, --thread-level, ...),
# and --no-recv-mprobe (mpi4py.rc.recv_mprobe = False).
#
# Prints one line on stdout when the suite has run:
#   mpi4py rank R/N: run T passed P failures F errors E skipped S excluded X
# and exits 0 only when F and E are 0 and at least one test passed.
import os
import re
import sys
import unittest


def main():
    if len(sys.argv) < 4:
        sys.stderr.write("usage: mpi4py_run.py TESTDIR LOGDIR EXCLUDES [runtests options]\n")
        return 2
    testdir, logdir, excludes = sys.argv[1:4]
    rules = []
    with open(excludes) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            pat, _, reason = line.partition("\t")
            rules.append((re.compile(pat), reason or "excluded"))

    sys.path.insert(0, testdir)
    sys.dont_write_bytecode = True
    import runtests

    parser = runtests.getoptionparser()
    # --token=...: the runner's mark on the command line (leftovers.sh)
    rest = [a for a in sys.argv[4:] if not a.startswith("--token=")]
    # --no-recv-mprobe: mpi4py's own rc switch, receive pickled objects by
    # probe + recv instead of Mprobe + Mrecv (Open MPI 4.1.4's ofi MTL never
    # acknowledges a synchronous send received by MPI_Mrecv: see mpi4py.sh)
    if "--no-recv-mprobe" in rest:
        rest.remove("--no-recv-mprobe")
        import mpi4py
        mpi4py.rc.recv_mprobe = False
    options, args = parser.parse_args(rest + ["--no-builddir"])
    runtests.setup_python(options)
    runtests.setup_unittest(options)
    runtests.import_package(options, "mpi4py")
    from mpi4py import MPI
    rank = MPI.COMM_WORLD.Get_rank()
    size = MPI.COMM_WORLD.Get_size()
    suite = runtests.load_tests(options, args)

    excluded = []

    def exclude(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                exclude(t)
                continue
            for pat, reason in rules:
                if pat.search(t.id()):
                    name = t._testMethodName
                    setattr(t, name, unittest.skip("excluded: " + reason)(getattr(t, name)))
                    excluded.append(t.id())
                    break
    exclude(suite)

    os.makedirs(logdir, exist_ok=True)
    with open(os.path.join(logdir, "rank-%d.log" % rank), "w", buffering=1) as log:
        runner = unittest.TextTestRunner(stream=log, verbosity=2)
        res = runner.run(suite)
    nskip = len(res.skipped)
    nbad = len(res.failures) + len(res.errors) + len(res.unexpectedSuccesses)
    passed = res.testsRun - nskip - nbad - len(res.expectedFailures)
    sys.stdout.write("mpi4py rank %d/%d: run %d passed %d failures %d errors %d skipped %d "
                     "excluded %d\n" % (rank, size, res.testsRun, passed, len(res.failures),
                                        len(res.errors), nskip - len(excluded), len(excluded)))
    sys.stdout.flush()
    return 0 if nbad == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
