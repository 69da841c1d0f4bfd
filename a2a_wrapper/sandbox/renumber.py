"""Runs in the backend's container between the sidecar and a command given descriptors: each descriptor moved to
the number the wrapper's side gave it (the number the command's arguments name), then the command in its place.

Only the standard library: it runs with `python -I -S`, before and apart from the wrapper's packages.
usage: renumber.py HAVE:WANT[,HAVE:WANT...] -- COMMAND...
"""

import fcntl
import os
import sys

_ABOVE = 256  # where descriptors wait while others move: above any the sidecar passes or the command names


def main() -> None:
    pairs, separator, *argv = sys.argv[1:]
    assert separator == "--" and argv, __doc__
    moves = [tuple(int(number) for number in pair.split(":")) for pair in pairs.split(",")]
    # First out of the way of every target, then each to its target: no move overwrites one still to come.
    parked = [(fcntl.fcntl(have, fcntl.F_DUPFD, _ABOVE), want) for have, want in moves]
    for have, _ in moves:
        os.close(have)
    for held, want in parked:
        os.dup2(held, want)  # inheritable by default
        os.close(held)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main()
