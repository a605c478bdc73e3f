"""`python -m bench [NAMES...]` (`make bench`): print the performance figures."""
import sys

from bench.perf import main

main(sys.argv[1:] or None)
