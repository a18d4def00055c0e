import os

import matplotlib

matplotlib.use("Agg")
os.environ.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 2))
