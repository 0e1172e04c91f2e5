/* SPDX-License-Identifier: BSD-3-Clause */
/* redlock_tcl.i: what Tcl adds to redlock.i: errors with an errorCode that
 * names the REDLOCK_E* code, and node lists from Tcl lists. */

%{
/* The error result is "REDLOCK_ENAME: detail" (or the code's generic text
 * when the C library gave no detail) and errorCode is
 * {REDLOCK REDLOCK_ENAME}, so scripts can trap on the name. */
static void rl_tcl_error(Tcl_Interp *interp, int code, const char *detail) {
    Tcl_SetObjResult(interp, Tcl_ObjPrintf("%s: %s", redlock_error_name(code),
                                           detail && *detail ? detail : redlock_strerror(code)));
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
