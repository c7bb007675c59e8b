# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the job runners (run.sh, mpirun.sh): what a job must never
# leave behind. leftovers TOKEN: waits (5 s at most) for the processes
# whose command line carries --token=TOKEN, kills and reports any that
# stay, reports and removes segments in /dev/shm whose creator is gone;
# returns 1 if it found anything.
leftovers() {
    local token=$1 bad=0 f pid suspects=""
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pgrep -f -- "--token=$token" >/dev/null || break
        sleep 0.5
    done
    if pgrep -f -- "--token=$token" >/dev/null; then
        echo "FAIL: processes left behind:"; pgrep -af -- "--token=$token"
        pkill -9 -f -- "--token=$token"
        bad=1
    fi
    # a segment of another test running at the same time may be seen in
    # the instant between its rank's reaping and its launcher's clean-up,
    # so a suspect counts only if it is still there a moment later; a file
    # of another user under our names (func.squat's squatter, running
    # beside us) is neither ours to report nor to remove
    for f in /dev/shm/cvia-$(id -u)-*; do
        [ -O "$f" ] || continue
        pid=$(basename "$f" | cut -d- -f3)
        kill -0 "$pid" 2>/dev/null || suspects="$suspects $f"
    done
    if [ -n "$suspects" ]; then
        sleep 2
        for f in $suspects; do
            [ -e "$f" ] && { echo "FAIL: segment left in /dev/shm: $f"; rm -f "$f"; bad=1; }
        done
    fi
    return $bad
}
