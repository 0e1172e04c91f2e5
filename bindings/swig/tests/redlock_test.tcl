# SPDX-License-Identifier: BSD-3-Clause
# redlock_test.tcl: loads the Tcl module SWIG built from redlock.i and uses it
# against the harness nodes (tclsh redlock_test.tcl path/to/redlock.so).
load [lindex $argv 0] Redlock

source [file join [file dirname [file normalize [info script]]] testutil.tcl]
# Runs script, which must fail with errorCode {REDLOCK name}.
proc expect_error {name what script} {
    set rc [catch {uplevel 1 $script} msg]
    check [expr {$rc == 1 && [lrange $::errorCode 0 1] eq [list REDLOCK $name]}] \
        "$what: expected $name, got rc=$rc '$msg' errorCode=$::errorCode"
    return $msg
}

set nodes [split $env(REDLOCK_TEST_NODES) ,]

check [regexp {^\d+\.\d+\.\d+$} [Redlock_version]] "version [Redlock_version]"

set a [new_Redlock $nodes NULL]
set b [new_Redlock $nodes NULL]
check {[$a nodeCount] == 3} "nodeCount"

# Acquire on one client, contention from the other, release, then success.
set l [$a acquire tcl-res 10000 $REDLOCK_WAIT_DEFAULT]
check [$l isHeld] "held after acquire"
check {[$l validityMs] > 9000} "validity [$l validityMs]"
check {[$l resource] eq "tcl-res"} "resource"
set msg [expect_error REDLOCK_ENOTACQUIRED "contention" {$b tryAcquire tcl-res 10000}]
check [string match "REDLOCK_ENOTACQUIRED: *" $msg] "message starts with the error name: $msg"
$l extend 20000
check {[$l validityMs] > 19000} "validity after extend"
$l release
check {![$l isHeld]} "not held after release"
expect_error REDLOCK_ESTATE "release twice" {$l release}
$l close                         ;# nothing held: frees the handle
rename $l ""                     ;# close disowned it, so this frees nothing

set l2 [$b tryAcquire tcl-res 10000]
check [$l2 isHeld] "other client acquires after release"
$l2 close
rename $l2 ""

# Options: key prefix and retry count; the client copies them.
set o [new_Options]
$o configure -retryCount 0
$o setKeyPrefix "tcl:"
check {[$o cget -retryCount] == 0} "retryCount"
set p [new_Redlock $nodes $o]
delete_Options $o
set l3 [$p acquire pre 10000 0]
set plain [new_Redlock $nodes NULL]
expect_error REDLOCK_ENOTACQUIRED "prefixed key taken" {$plain tryAcquire tcl:pre 10000}
$l3 close
rename $l3 ""

# Fencing tokens, auto-extension and the per-node report.
set fo [new_Options]
$fo setFencing 1
check {[$fo getFencing]} "fencing round trip"
set f [new_Redlock $nodes $fo]
delete_Options $fo
set f1 [$f acquire tcl-fenced 10000 0]
set t1 [$f1 fencingToken]
check {$t1 >= 1} "token $t1"
$f1 release
check {[$f1 fencingToken] == 0} "no token after release"
$f1 acquire 600 0
check {[$f1 fencingToken] > $t1} "next token [$f1 fencingToken] > $t1"
check {[$f nodeUrl 0] eq [lindex $nodes 0]} "nodeUrl"
for {set i 0} {$i < 3} {incr i} {
    check {[$f1 nodeOutcome $i] == $REDLOCK_NODE_OK || [$f1 nodeOutcome $i] == $REDLOCK_NODE_NOT_WAITED} "node $i OK"
    check {[$f1 nodeCode $i] == 0 && ([$f1 nodeMessage $i] eq "" || [$f1 nodeOutcome $i] == $REDLOCK_NODE_NOT_WAITED)} "node $i no error"
}
check {[$f1 nodeOutcome 0] != $REDLOCK_NODE_OK || [$f1 nodeRttUs 0] > 0} "rtt of an OK node"
check {[$f1 nodeOutcome 3] == $REDLOCK_EINVAL} "index out of range"
$f1 autoExtend 0
after 2000                       ;# more than three 600 ms TTLs
check {[$f1 isHeld]} "auto-extended lock still held"
check {[$f1 stopAutoExtend]} "stopAutoExtend true when on"
check {![$f1 stopAutoExtend]} "and false the second time"
$f1 close
rename $f1 ""
set f2 [$f newLock tcl-fenced]
expect_error REDLOCK_ESTATE "autoExtend of a lock not held" {$f2 autoExtend 0}
$f2 close
rename $f2 ""

# Per-lock policy (LockOptions): the lock's own retries on the client's connections.
set h [$plain newLock tcl-pol]
set lo [$h getOptions]
check {[$lo cget -retryCount] == 3} "a lock starts with its client's retryCount"
$lo configure -retryCount 0 -retryDelayMs 0 -retryJitterMs 0
$h setOptions $lo
check {[[$h getOptions] cget -retryCount] == 0} "setOptions round trip"
$lo configure -driftFactor 0.7
set msg [expect_error REDLOCK_EINVAL "driftFactor 0.7" {$h setOptions $lo}]
check [string match "*drift_factor*" $msg] "reason: $msg"
delete_LockOptions $lo
set holder [$a acquire tcl-pol 10000 0]
set msg [expect_error REDLOCK_ENOTACQUIRED "no retries" {$h acquire 10000 $REDLOCK_WAIT_DEFAULT}]
check {![string match "*attempts*" $msg]} "one attempt: $msg"
$holder close
rename $holder ""
$h close
rename $h ""

# Wake-up and fair mode: client flags, per-lock booleans, the listener's state.
set wo [new_Options]
check {![$wo getWake] && ![$wo getFair]} "wake off, fair off by default (waiters poll)"
$wo setWake 1
$wo setFair 1
set w [new_Redlock $nodes $wo]
delete_Options $wo
set wl [$w newLock tcl-wake]
set lo [$wl getOptions]
check {[$lo getWake] && [$lo getFair]} "a lock inherits wake and fair"
$lo setWake 0
$wl setOptions $lo
check {[[$wl getOptions] getWake]} "fair mode still wakes (C's redlock_flags_wake)"
$lo setFair 0
$wl setOptions $lo
check {![[$wl getOptions] getWake]} "per-lock wake round trip"
delete_LockOptions $lo
$wl close
rename $wl ""
check {[$w listenerState 0] == $REDLOCK_LISTENER_OFF} "no listener before a wait"
check {[$w listenerMessage 0] eq ""} "no listener message"
expect_error REDLOCK_EINVAL "listener index out of range" {$w listenerState 3}
delete_Redlock $w

# Bad arguments are Tcl errors, not crashes.
set msg [expect_error REDLOCK_EINVAL "bad port" {new_Redlock {redis://127.0.0.1:abc} NULL}]
check [string match "*port*" $msg] "errbuf detail: $msg"
expect_error REDLOCK_EINVAL "duplicate node" {new_Redlock [list [lindex $nodes 0] [lindex $nodes 0]] NULL}
expect_error REDLOCK_EINVAL "no nodes" {new_Redlock {} NULL}
# TLS settings next to a plain redis:// URL are refused (nothing goes out in clear text).
set t [new_Options]
$t setTlsServerName localhost
check {[$t getTlsServerName] eq "localhost"} "tlsServerName round trip"
expect_error REDLOCK_EINVAL "TLS options with redis://" {new_Redlock $nodes $t}
delete_Options $t
expect_error REDLOCK_EINVAL "empty resource" {$a acquire "" 1000 0}
expect_error REDLOCK_EINVAL "ttl 0" {$a acquire x 0 0}

# The primitives beyond the mutex come to Tcl through the same wrappers.
# A semaphore of limit 2: two permits, a third refused, the limit checked.
set s1 [$a newSemaphore tcl-sem 2 1]
set s2 [$b newSemaphore tcl-sem 2 1]
set s3 [$b newSemaphore tcl-sem 2 1]
$s1 acquire 10000 0
$s2 acquire 10000 0
check {[$s1 isHeld] && [$s2 isHeld]} "two permits of a limit-2 semaphore"
expect_error REDLOCK_ENOTACQUIRED "a third permit" {$s3 acquire 10000 0}
set msg [expect_error REDLOCK_EINVAL "another limit" {set s4 [$b newSemaphore tcl-sem 3 1]; $s4 acquire 10000 0}]
check [string match "*limit*" $msg] "the limit mismatch is named: $msg"
$s1 release
$s3 acquire 10000 0
check [$s3 isHeld] "a released permit is taken"
foreach s [list $s2 $s3] { $s close }
# A read-write lock: readers share, a writer waits for them, downgrade keeps it shared.
set r1 [$a newReadLock tcl-rw]
set r2 [$b newReadLock tcl-rw]
set w [$b newWriteLock tcl-rw]
$r1 acquire 10000 0
$r2 acquire 10000 0
check {[$r1 isHeld] && [$r2 isHeld]} "two readers at once"
expect_error REDLOCK_ENOTACQUIRED "a writer while readers hold" {$w acquire 10000 0}
$r1 release
$r2 release
$w acquire 10000 3000
check [$w isHeld] "the writer once the readers left"
expect_error REDLOCK_ENOTACQUIRED "a reader while the writer holds" {$r1 acquire 10000 0}
$w downgrade
$r1 acquire 10000 0
check [$r1 isHeld] "a reader beside the downgraded writer"
foreach l [list $r1 $w] { $l release }
# An election: the leader is read as "present term revision value".
set e1 [$a newElection tcl-elect]
set e2 [$b newElection tcl-elect]
$e1 campaign one 10000 0
check [$e1 isLeader] "the first campaigner leads"
expect_error REDLOCK_ENOTACQUIRED "a second campaigner" {$e2 campaign two 10000 0}
set line [$e2 leaderLine]
check {[lindex $line 0] == 1 && [lindex $line 1] == [$e1 term] && [lindex $line 3] eq "one"} "leader line: $line"
$e1 resign
$e2 campaign two 10000 3000
check {[$e2 isLeader] && [$e2 term] > [lindex $line 1]} "the next leader has a higher term"
$e2 resign
# observeLine LINE WAITMS: the next state after LINE, or "" once WAITMS ran out with no change.
set line [$e1 leaderLine]
set t0 [clock milliseconds]
set next [$e1 observeLine $line 300]
set ms [expr {[clock milliseconds] - $t0}]
check {$next eq "" && $ms >= 290 && $ms < 800} "observeLine with no change: '$next' after $ms ms"
$e2 campaign three 10000 0
set next [$e1 observeLine $line 5000]
check {[lindex $next 0] == 1 && [lindex $next 1] == [$e2 term] && [lindex $next 3] eq "three"} "observeLine sees the campaign: $next"
$e2 resign
set next [$e1 observeLine $next 5000]
check {[lindex $next 0] == 0 && [lindex $next 1] > [lindex $line 1]} "observeLine sees the resign: $next"
delete_Election $e1
delete_Election $e2
# A multi-resource lock: the names as a Tcl list, held together, all or none.
set m [$a newMultiLock {tcl-m2 tcl-m1}]
check {[$m resource] eq "tcl-m1,tcl-m2"} "multi lock's canonical name [$m resource]"
$m acquire 10000 $REDLOCK_WAIT_NONE
check [$m isHeld] "multi lock held"
expect_error REDLOCK_ENOTACQUIRED "a lock on one of the set's names" {$b tryAcquire tcl-m1 10000}
$m release
$m close
rename $m ""
set l3 [$b tryAcquire tcl-m1 10000]
check [$l3 isHeld] "one of the names after the set's release"
$l3 close
expect_error REDLOCK_EINVAL "a name twice" {$a newMultiLock {q q}}
expect_error REDLOCK_EINVAL "no names" {$a newMultiLock {}}
# Many locks' attempts at once: "" where held, the error's text where not.
set held [$b tryAcquire tcl-many-1 10000]
set ms {}
foreach n {tcl-many-0 tcl-many-1 tcl-many-2} { lappend ms [$a newLock $n] }
set res [$a tryAcquireMany $ms 10000]
check {[llength $res] == 3 && [lindex $res 0] eq "" && [lindex $res 2] eq ""} "tryAcquireMany: $res"
check {[string match "REDLOCK_ENOTACQUIRED: *" [lindex $res 1]]} "the held one says why: [lindex $res 1]"
check {[[lindex $ms 0] isHeld] && ![[lindex $ms 1] isHeld] && [[lindex $ms 2] isHeld]} "held as the list says"
check {[$a tryAcquireMany {} 10000] eq ""} "no locks, no results"
set bad [$a tryAcquireMany [list [lindex $ms 1]] 0]
check {[string match "REDLOCK_EINVAL: *" [lindex $bad 0]]} "a zero TTL is the lock's own error: $bad"
set msg [expect_error REDLOCK_EINVAL "a lock twice" {$a tryAcquireMany [list [lindex $ms 0] [lindex $ms 0]] 10000}]
check {[string match "*is given twice*" $msg]} "C's reason: $msg"
set msg [expect_error REDLOCK_EINVAL "a lock of another client" {$a tryAcquireMany [list [lindex $ms 1] $held] 10000}]
check {[string match "*belongs to another client*" $msg]} "C's reason: $msg"
set msg [expect_error REDLOCK_EINVAL "not a lock" {$a tryAcquireMany [list [lindex $ms 1] $a] 10000}]
check {[string match "*element 1 of the list is not a Lock*" $msg]} "which element: $msg"
foreach l [concat $ms [list $held]] { $l close; rename $l "" }

foreach c [list $a $b $p $plain $f] {
    delete_Redlock $c
}
puts "$passed passed, $failed failed"
exit [expr {$failed == 0 ? 0 : 1}]
