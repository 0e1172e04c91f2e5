// SPDX-License-Identifier: BSD-3-Clause

//go:build redlock_eperm

// The sentinel of REDLOCK_EPERM for refusals_test.go. The build tag keeps
// this file out until the binding has redlock.ErrPermission (issue 36);
// then delete the tag line, so that every REDLOCK_EPERM is also checked
// with errors.Is.

package redlock_test

import redlock "github.com/redlock-project/redlock/bindings/go"

func init() { permissionSentinel = redlock.ErrPermission }
