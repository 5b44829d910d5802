"""Runs a command under an address-space limit and reports its peak resident memory.

    python3 peak_rss.py LIMIT_BYTES [--until-stdin-closes] -- COMMAND ARGS...

The child inherits standard output and error. With --until-stdin-closes the child
(a server) runs until this script's standard input closes, then gets SIGTERM. The
last line printed is `PEAK {"code": N, "maxrss_kib": N}`: the child's exit code
(negative for a signal) and its peak resident set size (getrusage, RUSAGE_CHILDREN).
Used by harness/tests/memory.rs; standard library only.
"""

import json
import resource
import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    limit = int(args.pop(0))
    until_stdin = False
    if args and args[0] == "--until-stdin-closes":
        until_stdin = True
        args.pop(0)
    if args and args[0] == "--":
        args.pop(0)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    child = subprocess.Popen(args, preexec_fn=limited, stdin=subprocess.DEVNULL)
    if until_stdin:
        sys.stdin.read()
        child.terminate()
    try:
        code = child.wait(timeout=300)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait()
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    sys.stdout.flush()
    print("PEAK " + json.dumps({"code": code, "maxrss_kib": peak}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
