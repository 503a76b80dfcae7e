# Shared C types for every Cython fast path (see docs/ARCHITECTURE.md).
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t, uint8_t

# Simulated time: integer nanoseconds, so both backends do exact integer arithmetic.
ctypedef int64_t time_ns
ctypedef double float64_t
ctypedef Py_ssize_t intp_t
