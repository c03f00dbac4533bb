"""What a worker process does beside the data: memory given back, progress lines."""

from .memory import give_back_memory, release_arrow_memory
from .progress import WORKER_ENV, Progress, Ticker

__all__ = ["WORKER_ENV", "Progress", "Ticker", "give_back_memory", "release_arrow_memory"]
