"""`python -m shootout ...`: the same as the `shootout` command."""

import sys

from shootout.cli import main

sys.exit(main())
