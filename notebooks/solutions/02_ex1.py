def fixed_score(demand, free, capacity, bandwidth_gbps, comm_gb):
    """Devices left free + milliseconds of traffic per step; inf where the job does not fit."""
    demand = np.asarray(demand, dtype=float)
    free = np.asarray(free, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        traffic_ms = 1000.0 * np.asarray(comm_gb, dtype=float) / np.asarray(bandwidth_gbps, dtype=float)
    # The article's two mistakes, fixed: pack only where the job fits (free - demand >= 0,
    # smallest wins) and divide by the bandwidth instead of multiplying by it.
    return np.where(free >= demand, (free - demand) + traffic_ms, np.inf)


ex1_score = fixed_score
