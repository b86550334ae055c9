# bash completion for the mpx command line (installed as
# share/bash-completion/completions/mpx): options, scripts (.mpx), and for
# `mpx merge` the JSON shards. Commands inside mpx complete at its prompt.
_mpx() {
  local cur prev
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  if [ "${COMP_WORDS[1]}" = merge ]; then
    case $prev in
      --plot) COMPREPLY=($(compgen -f -X '!*.svg' -- "$cur")); compopt -o plusdirs 2>/dev/null; return ;;
    esac
    if [[ $cur == -* ]]; then
      COMPREPLY=($(compgen -W '--json --csv --plot' -- "$cur"))
    else
      COMPREPLY=($(compgen -f -X '!*.json' -- "$cur")); compopt -o plusdirs 2>/dev/null
    fi
    return
  fi
  case $prev in
    -c|--command) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W '-c --command -i --interactive -q --quiet -h --help -V --version' -- "$cur"))
  elif [ "$COMP_CWORD" = 1 ]; then
    COMPREPLY=($(compgen -W 'merge' -- "$cur") $(compgen -f -X '!*.mpx' -- "$cur")); compopt -o plusdirs 2>/dev/null
  else
    COMPREPLY=($(compgen -f -X '!*.mpx' -- "$cur")); compopt -o plusdirs 2>/dev/null
  fi
}
complete -F _mpx mpx
