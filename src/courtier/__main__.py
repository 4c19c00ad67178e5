import sys

from courtier.cli import main

sys.exit(main())
