"""``python -m bench``: run the side-by-side benchmark (see ``bench/README.md``)."""

import sys

from bench.cli import main

sys.exit(main())
