// SPDX-License-Identifier: BSD-3-Clause

// The metrics hook (WithEventHandler): C's redlock_event copied into a Go
// Event during the call, the per-node outcome type shared with Nodes, and the
// listener state shared with Client.Listeners.

//go:build cgo

package redlock

// #include <stdint.h>
// #include "redlock.h"
//
// /* C calls these through function pointers of exactly its own types; the
//  * Go functions (callbacks.go) take the userdata as an integer, since it is
//  * a cgo.Handle, not a pointer. */
// extern void rlGoEvent(redlock_event *ev, uintptr_t handle);
// extern void rlGoEventFree(uintptr_t handle);
// static void rl_go_event(const redlock_event *ev, void *userdata)
// {
//     rlGoEvent((redlock_event *)ev, (uintptr_t)userdata);
// }
// static void rl_go_event_free(void *userdata)
// {
//     rlGoEventFree((uintptr_t)userdata);
// }
// static void rl_go_set_hook(redlock_options *o, uintptr_t handle)
// {
//     o->on_event = rl_go_event;
//     o->on_event_userdata = (void *)handle;
//     o->on_event_userdata_free = rl_go_event_free;
// }
import "C"

import (
	"errors"
	"fmt"
	"runtime/cgo"
	"runtime/debug"
	"strconv"
	"time"
	"unsafe"
)

// EventType says what an Event reports.
type EventType int

// Event types, C's redlock_event_type.
const (
	EventAcquired      EventType = C.REDLOCK_EVENT_ACQUIRED       // an attempt got the lock
	EventAcquireFailed EventType = C.REDLOCK_EVENT_ACQUIRE_FAILED // an attempt failed (Err); a retry may follow
	EventExtended      EventType = C.REDLOCK_EVENT_EXTENDED       // by Extend, or by the auto-extension (Automatic)
	EventExtendFailed  EventType = C.REDLOCK_EVENT_EXTEND_FAILED  // not extended, not (yet) known lost, e.g. no quorum
	EventLost          EventType = C.REDLOCK_EVENT_LOST           // no longer held: not ours on a majority, or the validity ran out
	EventReleased      EventType = C.REDLOCK_EVENT_RELEASED       // released while still ours on a majority
	EventReleaseFailed EventType = C.REDLOCK_EVENT_RELEASE_FAILED // release not confirmed by a majority (Err)
	EventNodeError     EventType = C.REDLOCK_EVENT_NODE_ERROR     // one node failed in a round: Node, NodeURL, NodeOutcome, Err, Message
	EventWoken         EventType = C.REDLOCK_EVENT_WOKEN          // a waiting Lock was woken by a release: Node, NodeURL (whose message woke it)
	EventListener      EventType = C.REDLOCK_EVENT_LISTENER       // a node's wake-up listener changed state (told to a waiting Lock): Node, NodeURL, ListenerState, Message
	EventAcquireDone   EventType = C.REDLOCK_EVENT_ACQUIRE_DONE   // an acquire call ended: Err (nil: acquired), Attempt (attempts made), Elapsed (the whole call)
	EventWatchBehind   EventType = C.REDLOCK_EVENT_WATCH_BEHIND   // the auto-extension starts extensions late (Elapsed: how late): more locks than the nodes keep up with
	EventAtRisk        EventType = C.REDLOCK_EVENT_AT_RISK        // an auto-extended lock not extended within its at-risk margin: Validity left, Message; still held
)

var eventNames = map[EventType]string{
	EventAcquired: "acquired", EventAcquireFailed: "acquire failed", EventExtended: "extended",
	EventExtendFailed: "extend failed", EventLost: "lost", EventReleased: "released",
	EventReleaseFailed: "release failed", EventNodeError: "node error", EventWoken: "woken",
	EventListener: "listener", EventAcquireDone: "acquire done", EventWatchBehind: "watch behind",
	EventAtRisk: "at risk",
}

func (t EventType) String() string {
	if s, ok := eventNames[t]; ok {
		return s
	}
	return "EventType(" + strconv.Itoa(int(t)) + ")"
}

// NodeOutcome is what one node did in a round.
type NodeOutcome int

// Node outcomes, C's redlock_node_outcome.
const (
	NodeNone      NodeOutcome = C.REDLOCK_NODE_NONE       // not contacted: no round yet, or skipped
	NodeOK        NodeOutcome = C.REDLOCK_NODE_OK         // granted or confirmed
	NodeRefused   NodeOutcome = C.REDLOCK_NODE_REFUSED    // held by another owner, or no longer ours
	NodeError     NodeOutcome = C.REDLOCK_NODE_ERROR      // error reply, I/O, auth or TLS failure (Err, Message)
	NodeTimeout   NodeOutcome = C.REDLOCK_NODE_TIMEOUT    // no reply before the node's deadline
	NodeDown      NodeOutcome = C.REDLOCK_NODE_DOWN       // skipped: in reconnect backoff after failing to connect
	NodeNotWaited NodeOutcome = C.REDLOCK_NODE_NOT_WAITED // sent, but the round was decided without its reply
	// out of the vote: it may have lost its keys, or its clock jumped (WithQuarantine)
	NodeQuarantined NodeOutcome = C.REDLOCK_NODE_QUARANTINED
)

var outcomeNames = map[NodeOutcome]string{
	NodeNone: "none", NodeOK: "ok", NodeRefused: "refused", NodeError: "error",
	NodeTimeout: "timeout", NodeDown: "down", NodeNotWaited: "not waited", NodeQuarantined: "quarantined",
}

func (o NodeOutcome) String() string {
	if s, ok := outcomeNames[o]; ok {
		return s
	}
	return "NodeOutcome(" + strconv.Itoa(int(o)) + ")"
}

// ListenerState is the state of a client's wake-up listener on one node: the
// connection on which it hears releases (Client.Listeners, EventListener).
type ListenerState int

// Listener states, C's redlock_listener_state.
const (
	ListenerOff        ListenerState = C.REDLOCK_LISTENER_OFF        // not started: no waiting Lock yet, or WithWake(false)
	ListenerConnecting ListenerState = C.REDLOCK_LISTENER_CONNECTING // connecting, authenticating or subscribing
	ListenerReady      ListenerState = C.REDLOCK_LISTENER_READY      // subscribed: a release on this node wakes the client's waiters
	ListenerDown       ListenerState = C.REDLOCK_LISTENER_DOWN       // failed, reconnecting with backoff; waiters poll meanwhile
	ListenerRefused    ListenerState = C.REDLOCK_LISTENER_REFUSED    // the node refused SUBSCRIBE (an ACL without &redlock:wake:*); waiters poll
)

var listenerNames = map[ListenerState]string{
	ListenerOff: "off", ListenerConnecting: "connecting", ListenerReady: "ready", ListenerDown: "down",
	ListenerRefused: "refused",
}

func (s ListenerState) String() string {
	if n, ok := listenerNames[s]; ok {
		return n
	}
	return "ListenerState(" + strconv.Itoa(int(s)) + ")"
}

// Event is one report to the handler of WithEventHandler, a copy of C's
// redlock_event. Fields that do not apply to the Type are zero.
type Event struct {
	Type      EventType
	Resource  string // the mutex's name
	Err       error  // nil, or the sentinel of the failure, loss or node error (ErrNotAcquired, ErrLost, ErrIO...)
	Message   string // C's detail; "" when none
	Attempt   int    // EventAcquired, EventAcquireFailed: 1 for a call's first attempt, then 2...
	Automatic bool   // done by the auto-extension (AutoExtend), on its thread
	NodesOK   int    // nodes that said OK in the round
	Quorum    int    // nodes needed
	NodeCount int    // nodes in the client

	Elapsed  time.Duration // the round's duration (for EventAcquired, the whole attempt)
	Validity time.Duration // EventAcquired, EventExtended: the validity then left
	Token    uint64        // EventAcquired with WithFencing: the fencing token

	// EventNodeError: which node, what it did, and the time from the
	// round's start to the failure. Node and NodeURL are also set for
	// EventWoken and EventListener.
	Node        int
	NodeURL     string // password masked
	NodeOutcome NodeOutcome
	NodeRTT     time.Duration

	// EventListener: the node's new listener state (Message says why it is
	// down or refused).
	ListenerState ListenerState
	// EventReleased, EventReleaseFailed, EventLost: how long the lock was
	// held, from the acquiring round's start; 0 on a second report of the
	// same hold (a lost lock then released).
	Held time.Duration
	// The events of a round (acquire attempts, extensions, releases): each
	// node's round-trip time, in the client's node order; RTT is -1 for a
	// node whose reply did not arrive (not sent, down, timed out, not waited
	// for: a round decided at quorum waits for no more); nil for other events.
	NodeRTTs []NodeRTT
}

// NodeRTT is one node's round trip in a round (Event.NodeRTTs).
type NodeRTT struct {
	URL string        // the node's URL, password masked
	RTT time.Duration // -1 without a reply
}

// eventHook is WithEventHandler's handler; settings hold a pointer, so that
// they stay comparable.
type eventHook struct{ fn func(Event) }

// hookTarget is what one C client's on_event userdata (a cgo.Handle) leads to.
type hookTarget struct {
	fn   func(Event)
	urls []string // set before the C client's first lock exists
}

func setHook(o *C.redlock_options, h cgo.Handle) { C.rl_go_set_hook(o, C.uintptr_t(h)) }

// codeErr is the sentinel of a C code, nil for 0.
func codeErr(code int) error {
	if code == 0 {
		return nil
	}
	if s, ok := sentinels[code]; ok {
		return s
	}
	return &Error{Op: "event", Code: code}
}

func (h *hookTarget) deliver(ev *C.redlock_event) {
	e := Event{
		Type:      EventType(ev._type),
		Resource:  C.GoString(ev.resource),
		Err:       codeErr(int(ev.code)),
		Message:   C.GoString(ev.message),
		Attempt:   int(ev.attempt),
		Automatic: ev.automatic != 0,
		NodesOK:   int(ev.nodes_ok),
		Quorum:    int(ev.quorum),
		NodeCount: int(ev.n_nodes),
		Elapsed:   time.Duration(ev.elapsed_us) * time.Microsecond,
		Validity:  time.Duration(ev.validity_ms) * time.Millisecond,
		Token:     uint64(ev.fencing_token),
	}
	switch e.Type {
	case EventNodeError, EventWoken, EventListener:
		e.Node = int(ev.node)
		if e.Node < len(h.urls) {
			e.NodeURL = h.urls[e.Node]
		}
	}
	switch e.Type {
	case EventNodeError:
		e.NodeOutcome = NodeOutcome(ev.node_outcome)
		e.NodeRTT = time.Duration(ev.node_rtt_us) * time.Microsecond
	case EventListener:
		e.ListenerState = ListenerState(ev.listener_state)
	}
	e.Held = time.Duration(ev.held_us) * time.Microsecond
	if ev.node_rtts_us != nil {
		rtts := unsafe.Slice((*int64)(unsafe.Pointer(ev.node_rtts_us)), int(ev.n_nodes))
		e.NodeRTTs = make([]NodeRTT, len(rtts))
		for i, us := range rtts {
			e.NodeRTTs[i].RTT = -1
			if us >= 0 {
				e.NodeRTTs[i].RTT = time.Duration(us) * time.Microsecond
			}
			if i < len(h.urls) {
				e.NodeRTTs[i].URL = h.urls[i]
			}
		}
	}
	// A panic must not unwind through the C frames below (it would leave
	// the lock's C mutex held): crash from a goroutine of its own instead.
	defer func() {
		if r := recover(); r != nil {
			stack := debug.Stack()
			go panic(fmt.Sprintf("redlock: the WithEventHandler handler panicked: %v\n\n%s", r, stack))
		}
	}()
	h.fn(e)
}

// ErrorName is C's name of the event's code, e.g. "REDLOCK_ELOST" (as
// Error.Name), and "REDLOCK_OK" when Err is nil: the error.type of metrics.
func (e Event) ErrorName() string {
	code := 0
	var ce *codeError
	var ee *Error
	switch {
	case errors.As(e.Err, &ce):
		code = ce.code
	case errors.As(e.Err, &ee):
		code = ee.Code
	}
	return C.GoString(C.redlock_error_name(C.int(code)))
}
