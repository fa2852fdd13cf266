"""The long fuzz run, by hand: every property of tests/support/fuzzing.py on fresh random cases.

    .venv/bin/python -m tests.support.fuzz_long --cases 20000            # each property
    .venv/bin/python -m tests.support.fuzz_long --cases 5000 --only session codec

Exits 1 with hypothesis's minimal failing case (and a ``@reproduce_failure`` blob) when a
property fails; prints the examples and inputs each ran.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from tests.support.fuzzing import CASES, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fuzz_long", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=20_000,
                        help="hypothesis examples per property (default 20000)")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), metavar="PROPERTY",
                        help=f"only these properties ({', '.join(sorted(CASES))})")
    parser.add_argument("--derandomize", action="store_true",
                        help="the same cases as the test run's, not fresh ones")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error("--cases must be >= 1")
    total = 0
    for name in args.only or list(CASES):
        began = time.perf_counter()
        try:
            examples, inputs = run(name, args.cases, derandomize=args.derandomize)
        except Exception as exc:  # the falsifying example is in the exception's notes
            print(f"{name}: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
            return 1
        total += inputs
        print(f"{name}: {examples} examples, {inputs} inputs, "
              f"{time.perf_counter() - began:.1f} s", flush=True)
    print(f"all properties hold: {total} inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
