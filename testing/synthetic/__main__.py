import sys

from testing.synthetic import main

sys.exit(main())
