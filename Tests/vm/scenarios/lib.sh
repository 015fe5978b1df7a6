# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for scenario scripts (sourced).

# wait_for_line FILE REGEX SECONDS: waits until FILE has a line matching REGEX.
wait_for_line() {
    local file=$1 regex=$2 deadline=$(( $(date +%s) + $3 ))
    until grep -Eq -- "$regex" "$file" 2>/dev/null; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "FAIL: no line matching '$regex' in $(basename "$file") after $3 s"
            tail -n 20 "$file" 2>/dev/null | sed 's/^/    /'
            return 1
        fi
        sleep 0.2
    done
}

# elapsed: seconds since the scenario started (for the timing lines).
SCENARIO_START=$(date +%s.%N)
elapsed() { awk -v a="$SCENARIO_START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
