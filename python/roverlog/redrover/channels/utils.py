"""Stream helpers of upstream `roverd.channels.utils`, under the same names: `Data` (what a
channel writes: an array, checked against the channel's type and shape, or bytes written as
they are), `ExceptionSentinel` (a producer's exception travelling down a queue),
`ReadableQueue` (anything with `get` and `empty`), `Streamable`, `Buffer` (a queue read as an
iterator, ended by `None`), `Prefetch` (an iterator read ahead by a daemon thread) and
`batch_iterator` (lists of `size` items)."""
import queue
import threading
from dataclasses import dataclass
from typing import Iterable, Iterator, Protocol, TypeVar, Union, runtime_checkable

import numpy as np

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Data = Union[np.ndarray, bytes, bytearray]


@dataclass
class ExceptionSentinel:
    """Put in a stream's queue in place of an item: the reader raises `exception`."""

    exception: Exception


@runtime_checkable
class ReadableQueue(Protocol[T_co]):
    """What `consume` accepts as a queue: `get` and `empty` (a `queue.Queue`, a
    `multiprocessing` queue, a `Prefetch`'s `queue`)."""

    def get(self, block: bool = True, timeout: float = None) -> T_co: ...

    def empty(self) -> bool: ...


Streamable = Union[Iterator[T], Iterable[T], ReadableQueue]


class Buffer(Iterator[T]):
    """A queue as an iterator: items until `None`; an `ExceptionSentinel` raises its
    exception here."""

    def __init__(self, queue):
        self.queue = queue

    def __iter__(self):
        return self

    def __next__(self):
        item = self.queue.get()
        if item is None:
            raise StopIteration
        if isinstance(item, ExceptionSentinel):
            raise item.exception
        return item


class Prefetch(Buffer[T]):
    """`iterator` read ahead into a queue of `size` by a daemon thread; iterate over it, or
    read `.queue` (`None` after the last item). The iterator must not yield `None`."""

    def __init__(self, iterator, size=64):
        super().__init__(queue.Queue(maxsize=size))
        self.iterator = iterator
        threading.Thread(target=self._fill, daemon=True).start()

    def _fill(self):
        try:
            for item in self.iterator:
                self.queue.put(item)
        except Exception as e:  # handed to the reader
            self.queue.put(ExceptionSentinel(e))
            return
        self.queue.put(None)


def batch_iterator(iterator, size=8):
    """Lists of `size` consecutive items (the last one shorter when the items run out)."""
    batch = []
    for item in iterator:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


__all__ = ["Data", "ExceptionSentinel", "ReadableQueue", "Streamable", "Buffer", "Prefetch", "batch_iterator"]
