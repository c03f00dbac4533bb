"""What a worker process does beside the data: memory given back, progress lines, values given at a bundle's end."""

from .memory import give_back_memory, release_arrow_memory
from .progress import WORKER_ENV, Progress, Ticker
from .windows import in_global_window

__all__ = ["WORKER_ENV", "Progress", "Ticker", "give_back_memory", "in_global_window", "release_arrow_memory"]
