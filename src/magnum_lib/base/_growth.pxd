# Growing a C array, once for every kernel: `grow_array` resizes a malloc'ed array in a
# nogil loop and reports running out of memory (or a size that overflows) as -1 with the
# array untouched, so the caller can unwind to where it holds the GIL and call
# `no_memory`, which raises one clean MemoryError naming what ran out. (The readable
# twins grow Python lists, which need no such code.)
from libc.stdlib cimport realloc


cdef inline int grow_array(void** data, Py_ssize_t count, size_t item) noexcept nogil:
    # Resize *data to `count` items of `item` bytes: 0, or -1 (then *data is unchanged).
    cdef void* bigger
    if count < 0 or <size_t> count > (<size_t> -1) // item:
        return -1
    bigger = realloc(data[0], <size_t> count * item)
    if bigger == NULL:
        return -1
    data[0] = bigger
    return 0


cdef inline int no_memory(str what) except -1:
    # The one error a kernel raises when an allocation fails.
    raise MemoryError(f"{what}: out of memory")
