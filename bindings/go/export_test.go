// SPDX-License-Identifier: BSD-3-Clause

// Exposes internals that the external tests check (the handle registry, a
// handle's flags).

//go:build cgo

package redlock

// LiveHandles is the number of C lock handles the client has not freed.
func LiveHandles(c *Client) int {
	c.regMu.Lock()
	defer c.regMu.Unlock()
	return len(c.reg)
}

// WaitFlags says whether the Mutex's C lock handle waits with wake-up and
// in fair mode.
func WaitFlags(m *Mutex) (wake, fair bool) { return m.waitFlags() }
