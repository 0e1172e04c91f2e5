# SPDX-License-Identifier: BSD-3-Clause
# testutil.tcl: what the Tcl tests share: the pass/fail counters and check (sourced by each).
set passed 0
set failed 0
# cond is an expression, evaluated in the caller.
proc check {cond what} {
    if {[uplevel 1 [list expr $cond]]} {
        incr ::passed
    } else {
        incr ::failed
        puts "FAIL: $what"
    }
}
