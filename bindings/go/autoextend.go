// SPDX-License-Identifier: BSD-3-Clause

// Auto-extension (redlock_lock_auto_extend): the client's background thread
// keeps a held lock alive; its at-risk notice, or its loss, ends the Mutex's
// LockedContext contexts.

//go:build cgo

package redlock

// #include <stdint.h>
// #include "redlock.h"
//
// extern void rlGoLost(int code, char *message, int64_t validity_ms, uintptr_t handle);
// extern void rlGoLostFree(uintptr_t handle);
// /* At risk, the validity then left goes with the notice: Go tells by it
//  * whether a later extension has ended the episode. */
// static void rl_go_lost(redlock_lock *lock, int code, const char *message, void *userdata)
// {
//     int64_t v = code == REDLOCK_EATRISK ? redlock_lock_validity_ms(lock) : 0;
//     rlGoLost(code, (char *)message, v, (uintptr_t)userdata);
// }
// static void rl_go_lost_free(void *userdata) { rlGoLostFree((uintptr_t)userdata); }
// /* The cgo.Handle travels as an integer, so no Go code turns it into a
//  * pointer. C deletes it (rl_go_lost_free) once no loss can be told with it. */
// /* Armed with the library's default at-risk margin, max(TTL / 10, 2 x the
//  * node timeout): on_lost hears REDLOCK_EATRISK before the validity ends. */
// static int rl_go_auto_extend(redlock_lock *lock, uint32_t max_hold_ms, uintptr_t handle)
// {
//     return redlock_lock_auto_extend(lock, max_hold_ms, REDLOCK_AT_RISK_DEFAULT, rl_go_lost, (void *)handle,
//                                      rl_go_lost_free);
// }
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"runtime/cgo"
	"time"
)

// DefaultAutoExtendMaxHold is the bound on holding that AutoExtend(0) gives.
const DefaultAutoExtendMaxHold = time.Duration(C.REDLOCK_AUTO_EXTEND_MAX_HOLD_MS) * time.Millisecond

// AutoExtend keeps the held lock alive until Unlock: the client's one
// background thread extends it to the mutex's expiry every third of the
// expiry (sooner again after a failed try). It stops at Unlock,
// StopAutoExtend, Client.Close, a loss, or after maxHold of holding in all
// (0 means DefaultAutoExtendMaxHold, one hour; WithMaxHold and
// WithMaxExtensions apply too).
//
// The contexts from LockedContext, made before or after this call, end
// before the lock can be lost: when no extension has succeeded and the
// validity ends within the at-risk margin, max(expiry/10, 2 x the client's
// node timeout), they end with cause an *Error (Op "auto-extend") matching
// ErrAtRisk, while the lock is still held, so that the work stops in time.
// Unlock, Valid, Until and Token are not changed by it: the lock is not
// lost yet, and the auto-extension keeps trying. A loss with no notice
// before it (say, the keys deleted) ends them with an *Error matching
// ErrLost (no longer ours on a majority), ErrExpired (the validity ran out
// before an extension succeeded) or ErrLimit (maxHold was reached and the
// validity then ran out). Until follows the extensions; Token turns 0 after
// a loss, and Unlock then returns an error matching ErrLost.
//
// It fails with ErrState when the Mutex is not held. The other methods stay
// usable meanwhile; they wait for an extension under way.
func (m *Mutex) AutoExtend(maxHold time.Duration) error {
	if maxHold < 0 || maxHold > time.Duration(math.MaxUint32)*time.Millisecond {
		return &Error{Op: "auto-extend", Resource: m.name, Code: int(C.REDLOCK_EINVAL),
			Detail: fmt.Sprintf("maxHold %v out of range", maxHold)}
	}
	ms := uint32((maxHold + time.Millisecond - 1) / time.Millisecond)
	p, err := m.enter("auto-extend")
	if err != nil {
		return err
	}
	defer m.leave()

	// Armed before C can call back: a loss may be found at once. A running
	// auto-extension is replaced: C waits for its loss callback under way,
	// then deletes its handle, and the new number makes a late call of the
	// old one change nothing.
	gen := m.t.startAuto()
	h := cgo.NewHandle(&lossTarget{t: m.t, gen: gen, name: m.name})
	rc := C.rl_go_auto_extend(p, C.uint32_t(ms), C.uintptr_t(h))
	runtime.KeepAlive(m)
	if rc != 0 {
		h.Delete() // C keeps nothing of a refused call
		m.t.stopAuto()
		err := m.fail("auto-extend", rc, p)
		m.observe(p, nil)
		return err
	}
	return nil
}

// StopAutoExtend stops the auto-extension (waiting for an extension under
// way); the lock stays held until its validity runs out, which the contexts
// from LockedContext then follow again. ErrState if it was not running
// (never started, or already ended by a loss: see LockedContext's cause).
func (m *Mutex) StopAutoExtend() error {
	p, err := m.enter("stop auto-extend")
	if err != nil {
		return err
	}
	defer m.leave()
	rc := C.redlock_lock_auto_extend_stop(p)
	runtime.KeepAlive(m)
	m.t.stopAuto()
	m.observe(p, nil)
	if rc != 0 {
		return &Error{Op: "stop auto-extend", Resource: m.name, Code: int(rc), Detail: "auto-extension is not running"}
	}
	return nil
}

// lossTarget is what the loss callback's userdata leads to: the tracker and
// the number of the auto-extension, so that a late call for an
// auto-extension already over changes nothing.
type lossTarget struct {
	t    *tracker
	gen  uint64
	name string
}

// startAuto marks an auto-extension as running: LockedContext contexts stop
// following the validity and wait for a loss. It returns its number.
func (t *tracker) startAuto() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gens++
	t.autoGen = t.gens
	t.atRisk, t.riskEnd = nil, time.Time{} // C tells a new arming's episode anew
	for hc := range t.ctxs {
		hc.timer.Stop()
	}
	return t.autoGen
}

// stopAuto marks the auto-extension as over, without a loss. The caller
// then calls settle, which re-arms the contexts' timers.
func (t *tracker) stopAuto() {
	t.mu.Lock()
	t.autoGen = 0
	t.atRisk, t.riskEnd = nil, time.Time{}
	t.mu.Unlock()
}

// risk records the at-risk notice of auto-extension gen (validity v ms
// then left), on the library's background thread, and ends the contexts
// from LockedContext: the lock is still held, so the auto-extension, Until
// and Unlock go on as before. Like lose, it takes only t.mu.
func (t *tracker) risk(gen uint64, v int64, err error) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.autoGen != gen {
		return
	}
	t.atRisk = err
	t.riskEnd = now.Add(time.Duration(max(v, 0)) * time.Millisecond)
	t.endAll(err)
}

// riskNow is the at-risk notice if its episode is not over: no extension
// has moved the validity's end u past the end known at the notice. A
// successful extension moves it by about half the expiry at least (the
// margin is at most half of it), so a quarter tells it from the
// milliseconds lost in reading the validity. t.mu is held.
func (t *tracker) riskNow(u time.Time, ttl time.Duration) error {
	if t.atRisk == nil || t.autoGen == 0 || u.After(t.riskEnd.Add(ttl/4)) {
		return nil
	}
	return t.atRisk
}

// lose records a loss reported by auto-extension gen, on the library's
// background thread: it must not block (the lock's owner may be waiting
// for this extension in a C call), so it takes only t.mu.
func (t *tracker) lose(gen uint64, err error) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.autoGen != gen {
		return
	}
	t.autoGen = 0
	t.lost = err
	if old := t.until.Load(); old != nil && old.After(now) {
		t.until.Store(&now)
	}
	t.endAll(err)
}
