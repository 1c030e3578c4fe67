"""PySpark jobs: the only package in the project that imports pyspark.

PySpark 4.3 warns about pandas 3 when its SQL modules load; the jobs here move
data through Arrow and never through pandas, so that warning is silenced
before the first pyspark import.
"""

import warnings

warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
