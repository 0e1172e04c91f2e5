# SPDX-License-Identifier: BSD-3-Clause
# refusals_test.tcl: issue 36 in Tcl, a node that refuses the client is never taken for a busy
# lock. A mutex and a semaphore permit, given a 10 s wait, fail within 2 s with REDLOCK_EAUTH
# when the nodes want a password and get none, and with REDLOCK_EPERM (naming the command, no
# key left) for an ACL user denied scripting. Runs against the first three harness nodes
# (tclsh refusals_test.tcl path/to/redlock.so), whose ACL users and requirepass it changes and
# puts back.
load [lindex $argv 0] Redlock

source [file join [file dirname [file normalize [info script]]] testutil.tcl]

set all [split $env(REDLOCK_TEST_NODES) ,]
set nodes [lrange $all 0 2]
set PW refusals-Pw1

# One command on a fresh connection to node i (AUTH pw first unless pw is ""). Returns the
# reply; an error reply is an error.
proc node {i pw args} {
    regexp {^redis://([^:/]+):(\d+)} [lindex $::nodes $i] -> host port
    set s [socket $host $port]
    fconfigure $s -translation binary -buffering full
    try {
        if {$pw ne ""} {
            send $s AUTH $pw
            reply $s
        }
        send $s {*}$args
        return [reply $s]
    } finally {
        close $s
    }
}
proc send {s args} {
    puts -nonewline $s "*[llength $args]\r\n"
    foreach w $args {
        set b [encoding convertto utf-8 $w]
        puts -nonewline $s "\$[string length $b]\r\n$b\r\n"
    }
    flush $s
}
proc reply {s} {
    set line [string trimright [gets $s] \r]
    set rest [string range $line 1 end]
    switch -- [string index $line 0] {
        + { return $rest }
        - { error $rest }
        : { return $rest }
        $ {
            if {$rest < 0} { return "" }
            set b [read $s [expr {$rest + 2}]]
            return [encoding convertfrom utf-8 [string range $b 0 end-2]]
        }
        * {
            set out {}
            for {set k 0} {$k < $rest} {incr k} { lappend out [reply $s] }
            return $out
        }
        default { error "bad reply '$line'" }
    }
}

# Runs script, which must fail with errorCode {REDLOCK name} within 2 s; returns the message.
proc refused {name what script} {
    set t0 [clock milliseconds]
    set rc [catch {uplevel 1 $script} msg]
    set ms [expr {[clock milliseconds] - $t0}]
    check [expr {$rc == 1 && [lrange $::errorCode 0 1] eq [list REDLOCK $name]}] \
        "$what: expected $name, got rc=$rc '$msg' errorCode=$::errorCode"
    check [expr {$ms < 2000}] "$what: the refusal took $ms ms to end a 10 s wait: $msg"
    set named 0
    foreach u $::nodes {
        if {[string first [string range $u 8 end] $msg] >= 0} { set named 1 }
    }
    check $named "$what: no node named in: $msg"
    return $msg
}

proc lock_keys {res} {
    set out {}
    for {set i 0} {$i < 3} {incr i} {
        foreach k [node $i "" KEYS "*$res*"] {
            if {![string match *:fencing $k] && ![string match *:limit $k]} { lappend out "$i:$k" }
        }
    }
    return $out
}

# ---- no password: requirepass on the three nodes
for {set i 0} {$i < 3} {incr i} { node $i "" CONFIG SET requirepass $PW }
set c [new_Redlock $nodes NULL]
set msg [refused REDLOCK_EAUTH "mutex, no password" {$c acquire tcl-refused 5000 10000}]
check [string match "*this node needs a password*" $msg] "mutex: the cause in: $msg"
set s [$c newSemaphore tcl-refused-sem 3 1]
set msg [refused REDLOCK_EAUTH "semaphore, no password" {$s acquire 5000 10000}]
check [string match "*this node needs a password*" $msg] "semaphore: the cause in: $msg"
$s close
delete_Redlock $c
for {set i 0} {$i < 3} {incr i} { node $i $PW CONFIG SET requirepass "" }

# ---- an ACL user denied scripting
for {set i 0} {$i < 3} {incr i} {
    node $i "" ACL SETUSER tcl_noscript on ~* &* +@all >$PW -@scripting
}
set urls {}
foreach u $nodes { lappend urls [string map [list redis:// redis://tcl_noscript:$PW@] $u] }
set c [new_Redlock $urls NULL]
set msg [refused REDLOCK_EPERM "mutex, no scripting" {$c acquire tcl-noperm 5000 10000}]
check [regexp -nocase {\m(evalsha|eval|fcall)\M} $msg] "mutex: the refused command named in: $msg"
check {[llength [lock_keys tcl-noperm]] == 0} "mutex: keys left: [lock_keys tcl-noperm]"
set s [$c newSemaphore tcl-noperm-sem 3 1]
set msg [refused REDLOCK_EPERM "semaphore, no scripting" {$s acquire 5000 10000}]
check [regexp -nocase {\m(evalsha|eval|fcall)\M} $msg] "semaphore: the refused command named in: $msg"
check {[llength [lock_keys tcl-noperm-sem]] == 0} "semaphore: keys left: [lock_keys tcl-noperm-sem]"
check {[string first $PW $msg] < 0} "no password shown"
$s close
delete_Redlock $c
for {set i 0} {$i < 3} {incr i} { node $i "" ACL DELUSER tcl_noscript }

puts "$passed passed, $failed failed"
exit [expr {$failed == 0 && $passed > 0 ? 0 : 1}]
