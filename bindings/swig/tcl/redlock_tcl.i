/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_tcl.i: what Tcl adds to redlock.i: errors with an errorCode that
 * names the REDLOCK_E* code, and node lists from Tcl lists. */

%{
/* The error result is "REDLOCK_ENAME: detail" (rl_tcl_message; the code's
 * generic text when the C library gave no detail) and errorCode is
 * {REDLOCK REDLOCK_ENAME}, so scripts can trap on the name. */
static Tcl_Obj *rl_tcl_message(int code, const char *detail) {
    return Tcl_ObjPrintf("%s: %s", redlock_error_name(code), detail && *detail ? detail : redlock_strerror(code));
}
static void rl_tcl_error(Tcl_Interp *interp, int code, const char *detail) {
    Tcl_SetObjResult(interp, rl_tcl_message(code, detail));
    Tcl_SetErrorCode(interp, "REDLOCK", redlock_error_name(code), NULL);
}

#ifndef TCL_SIZE_MAX
typedef int Tcl_Size; /* Tcl 8.6; Tcl 9 defines it */
#endif
%}

%typemap(argout, noblock=1) rl_status *st {
  if ($1->code != 0) {
    rl_tcl_error(interp, $1->code, $1->detail);
    free($1->detail); /* SWIG's Tcl wrappers skip freearg for numinputs=0 arguments */
    $1->detail = NULL;
    SWIG_fail;
  }
}

/* (const char *const *nodes, size_t n_nodes) from a Tcl list. */
%typemap(in) (const char *const *nodes, size_t n_nodes) {
  Tcl_Obj **rl_elems;
  Tcl_Size rl_n, rl_i;
  if (Tcl_ListObjGetElements(interp, $input, &rl_n, &rl_elems) != TCL_OK)
    SWIG_fail;
  $1 = calloc(rl_n ? (size_t)rl_n : 1, sizeof(char *));
  if (!$1) {
    rl_tcl_error(interp, REDLOCK_ENOMEM, NULL);
    SWIG_fail;
  }
  for (rl_i = 0; rl_i < rl_n; rl_i++)
    ((const char **)$1)[rl_i] = Tcl_GetString(rl_elems[rl_i]); /* owned by the list */
  $2 = (size_t)rl_n;
}
%typemap(freearg) (const char *const *nodes, size_t n_nodes) { free((void *)$1); }
/* The multi-resource lock's names: a Tcl list, as the nodes. */
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *resources, size_t n_resources) }
/* redlock_fence_sql's key and value columns (Redlock_fenceSql): Tcl lists, as the nodes. */
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *key_columns, size_t n_key) }
%apply (const char *const *nodes, size_t n_nodes) { (const char *const *value_columns, size_t n_values) }

/* (redlock_lock *const *locks, size_t n_locks) from a Tcl list of Lock
 * handles (any kind, of one client; C refuses a mix, a lock twice, or too
 * many). */
%typemap(in) (redlock_lock *const *locks, size_t n_locks) {
  Tcl_Obj **rl_elems;
  Tcl_Size rl_n, rl_i;
  if (Tcl_ListObjGetElements(interp, $input, &rl_n, &rl_elems) != TCL_OK)
    SWIG_fail;
  $1 = calloc(rl_n ? (size_t)rl_n : 1, sizeof(redlock_lock *));
  if (!$1) {
    rl_tcl_error(interp, REDLOCK_ENOMEM, NULL);
    SWIG_fail;
  }
  for (rl_i = 0; rl_i < rl_n; rl_i++) {
    void *rl_p = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(rl_elems[rl_i], &rl_p, SWIGTYPE_p_redlock_lock, 0)) || !rl_p) {
      char rl_why[64];
      snprintf(rl_why, sizeof rl_why, "element %ld of the list is not a Lock", (long)rl_i);
      free((void *)$1);
      $1 = NULL;
      rl_tcl_error(interp, REDLOCK_EINVAL, rl_why);
      SWIG_fail;
    }
    ((redlock_lock **)$1)[rl_i] = rl_p;
  }
  $2 = (size_t)rl_n;
}
%typemap(freearg) (redlock_lock *const *locks, size_t n_locks) { free((void *)$1); }
/* NULL when rl_status carries the error (raised by its argout typemap). */
%typemap(out, noblock=1) Tcl_Obj *rl_tryAcquireMany { if ($1) Tcl_SetObjResult(interp, $1); }

%extend redlock_client {
  /* One attempt at each lock of the list, as its tryAcquire makes it, all
   * pipelined in about one round trip (redlock_lock_acquire_many). The
   * result is a list as long: "" where the lock is held now, else the
   * error its tryAcquire would have raised ("REDLOCK_ENOTACQUIRED: ..."),
   * not raised: the other locks' outcomes stand. An empty list gives an
   * empty list; a bad list (locks of another client, one twice, more than
   * REDLOCK_ACQUIRE_MANY_MAX) raises REDLOCK_EINVAL before any I/O, with the
   * C library's reason. */
  Tcl_Obj *rl_tryAcquireMany(rl_status *st, redlock_lock *const *locks, size_t n_locks, uint32_t ttlMs) {
    int *rcs = calloc(n_locks ? n_locks : 1, sizeof *rcs);
    char err[512];
    int rc = rcs ? redlock_lock_acquire_many($self, locks, n_locks, ttlMs, rcs, err, sizeof err) : REDLOCK_ENOMEM;
    if (rc != 0) {
      rl_fail(st, rc, rcs ? err : NULL);
      free(rcs);
      return NULL;
    }
    Tcl_Obj *out = Tcl_NewListObj(0, NULL);
    for (size_t k = 0; k < n_locks; k++)
      Tcl_ListObjAppendElement(NULL, out, rcs[k] == 0 ? Tcl_NewObj()
                                                      : rl_tcl_message(rcs[k], redlock_lock_errmsg(locks[k])));
    free(rcs);
    return out;
  }
}
