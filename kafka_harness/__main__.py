import sys

from kafka_harness.cli import main

sys.exit(main())
