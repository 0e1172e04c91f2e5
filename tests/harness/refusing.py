# SPDX-License-Identifier: BSD-3-Clause
"""Node sets that refuse the client, for the refusal tests of every suite (tests/python,
tests/cli; issue 36): nodes that want a password, ACL users without scripting, nodes with EVAL
and EVALSHA disabled. And what a refusal's message must say. One place, so that the bindings'
tests and the CLI's test the same refusals."""
from __future__ import annotations

import contextlib
import re

import nodes

PW = "refusals-Pw1"          # the password every refusing set knows
OTHER_PW = "refusals-Other2"  # another one, for users whose nodes disagree

NOAUTH_TEXT = "this node needs a password"
# The library's words for WRONGPASS ("the user or password in the URL is refused"), or close,
# or the server's own WRONGPASS.
WRONGPASS_RE = re.compile(r"(password|user)[^;]*refused|refused[^;]*(password|user)|WRONGPASS", re.I)
# The command a node refused: the scripts' commands (FCALL with use_functions).
COMMAND_RE = re.compile(r"\b(evalsha|eval|fcall|fcall_ro)\b", re.I)

# Two rename-command lines: the harness's conf has one value per key, but a value's words are
# passed as they are, so the second line rides on the first.
NO_SCRIPTS = {"rename-command": ["EVALSHA", "", "--rename-command", "EVAL", ""]}


def with_user(url, userinfo):
    """url with userinfo ("user:password" or ":password") in it."""
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{userinfo}@{rest}"


@contextlib.contextmanager
def guarded(count=3, only=None):
    """count nodes with requirepass PW: all of them, or the indexes in `only`. The harness
    cannot talk to a guarded node afterwards."""
    with nodes.Cluster(count=count, kind="mixed") as c:
        for i in range(count) if only is None else only:
            c.cmd(i, "CONFIG", "SET", "requirepass", PW)
        yield c


@contextlib.contextmanager
def acl_users():
    """Three nodes with ACL users of password PW; the default user stays open, so the harness
    can look at the keys.

    noscript: every node denies it @scripting.   noeval: every node denies EVAL and EVALSHA.
    two_noscript: nodes 1 and 2 deny @scripting.  one_noscript: node 2 denies @scripting.
    two_wrongpw: nodes 1 and 2 know it by OTHER_PW.  one_wrongpw: node 2 does."""
    full = ["on", "~*", "&*", "+@all"]
    with nodes.Cluster(count=3, kind="mixed") as c:
        for i in range(3):
            c.cmd(i, "ACL", "SETUSER", "noscript", *full, ">" + PW, "-@scripting")
            c.cmd(i, "ACL", "SETUSER", "noeval", *full, ">" + PW, "-eval", "-evalsha")
            c.cmd(i, "ACL", "SETUSER", "two_noscript", *full, ">" + PW, *(["-@scripting"] if i >= 1 else []))
            c.cmd(i, "ACL", "SETUSER", "one_noscript", *full, ">" + PW, *(["-@scripting"] if i == 2 else []))
            c.cmd(i, "ACL", "SETUSER", "two_wrongpw", *full, ">" + (OTHER_PW if i >= 1 else PW))
            c.cmd(i, "ACL", "SETUSER", "one_wrongpw", *full, ">" + (OTHER_PW if i == 2 else PW))
        yield c


@contextlib.contextmanager
def scripts_disabled():
    """Three nodes started with EVAL and EVALSHA disabled (rename-command ... ""), checked."""
    with nodes.Cluster(count=3, kind="mixed", conf=NO_SCRIPTS) as c:
        for i in range(3):
            for command in (["EVALSHA", "0" * 40, "0"], ["EVAL", "return 1", "0"]):
                try:
                    c.cmd(i, *command)
                except nodes.ReplyError as e:
                    if "unknown command" not in str(e):
                        raise
                else:
                    raise AssertionError(f"node {i} still runs {command[0]}: the harness's conf did not apply")
        yield c
