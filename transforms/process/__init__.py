"""What a worker process does beside the data: the collector's setting, memory given back, progress lines."""

from .memory import give_back_memory, leave_huge_pages_off, release_arrow_memory
from .progress import WORKER_ENV, Progress, Ticker
from .worker_gc import tune_gc

__all__ = ["WORKER_ENV", "Progress", "Ticker", "give_back_memory", "leave_huge_pages_off", "release_arrow_memory", "tune_gc"]
