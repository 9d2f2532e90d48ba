"""``python -m satchel`` is the ``satchel`` command."""

import sys

from .cli import main

sys.exit(main())
