"""Small synthetic tasks the notebooks train on; each draws fresh, seeded batches.

One module per task; each exposes a generator function and, where a notebook trains on it, a
``make_batch(batch_size, generator)`` suited to ``course_lib.lab.training.train_classifier``.
"""

from .recall import key_value_recall, recall_batches

__all__ = ["key_value_recall", "recall_batches"]
