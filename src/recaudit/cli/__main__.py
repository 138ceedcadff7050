import sys

from recaudit.cli import main

sys.exit(main())
