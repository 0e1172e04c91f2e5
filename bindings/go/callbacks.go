// SPDX-License-Identifier: BSD-3-Clause

// The Go functions C calls back (events, the release of an event handler,
// auto-extension at-risk notices and losses), kept in a file of their own: a
// file with //export may only declare in its preamble.

//go:build cgo

package redlock

// #include <stdint.h>
// #include "redlock.h"
import "C"

import "runtime/cgo"

// rlGoEvent delivers one event to a client's WithEventHandler handler; it
// runs on the thread of the round, with the C lock's mutex held.
//
//export rlGoEvent
func rlGoEvent(ev *C.redlock_event, handle C.uintptr_t) {
	cgo.Handle(handle).Value().(*hookTarget).deliver(ev)
}

// rlGoEventFree lets a client's handler go: C calls it once, when the C
// client and its last lock are freed (on the goroutine freeing them), after
// which no event can come.
//
//export rlGoEventFree
func rlGoEventFree(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}

// rlGoLost reports an auto-extended lock's at-risk notice (REDLOCK_EATRISK,
// with the validity then left) or its loss; it runs on the client's
// background thread.
//
//export rlGoLost
func rlGoLost(code C.int, message *C.char, validityMs C.int64_t, handle C.uintptr_t) {
	lt := cgo.Handle(handle).Value().(*lossTarget)
	err := &Error{Op: "auto-extend", Resource: lt.name, Code: int(code), Detail: C.GoString(message)}
	if code == C.REDLOCK_EATRISK {
		lt.t.risk(lt.gen, int64(validityMs), err)
		return
	}
	lt.t.lose(lt.gen, err)
}

// rlGoLostFree deletes a loss callback's handle: C calls it once no loss
// can be told with it (the auto-extension was replaced, stopped, released
// or freed), on whichever thread ended it.
//
//export rlGoLostFree
func rlGoLostFree(handle C.uintptr_t) {
	cgo.Handle(handle).Delete()
}
