"""``python -m ecc_lib`` runs the ``ecc-lab`` command line."""

import sys

from ecc_lib.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
