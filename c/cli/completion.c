/* SPDX-License-Identifier: BSD-3-Clause */
/* completion.c: 'redlock completion bash|zsh': prints a shell completion
 * script for the subcommands, their options and the --nodes URL forms
 * (redis://, rediss://, unix:// with socket paths). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define CMD "completion"

/* Options per subcommand; kept next to each other so that a new option is
 * added to both scripts at once. */
#define COMMON_OPTS "--nodes --config --key-prefix --tls-ca-file --tls-ca-dir --tls-cert --tls-key " \
                    "--tls-server-name --tls-insecure --help"
#define RUN_OPTS    "--ttl --wait --timeout --nonblock --conflict-exit-code --lost-exit-code --lost-signal " \
                    "--kill-after --node-timeout --fencing --wake --no-wake --fair --limit --also --verbose --command --close " \
                    "--exclusive -w -n -E -s -k -v -c -o -x"
#define STATUS_OPTS "--timeout --json"
#define DOCTOR_OPTS "--ttl --timeout --clock-probe --json"

static const char bash_script[] =
    "# bash completion for redlock. Load it with: source <(redlock completion bash)\n"
    "# or install it: redlock completion bash > /usr/share/bash-completion/completions/redlock\n"
    "_redlock_nodes() {\n"
    "    # $1: the whole word being completed, a comma-separated URL list\n"
    "    local word=$1 head='' tail=$1 s f\n"
    "    case $word in *,*) head=${word%,*},; tail=${word##*,};; esac\n"
    "    local -a cands=()\n"
    "    for s in redis:// rediss:// unix://; do\n"
    "        [[ $s == \"$tail\"* && $s != \"$tail\" ]] && cands+=(\"$head$s\")\n"
    "    done\n"
    "    if [[ $tail == unix://* ]]; then\n"
    "        while IFS= read -r f; do\n"
    "            [[ -d $f ]] && f=$f/\n"
    "            cands+=(\"${head}unix://$f\")\n"
    "        done < <(compgen -f -- \"${tail#unix://}\")\n"
    "    fi\n"
    "    # bash splits words at ':' (COMP_WORDBREAKS): answer relative to the last one\n"
    "    if [[ $word == *:* && $COMP_WORDBREAKS == *:* ]]; then\n"
    "        local strip=${word%\"${word##*:}\"} i\n"
    "        for i in \"${!cands[@]}\"; do cands[i]=${cands[i]#\"$strip\"}; done\n"
    "    fi\n"
    "    COMPREPLY=(\"${cands[@]}\")\n"
    "    compopt -o nospace 2>/dev/null\n"
    "}\n"
    "\n"
    "_redlock() {\n"
    "    # Words are taken from the line itself: COMP_WORDS is split at ':' and '='.\n"
    "    local line=${COMP_LINE:0:COMP_POINT}\n"
    "    local -a w\n"
    "    read -r -a w <<< \"$line\"\n"
    "    local cur='' prev=''\n"
    "    if [[ $line == *[[:space:]] || ${#w[@]} -eq 0 ]]; then\n"
    "        prev=${w[${#w[@]}-1]:-}\n"
    "    else\n"
    "        cur=${w[${#w[@]}-1]}\n"
    "        prev=${w[${#w[@]}-2]:-}\n"
    "    fi\n"
    "    local sub='' i\n"
    "    for ((i = 1; i < ${#w[@]}; i++)); do\n"
    "        case ${w[i]} in run|status|doctor|completion) sub=${w[i]}; break;; esac\n"
    "    done\n"
    "    COMPREPLY=()\n"
    "    if [[ $cur == --nodes=* ]]; then\n"
    "        _redlock_nodes \"${cur#--nodes=}\"\n"
    "        return\n"
    "    fi\n"
    "    if [[ -z $sub ]]; then\n"
    "        COMPREPLY=($(compgen -W 'run status doctor completion --help --version' -- \"$cur\"))\n"
    "        return\n"
    "    fi\n"
    "    case $prev in\n"
    "        --nodes) _redlock_nodes \"$cur\"; return;;\n"
    "        --config|--tls-ca-file|--tls-cert|--tls-key) COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n"
    "        --tls-ca-dir) COMPREPLY=($(compgen -d -- \"$cur\")); return;;\n"
    "        -s|--lost-signal) COMPREPLY=($(compgen -W 'TERM INT HUP QUIT KILL USR1 USR2' -- \"$cur\")); return;;\n"
    "        --ttl|-w|--wait|--timeout|-k|--kill-after|--node-timeout|--clock-probe)\n"
    "            COMPREPLY=($(compgen -W '250ms 1s 10s 30s 5m 1h forever' -- \"$cur\")); return;;\n"
    "        -E|--conflict-exit-code|--lost-exit-code) COMPREPLY=($(compgen -W '1 75 76' -- \"$cur\")); return;;\n"
    "        -c|--command|--key-prefix|--tls-server-name) return;;\n"
    "    esac\n"
    "    local opts\n"
    "    case $sub in\n"
    "        run) opts='" COMMON_OPTS " " RUN_OPTS "';;\n"
    "        status) opts='" COMMON_OPTS " " STATUS_OPTS "';;\n"
    "        doctor) opts='" COMMON_OPTS " " DOCTOR_OPTS "';;\n"
    "        completion) COMPREPLY=($(compgen -W 'bash zsh' -- \"$cur\")); return;;\n"
    "    esac\n"
    "    if [[ $cur == -* ]]; then\n"
    "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
    "    elif [[ $sub == run ]]; then\n"
    "        # RESOURCE is free text; after it, COMMAND is a program\n"
    "        COMPREPLY=($(compgen -c -- \"$cur\"))\n"
    "    fi\n"
    "}\n"
    "complete -F _redlock redlock\n";

static const char zsh_script[] =
    "#compdef redlock\n"
    "# zsh completion for redlock. Load it with: source <(redlock completion zsh)\n"
    "# or install it as _redlock in a directory of $fpath.\n"
    "\n"
    "_redlock_nodes() {\n"
    "  compset -P '*,'\n"
    "  if compset -P 'unix://'; then\n"
    "    _files\n"
    "    return\n"
    "  fi\n"
    "  compadd -S '' -- redis:// rediss:// unix://\n"
    "}\n"
    "\n"
    "_redlock() {\n"
    "  local curcontext=\"$curcontext\" state line ret=1\n"
    "  local -a common\n"
    "  common=(\n"
    "    '*--nodes=[node URLs, comma-separated]:node URLs:_redlock_nodes'\n"
    "    '--config=[config file]:config file:_files'\n"
    "    '--key-prefix=[prefix of the lock keys]:prefix: '\n"
    "    '--tls-ca-file=[CA certificates (PEM)]:file:_files'\n"
    "    '--tls-ca-dir=[directory of hashed CA certificates]:directory:_files -/'\n"
    "    '--tls-cert=[client certificate (PEM)]:file:_files'\n"
    "    '--tls-key=[client private key (PEM)]:file:_files'\n"
    "    '--tls-server-name=[name the certificates must carry]:name: '\n"
    "    '--tls-insecure[accept any server certificate (tests only)]'\n"
    "    '(-h --help)'{-h,--help}'[show help]'\n"
    "  )\n"
    "  local dur='duration:(250ms 1s 10s 30s 5m 1h)'\n"
    "  _arguments -C \\\n"
    "    '(-h --help)'{-h,--help}'[show help]' \\\n"
    "    '(-V --version)'{-V,--version}'[show the version]' \\\n"
    "    '1:command:((run\\:\"run a command while holding the lock\" status\\:\"show who holds a lock\" "
    "doctor\\:\"check the nodes\" completion\\:\"print a completion script\"))' \\\n"
    "    '*::arg:->args' && ret=0\n"
    "  case $state in\n"
    "  args)\n"
    "    curcontext=\"${curcontext%:*:*}:redlock-$words[1]:\"\n"
    "    case $words[1] in\n"
    "    run)\n"
    "      _arguments -S $common \\\n"
    "        \"--ttl=[lock TTL]:$dur\" \\\n"
    "        \"(-w --wait --timeout)\"{-w+,--wait=,--timeout=}\"[how long to wait for the lock]:$dur\" \\\n"
    "        '(-n --nonblock --nb)'{-n,--nonblock,--nb}'[one attempt only]' \\\n"
    "        '(-E --conflict-exit-code)'{-E+,--conflict-exit-code=}'[exit code when the lock is busy]:code:(75 1)' \\\n"
    "        '--lost-exit-code=[exit code when the lock is lost]:code:(76)' \\\n"
    "        '(-s --lost-signal)'{-s+,--lost-signal=}'[signal when the lock is lost]:signal:(TERM INT HUP QUIT KILL USR1 USR2)' \\\n"
    "        \"(-k --kill-after)\"{-k+,--kill-after=}\"[then SIGKILL after]:$dur\" \\\n"
    "        \"--node-timeout=[per-node reply deadline]:$dur\" \\\n"
    "        '--fencing[mint a fencing token]' \\\n"
    "        '--wake[while waiting, listen for releases]' \\\n"
    "        '--no-wake[while waiting, poll only (the default)]' \\\n"
    "        '--fair[the lock goes to the longest waiter]' \\\n"
    "        '--limit=[a semaphore: one of N permits]:permits: ' \\\n"
    "        '(-v --verbose)'{-v,--verbose}'[log on stderr]' \\\n"
    "        '(-c --command)'{-c+,--command=}'[shell command to run]:shell command: ' \\\n"
    "        '(-o --close)'{-o,--close}'[flock compatibility, no effect]' \\\n"
    "        '(-x --exclusive)'{-x,--exclusive}'[flock compatibility, no effect]' \\\n"
    "        '1:resource: ' \\\n"
    "        '*::command:_normal' && ret=0\n"
    "      ;;\n"
    "    status)\n"
    "      _arguments -S $common \\\n"
    "        \"--timeout=[connect and reply deadline]:$dur\" \\\n"
    "        '--json[print JSON]' \\\n"
    "        '1:resource: ' && ret=0\n"
    "      ;;\n"
    "    doctor)\n"
    "      _arguments -S $common \\\n"
    "        \"--ttl=[the longest lock TTL in use]:$dur\" \\\n"
    "        \"--timeout=[connect and reply deadline]:$dur\" \\\n"
    "        \"--clock-probe=[clock probe length, 0 skips]:$dur\" \\\n"
    "        '--json[print JSON]' && ret=0\n"
    "      ;;\n"
    "    completion)\n"
    "      _arguments '1:shell:(bash zsh)' && ret=0\n"
    "      ;;\n"
    "    esac\n"
    "    ;;\n"
    "  esac\n"
    "  return ret\n"
    "}\n"
    "\n"
    "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
    "  _redlock \"$@\"\n"
    "else\n"
    "  compdef _redlock redlock\n"
    "fi\n";

static void help(void)
{
    fputs("usage: redlock completion bash|zsh\n"
          "\n"
          "Prints a completion script for the shell: subcommands, options, and the --nodes\n"
          "URL forms (redis://, rediss://, unix:// with socket paths).\n"
          "\n"
          "  bash: source <(redlock completion bash)\n"
          "        or: redlock completion bash > /usr/share/bash-completion/completions/redlock\n"
          "  zsh:  source <(redlock completion zsh)   (after compinit)\n"
          "        or: redlock completion zsh > \"${fpath[1]}/_redlock\"\n"
          "\n"
          "exit codes: 0 printed; 2 usage error.\n",
          stdout);
}

int cli_completion(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        help();
        return 0;
    }
    if (argc < 2)
        return cli_usage(CMD, "missing SHELL (bash or zsh)");
    if (argc > 2)
        return cli_usage(CMD, "one SHELL only ('%s' is extra)", argv[2]);
    if (!strcmp(argv[1], "bash"))
        fputs(bash_script, stdout);
    else if (!strcmp(argv[1], "zsh"))
        fputs(zsh_script, stdout);
    else
        return cli_usage(CMD, "unknown shell '%s' (bash or zsh)", argv[1]);
    return 0;
}
