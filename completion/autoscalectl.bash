# bash completion for autoscalectl(1)

_autoscalectl_groups()
{
    local sock=$1
    autoscalectl ${sock:+-s "$sock"} --json status 2>/dev/null |
        sed -n 's/^[[:space:]]*"name":[[:space:]]*"\([^"]*\)".*/\1/p'
}

_autoscalectl()
{
    local cur prev words cword
    _init_completion || return

    local commands="status show explain history forecast members pause resume pin unpin dry-run reload cluster"
    local options="-s --socket -j --json --no-legend -h --help --version"
    local sock="" cmd="" i nargs=0

    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
        -s | --socket) sock=${words[i + 1]}; ((i++)) ;;
        --for | --until) ((i++)) ;;
        -*) ;;
        *) if [[ -z $cmd ]]; then cmd=${words[i]}; else ((nargs++)); fi ;;
        esac
    done

    case $prev in
    -s | --socket) _filedir; return ;;
    --for | --until) return ;;
    esac

    if [[ $cur == -* ]]; then
        case $cmd in
        pause) options+=" --for --until" ;;
        pin) options+=" --for --until --force" ;;
        esac
        COMPREPLY=($(compgen -W "$options" -- "$cur"))
        return
    fi
    if [[ -z $cmd ]]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return
    fi
    case $cmd in
    show | explain | history | forecast | members | pause | resume | pin | unpin | dry-run)
        if ((nargs == 0)); then
            COMPREPLY=($(compgen -W "$(_autoscalectl_groups "$sock")" -- "$cur"))
        elif [[ $cmd == dry-run ]] && ((nargs == 1)); then
            COMPREPLY=($(compgen -W "on off" -- "$cur"))
        fi
        ;;
    esac
}
complete -F _autoscalectl autoscalectl
