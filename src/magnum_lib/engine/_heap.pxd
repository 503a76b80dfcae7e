# The compiled event heap for Python: EventHeap wraps base/_heap.pxd's struct (the heap
# operations live there, shared by every kernel).
from magnum_lib.base._heap cimport (Heap, HeapEntry, heap_before, heap_peek, heap_pop,  # noqa: F401 (_heap.pyx)
                                    heap_push, heap_replace, heap_sift_down)


cdef class EventHeap:
    cdef Heap heap
