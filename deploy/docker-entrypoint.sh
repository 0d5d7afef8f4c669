#!/bin/sh
# The image's entry point: trisque-server with /etc/trisque/disque.conf, then
# one --directive per TRISQUE_<DIRECTIVE> environment variable (underscores
# become dashes: TRISQUE_CLUSTER_NODE_TIMEOUT=2000 is --cluster-node-timeout
# 2000), then the container's arguments. Later ones win.
#
# A variable's value is split at blanks, as a config line's words are
# (TRISQUE_CLUSTER_JOIN="node2:7711 node3:7711" joins both); a value that
# holds blanks belongs in the mounted config file.
set -eu
set -f  # split values, never glob them

case "${1:-}" in
    --help | -h | --version | -v | --check-aof) exec trisque-server "$@" ;;
    -* | "") ;;  # directives for the node
    *) exec "$@" ;;  # another program: docker run -it trisque sh
esac

env_directives=""
for variable in $(env | sed -n 's/^\(TRISQUE_[A-Z0-9_]*\)=.*/\1/p' | sort -u); do
    eval "value=\${$variable}"
    directive=$(printf '%s' "${variable#TRISQUE_}" | tr 'A-Z_' 'a-z-')
    env_directives="$env_directives --$directive $value"
done

# shellcheck disable=SC2086  # word splitting of the directives is wanted
exec trisque-server /etc/trisque/disque.conf $env_directives "$@"
