# SPDX-License-Identifier: BSD-3-Clause
# `redlock completion bash|zsh`: the scripts parse, and completing a few command lines gives
# the subcommands, their options, and the --nodes URL forms.
from __future__ import annotations

import shutil
import subprocess

import pytest

# Completes each line with the bash script's function, as bash would, and prints the replies.
BASH_DRIVER = r'''
source "$1"
complete -p redlock >/dev/null || { echo "no completion registered"; exit 1; }
t() {
    COMP_LINE=$1; COMP_POINT=${#1}
    read -r -a COMP_WORDS <<< "$1"
    COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); [[ $1 == *' ' ]] && COMP_CWORD=${#COMP_WORDS[@]}
    COMPREPLY=(); _redlock
    echo "$1|${COMPREPLY[*]}"
}
while IFS= read -r line; do t "$line"; done
'''

CASES = {
    "redlock ": {"run", "status", "doctor", "completion"},
    "redlock st": {"status"},
    "redlock run --no": {"--nodes", "--nonblock", "--node-timeout"},
    "redlock run --fen": {"--fencing"},
    "redlock run -": {"-c", "-n", "-w", "-E", "--conflict-exit-code", "--timeout", "--tls-ca-file"},
    "redlock status --j": {"--json"},
    "redlock doctor --clo": {"--clock-probe"},
    "redlock completion ": {"bash", "zsh"},
    "redlock run -s T": {"TERM"},
    "redlock run --nodes ": {"redis://", "rediss://", "unix://"},
    "redlock run --nodes rediss": {"rediss://"},
    # bash splits words at ':', so replies are relative to the last one, as bash expects
    "redlock status --nodes redis://a:1,uni": {"1,unix://"},
    "redlock run --nodes=re": {"redis://", "rediss://"},
}


def run_script(runner, shell):
    r = runner.run("completion", shell)
    assert r.returncode == 0, r.stderr
    assert r.stdout
    return r.stdout


def test_bash_script_parses_and_completes(runner, tmp_path):
    script = tmp_path / "redlock.bash"
    script.write_text(run_script(runner, "bash"))
    r = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    driver = tmp_path / "driver.bash"
    driver.write_text(BASH_DRIVER)
    r = subprocess.run(["bash", str(driver), str(script)], input="\n".join(CASES) + "\n",
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    got = {}
    for line in r.stdout.splitlines():
        typed, _, replies = line.partition("|")
        got[typed] = set(replies.split())
    for typed, want in CASES.items():
        assert want <= got[typed], (typed, want, got[typed])
    # Options of one subcommand are not offered for another.
    assert "--clock-probe" not in got["redlock run -"] and "--fencing" not in got["redlock status --j"]
    # unix:// completes socket paths.
    sock_dir = tmp_path / "socks"
    sock_dir.mkdir()
    (sock_dir / "redis.sock").write_text("")
    r = subprocess.run(["bash", str(driver), str(script)], input="redlock run --nodes unix://%s/re\n" % sock_dir,
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.strip().endswith("/redis.sock"), r.stdout


def test_zsh_script(runner, tmp_path):
    script = tmp_path / "_redlock"
    script.write_text(run_script(runner, "zsh"))
    zsh = shutil.which("zsh")
    if not zsh:
        pytest.skip("SKIPPED: zsh is not installed (Debian package zsh); the zsh script was only printed")
    r = subprocess.run([zsh, "-n", str(script)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # Loaded by compinit from $fpath, as an installed completion is, and by source.
    check = ('autoload -U compinit; compinit -u -d %s/zcompdump; print -r -- ${_comps[redlock]}; '
             'source %s; print -r -- ${_comps[redlock]}' % (tmp_path, script))
    r = subprocess.run([zsh, "-f", "-c", "fpath=(%s $fpath); %s" % (tmp_path, check)],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["_redlock", "_redlock"], r.stdout + r.stderr


# Types each line and TAB into an interactive zsh (zpty), and prints what it completed.
ZSH_DRIVER = r'''
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z 'PS1=">"; autoload -U compinit; compinit -u -d "$TMPDIR/zcd"; source "$SCRIPT"; setopt nobeep'
zpty -w z 'zstyle ":completion:*" list-prompt ""; zstyle ":completion:*" menu no; LISTMAX=1000'
sleep 0.5
zpty -r -t z junk
for line in "$@"; do
  zpty -w -n z "$line"$'\t'
  sleep 0.8
  out=""
  while zpty -r -t z chunk; do out+=$chunk; done
  print -r -- "== $line"; print -r -- "$out"
  zpty -w -n z $'\x15'
  sleep 0.2; while zpty -r -t z chunk; do :; done
done
zpty -d z
'''

ZSH_CASES = {
    "redlock ": ["status", "doctor", "completion"],
    "redlock run --no": ["--nonblock", "--nodes", "--node-timeout"],
    "redlock run --nodes ": ["redis://", "rediss://", "unix://"],
    "redlock doctor --clo": ["--clock-probe"],
}


def test_zsh_completes_interactively(runner, tmp_path):
    zsh = shutil.which("zsh")
    if not zsh:
        pytest.skip("SKIPPED: zsh is not installed (Debian package zsh)")
    script = tmp_path / "_redlock"
    script.write_text(run_script(runner, "zsh"))
    driver = tmp_path / "driver.zsh"
    driver.write_text(ZSH_DRIVER)
    env = {"PATH": "/usr/bin:/bin", "TERM": "dumb", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
           "SCRIPT": str(script)}
    r = subprocess.run([zsh, "-f", str(driver), *ZSH_CASES], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    parts = r.stdout.split("== ")[1:]
    got = {p.split("\n", 1)[0]: p for p in parts}
    for typed, want in ZSH_CASES.items():
        for w in want:
            assert w in got.get(typed, ""), (typed, w, got.get(typed))


def test_completion_usage_errors(runner):
    for args in (["completion"], ["completion", "fish"], ["completion", "bash", "zsh"]):
        r = runner.run(*args)
        assert r.returncode == 2, args
        assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1
