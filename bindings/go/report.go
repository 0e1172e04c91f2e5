// SPDX-License-Identifier: BSD-3-Clause

// The per-node report of a Mutex's last round (redlock_lock_node_result).

//go:build cgo

package redlock

// #include "redlock.h"
import "C"

import (
	"runtime"
	"time"
)

// NodeResult is what one node did in a Mutex's last round.
type NodeResult struct {
	URL     string        // the node's URL, password masked
	Outcome NodeOutcome   // NodeOK, NodeRefused, NodeError, NodeTimeout...
	Err     error         // NodeError, NodeTimeout, NodeDown: the sentinel (ErrIO, ErrServer, ErrAuth, ErrTLS, ErrTimeout); else nil
	RTT     time.Duration // from the round's start to the node's answer or failure; 0 if none
	Message string        // the node's detail, e.g. its error reply; "" when none
}

// Nodes reports, node by node in the client's URL order, the Mutex's last
// round: the last attempt of a Lock (and its token round, with
// WithFencing), the last extension (by Extend or the auto-extension), or
// Unlock. Before any round every Outcome is NodeNone. It waits for a call
// in progress on the Mutex, like the other methods; it returns nil when the
// Mutex cannot be used (invalid, or its client closed).
func (m *Mutex) Nodes() []NodeResult {
	p, err := m.enter("nodes")
	if err != nil {
		return nil
	}
	defer m.leave()
	out := make([]NodeResult, len(m.client.shown))
	var msg [512]C.char
	for i := range out {
		var code C.int
		var rtt C.int64_t
		rc := C.redlock_lock_node_result(p, C.size_t(i), &code, &rtt, &msg[0], C.size_t(len(msg)))
		if rc < 0 {
			return out[:i] // cannot happen: i is in range
		}
		out[i] = NodeResult{URL: m.client.shown[i], Outcome: NodeOutcome(rc), Err: codeErr(int(code)),
			RTT: time.Duration(rtt) * time.Microsecond, Message: C.GoString(&msg[0])}
	}
	runtime.KeepAlive(m)
	return out
}
