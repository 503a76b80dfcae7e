"""``python -m magnum_lib`` runs the ``faux-magnum`` command."""
import sys

from magnum_lib.cli import main

sys.exit(main())
