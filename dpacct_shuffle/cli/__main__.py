"""``python -m dpacct_shuffle.cli`` runs the ``dpacct-shuffle`` program."""

import sys

from dpacct_shuffle.cli.app import main

sys.exit(main())
