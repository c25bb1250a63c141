# Usage: expect-exit.sh N command [args...]
# Runs the command and succeeds only if it exits with status N.
want=$1
shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-exit: '$*' exited with $got, expected $want" >&2
  exit 1
fi
exit 0
