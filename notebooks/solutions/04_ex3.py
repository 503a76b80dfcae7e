def cheapest_or_give_up(finish_s, cost, arrival_s, sla_s):
    """Cheapest device that meets the SLA; a lost cause goes to the cheapest device instead
    of the fastest, so it does not delay the requests that can still make it."""
    meets = finish_s - arrival_s <= sla_s
    if meets.any():
        return int(np.argmin(np.where(meets, cost, np.inf)))
    return int(np.argmin(cost))


ex3_policy = cheapest_or_give_up
