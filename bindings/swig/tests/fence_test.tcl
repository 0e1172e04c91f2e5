# SPDX-License-Identifier: BSD-3-Clause
# fence_test.tcl: docs/fencing.md's Tcl example (a fenced write to a Redis key through the C
# library's script), run word for word on a harness node as the store, then a late writer refused
# (tclsh fence_test.tcl path/to/redlock.so).
load [lindex $argv 0] Redlock

source [file join [file dirname [file normalize [info script]]] testutil.tcl]

# A small RESP client on one node: the store the example writes to.
proc resp_read {sock} {
    set line [string trimright [gets $sock] "\r"]
    set rest [string range $line 1 end]
    switch -- [string index $line 0] {
        + - : { return $rest }
        - { return -code error $rest }
        {$} {
            if {$rest < 0} { return "" }
            set data [read $sock $rest]
            read $sock 2
            return [encoding convertfrom utf-8 $data]
        }
        * {
            set out {}
            for {set i 0} {$i < $rest} {incr i} { lappend out [resp_read $sock] }
            return $out
        }
        default { return -code error "not a RESP reply: $line" }
    }
}
proc redis {args} {
    set out "*[llength $args]\r\n"
    foreach a $args {
        set b [encoding convertto utf-8 $a]
        append out "\$[string length $b]\r\n$b\r\n"
    }
    puts -nonewline $::store $out
    flush $::store
    return [resp_read $::store]
}

set nodes [split $env(REDLOCK_TEST_NODES) ,]
regexp {^redis://([^:/]+):(\d+)} [lindex $nodes 0] -> host port
set store [socket $host $port]
fconfigure $store -translation binary -buffering full

redis SCRIPT FLUSH                      ;# the example's first EVALSHA meets NOSCRIPT, then EVAL
# --8<-- docs/fencing.md tcl
# One fenced operation through the C library's script: EVALSHA, and EVAL when the store lacks it.
proc fenced {token keys args} {
    set words [list [llength $keys] {*}$keys $token $::REDLOCK_FENCE_RETENTION_MS {*}$args]
    if {[catch {redis EVALSHA [Redlock_fenceScriptSha1] {*}$words} reply]} {
        if {![string match NOSCRIPT* $reply]} { return -code error $reply }
        set reply [redis EVAL [Redlock_fenceScript] {*}$words]
    }
    return $reply
}
set options [new_Options]
$options setFencing 1
set client [new_Redlock $nodes $options]
set lock [$client acquire orders 30000 $REDLOCK_WAIT_DEFAULT]
set token [$lock fencingToken]
set fkey [Redlock_fenceKey orders]      ;# {orders}:fence, in the slot of {orders}:... keys
fenced $token [list $fkey] advance      ;# a late write of the previous holder fails from now on
set total [redis GET orders:total]
fenced $token [list $fkey orders:total] set [expr {($total eq "" ? 0 : $total) + 1}]
$lock close
# -->8--

check {$token >= 1} "the lock's token $token"
check {$fkey eq "\{orders\}:fence"} "fence key $fkey"
check {[redis GET orders:total] eq "1"} "the fenced write landed: [redis GET orders:total]"
check {[redis GET $fkey] eq $token} "the fence is the token: [redis GET $fkey]"
check {[redis PTTL $fkey] > 0} "the fence expires after its retention"

# The next holder writes; the previous holder's late write is refused, naming both tokens.
set lock2 [$client acquire orders 30000 $REDLOCK_WAIT_DEFAULT]
set token2 [$lock2 fencingToken]
check {$token2 > $token} "next token $token2 > $token"
fenced $token2 [list $fkey orders:total] set 2
set rc [catch {fenced $token [list $fkey orders:total] set 99} msg]
check {$rc == 1 && [string match "FENCED *" $msg]} "late write refused: rc=$rc '$msg'"
check {[Redlock_fenceRefusal $msg 0] == $token && [Redlock_fenceRefusal $msg 1] == $token2} \
    "the refusal names both tokens: $msg"
check {[redis GET orders:total] eq "2"} "nothing written by the refused write"
check {[Redlock_fenceRefusal "ERR something else" 0] == 0} "another error is no refusal"
# An equal token is the same holder: applied.
fenced $token2 [list $fkey orders:total] incrby 5
check {[redis GET orders:total] eq "7"} "equal token applied"
$lock2 close
rename $lock ""
rename $lock2 ""
delete_Options $options
delete_Redlock $client

# The SQL statements of a fenced write, from the C library (redlock_fence_sql).
check {[Redlock_fenceSql $REDLOCK_FENCE_SQL_READ $REDLOCK_SQL_QMARK my.table {id} {} fence 5] eq
       {SELECT "fence" FROM "my"."table" WHERE "id" = ?}} "fenceSql: the fence read"
set rc [catch {Redlock_fenceSql $REDLOCK_FENCE_SQL_UPDATE $REDLOCK_SQL_QMARK t {id} {id} fence 5} msg]
check {$rc == 1 && [lrange $::errorCode 0 1] eq {REDLOCK REDLOCK_EINVAL} && [string match {*"id" is named twice*} $msg]} \
    "fenceSql: a clash refused with C's reason: $msg"

# The block above is the docs' example, word for word.
proc block {text start end} {
    set i [string first $start $text]
    if {$i < 0} { return "" }
    set i [expr {[string first "\n" $text $i] + 1}]
    return [string range $text $i [expr {[string first $end $text $i] - 1}]]
}
set top [file dirname [file dirname [file dirname [file dirname [file normalize [info script]]]]]]
set f [open [file join $top docs fencing.md]]
set docs [read $f]
close $f
set f [open [info script]]
set self [read $f]
close $f
set want [block $docs "```tcl" "```"]
check {$want ne "" && $want eq [block $self "# --8<-- docs/fencing.md tcl" "# -->8--"]} \
    "docs/fencing.md's Tcl example is the block run here"

close $store
puts "$passed passed, $failed failed"
exit [expr {$failed > 0}]
