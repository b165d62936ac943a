import sys

from gpuwork.cli import main

sys.exit(main())
