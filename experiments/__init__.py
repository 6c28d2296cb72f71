"""Command-line launchers and benchmarks, run as ``python -m experiments.NAME``.

Nothing in the libraries imports this package. Run as a launcher (``sys.argv[0]`` is ``-m``
while ``python -m`` imports the package), the process first restarts itself once with glibc
malloc tunables set: see ``experiments.host_malloc``.
"""

import sys

if sys.argv[:1] == ["-m"]:
    from experiments.host_malloc import restart_with_tunables

    restart_with_tunables()
